//! A container fault as the game-day form and `POST /api/containers` both write it (text fields), checked into
//! the operations' request; every error names the field.

use controller::docker::ContainerAction;
use controller::docker::lease::{MAX_LEASE, MIN_LEASE};
use serde::Deserialize;

use crate::error::AppError;
use crate::operations::ContainerFaultRequest;

/// The game day's form and `POST /api/containers`' body: a field not listed here is an error naming it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerFaultForm {
    /// A replica: `payment`, `checkout#2`.
    container: String,
    /// `pause`, `stop`, `kill`, `restart`, `net_delay`, `net_loss`.
    kind: String,
    /// `kill`'s signal (SIGKILL when empty).
    #[serde(default)]
    signal: String,
    /// `net_delay`'s delay, `200ms`.
    #[serde(default)]
    net_delay: String,
    /// `net_loss`'s percentage, in (0, 100].
    #[serde(default)]
    loss: String,
    pub(crate) lease: String,
    /// The page form's CSRF field (checked before, by the form extractor); the API's body has none.
    #[serde(default)]
    pub(crate) csrf: Option<String>,
}

/// The container fault a form (or `POST /api/container-faults`) describes; errors name the field.
pub fn container_fault_of_form(
    form: &ContainerFaultForm,
) -> Result<ContainerFaultRequest, AppError> {
    let bad = |error: controller::docker::DockerError| AppError::BadRequest(error.to_string());
    let duration = |field: &str, text: &str| {
        agent::api::parse_duration(text.trim())
            .map_err(|error| AppError::BadRequest(format!("{field}: {error}")))
    };
    let container = form.container.trim();
    if container.is_empty() {
        return Err(AppError::BadRequest("container: choose one".into()));
    }
    let lease = duration("lease", &form.lease)?;
    if !(MIN_LEASE..=MAX_LEASE).contains(&lease) {
        return Err(AppError::BadRequest(format!(
            "lease: {} is outside {}..={}",
            humantime::format_duration(lease),
            humantime::format_duration(MIN_LEASE),
            humantime::format_duration(MAX_LEASE)
        )));
    }
    let action = match form.kind.as_str() {
        "net_delay" => {
            ContainerAction::net_delay("net_delay", duration("net_delay", &form.net_delay)?)
                .map_err(bad)?
        }
        "net_loss" => {
            let percent: f64 = form.loss.trim().parse().map_err(|_| {
                AppError::BadRequest(format!("loss: expected a percentage, got `{}`", form.loss))
            })?;
            ContainerAction::net_loss("loss", percent).map_err(bad)?
        }
        "kill" => {
            let signal = Some(form.signal.trim()).filter(|signal| !signal.is_empty());
            ContainerAction::parse("signal", "kill", signal, None).map_err(bad)?
        }
        "pause" | "stop" | "restart" => {
            ContainerAction::parse("kind", &form.kind, None, None).map_err(bad)?
        }
        other => {
            return Err(AppError::BadRequest(format!(
                "kind: `{other}` is not one of pause, stop, kill, restart, net_delay, net_loss"
            )));
        }
    };
    Ok(ContainerFaultRequest {
        replica: container.to_owned(),
        action,
        lease,
    })
}
