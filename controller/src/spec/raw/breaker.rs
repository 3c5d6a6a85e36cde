//! The `[breaker]` table as read and its check: the modes compared, the services it applies to, and one breaker
//! config, valid both as written and after dividing by `time_scale`.

use serde::Deserialize;
use toml::Spanned;

use crate::spec::checker::Checker;
use crate::spec::{BreakerMode, BreakerSpec, SERVICE_NAMES, SpecError};
use crate::target::ServiceId;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBreaker {
    pub(super) modes: Spanned<Vec<Spanned<BreakerMode>>>,
    pub(super) services: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) trip: Option<Spanned<breaker::RawTripConfig>>,
    pub(super) open: Option<Spanned<breaker::RawOpenConfig>>,
    pub(super) half_open: Option<Spanned<breaker::RawHalfOpenConfig>>,
}

pub(super) fn breaker(
    check: &Checker<'_>,
    raw: &RawBreaker,
    time_scale: f64,
) -> Result<BreakerSpec, SpecError> {
    if raw.modes.get_ref().is_empty() {
        return Err(check.error("breaker.modes", raw.modes.span(), "must not be empty"));
    }
    let mut modes = Vec::new();
    for (i, mode) in raw.modes.get_ref().iter().enumerate() {
        if modes.contains(mode.get_ref()) {
            return Err(check.error(
                &format!("breaker.modes[{i}]"),
                mode.span(),
                format!("`{}` is listed twice", mode.get_ref().as_str()),
            ));
        }
        modes.push(*mode.get_ref());
    }
    let config = breaker::RawBreakerConfig {
        mode: breaker::Mode::Enforce,
        trip: raw
            .trip
            .as_ref()
            .map(|t| t.get_ref().clone())
            .unwrap_or_default(),
        open: raw
            .open
            .as_ref()
            .map(|o| o.get_ref().clone())
            .unwrap_or_default(),
        half_open: raw
            .half_open
            .as_ref()
            .map(|h| h.get_ref().clone())
            .unwrap_or_default(),
    };
    let section_span = |field: &str| {
        let section = match field.split('.').next() {
            Some("trip") => raw.trip.as_ref().map(Spanned::span),
            Some("open") => raw.open.as_ref().map(Spanned::span),
            Some("half_open") => raw.half_open.as_ref().map(Spanned::span),
            _ => None,
        };
        section.unwrap_or_else(|| raw.modes.span())
    };
    let config = config.build().map_err(|error| {
        check.error(
            &format!("breaker.{}", error.field),
            section_span(&error.field),
            error.message,
        )
    })?;
    if let Err(error) = config.time_scaled(time_scale) {
        return Err(check.error(
            &format!("breaker.{}", error.field),
            section_span(&error.field),
            format!(
                "after dividing by time_scale {time_scale}: {}",
                error.message
            ),
        ));
    }
    let services = match &raw.services {
        None => None,
        Some(services) => Some(breaker_services(check, services)?),
    };
    Ok(BreakerSpec {
        modes,
        services,
        config,
    })
}

/// `breaker.services`: boutique services, each once, at least one.
fn breaker_services(
    check: &Checker<'_>,
    raw: &Spanned<Vec<Spanned<String>>>,
) -> Result<Vec<ServiceId>, SpecError> {
    if raw.get_ref().is_empty() {
        return Err(check.error(
            "breaker.services",
            raw.span(),
            "must not be empty (leave it out for every service)",
        ));
    }
    let mut services: Vec<ServiceId> = Vec::new();
    for (i, service) in raw.get_ref().iter().enumerate() {
        let field = format!("breaker.services[{i}]");
        let name = check.service_id(&field, service)?;
        if !SERVICE_NAMES.contains(&name.as_str()) {
            return Err(check.error(
                &field,
                service.span(),
                format!(
                    "unknown service `{name}`; known: {}",
                    SERVICE_NAMES.join(", ")
                ),
            ));
        }
        if services.contains(&name) {
            return Err(check.error(&field, service.span(), format!("`{name}` is listed twice")));
        }
        services.push(name);
    }
    Ok(services)
}
