//! Network delay and partial loss inside one container: `tc qdisc replace dev ethN root netem …` run in the
//! container's own network namespace through the engine's exec API, undone by `tc qdisc del dev ethN root`.
//!
//! The engine has no API for this, and no helper image can be pulled, so the image carries `tc` itself
//! (`scripts/images` copies it with the libraries it loads) and the container needs the `NET_ADMIN`
//! capability (`cap_add` in `docker-compose.yml`). `tc` runs as root inside the container (the exec's user):
//! the service itself keeps running unprivileged. Three things can be missing, each said with the container's
//! name: the capability, `tc` in the image, and the kernel's `netem` queueing discipline (`sch_netem`; some
//! minimal VM kernels are built without it).
//!
//! Every interface but loopback is shaped: a container on two networks gets the fault on both.

use std::time::Duration;

use bollard::exec::{CreateExecOptions, StartExecResults};
use futures::StreamExt;

use super::{DockerError, Engine};

/// Where `scripts/images` puts `tc` in the image.
pub const TC_PATH: &str = "/usr/sbin/tc";
/// Longest delay a `net_delay` may add.
pub const MAX_NET_DELAY: Duration = Duration::from_secs(60);
/// Longest a `tc` call inside a container may take.
const TC_TIMEOUT: Duration = Duration::from_secs(10);
/// Most bytes of `tc`'s output kept for an error message.
const TC_OUTPUT_LIMIT: usize = 2_000;

/// Checks a `net_delay`: above zero, at most [`MAX_NET_DELAY`]; the error names `field`.
pub fn checked_delay(field: &str, delay: Duration) -> Result<Duration, DockerError> {
    if delay.is_zero() || delay > MAX_NET_DELAY {
        return Err(DockerError::Invalid {
            field: field.to_owned(),
            message: format!(
                "{} is outside (0, {}]",
                humantime::format_duration(delay),
                humantime::format_duration(MAX_NET_DELAY)
            ),
        });
    }
    Ok(delay)
}

/// Checks a `net_loss` percentage: in (0, 100]; the error names `field`.
pub fn checked_loss(field: &str, percent: f64) -> Result<f64, DockerError> {
    if !(percent > 0.0 && percent <= 100.0) {
        return Err(DockerError::Invalid {
            field: field.to_owned(),
            message: format!("{percent} % is outside (0, 100] %"),
        });
    }
    Ok(percent)
}

/// The `netem` arguments of a delay in milliseconds and a loss in percent (either may be absent).
pub fn netem_args(delay: Option<Duration>, loss_percent: Option<f64>) -> Vec<String> {
    let mut args = vec!["netem".to_owned()];
    if let Some(delay) = delay {
        args.extend(["delay".to_owned(), format!("{}ms", delay.as_millis())]);
    }
    if let Some(percent) = loss_percent {
        args.extend(["loss".to_owned(), format!("{percent}%")]);
    }
    args
}

/// What `tc` said, as an error naming the container and what is missing when that can be told.
fn tc_refused(container: &str, output: &str) -> DockerError {
    let message = if output.contains("qdisc kind is unknown") {
        "the host's kernel has no `netem` queueing discipline (sch_netem): network delay and loss are not \
         possible on this engine"
            .to_owned()
    } else if output
        .to_ascii_lowercase()
        .contains("operation not permitted")
    {
        // tc's own "RTNETLINK answers: Operation not permitted", or the runtime's "exec /usr/sbin/tc: operation
        // not permitted" when tc's file capability is outside the container's bounding set.
        "network faults need the NET_ADMIN capability (cap_add: [NET_ADMIN] in docker-compose.yml)"
            .to_owned()
    } else {
        format!("tc failed: {}", output.trim())
    };
    DockerError::Unsupported {
        container: container.to_owned(),
        message,
    }
}

/// Whether an undo's `tc qdisc del` found nothing to delete (the fault is gone already).
pub(crate) fn nothing_to_delete(output: &str) -> bool {
    output.contains("No such file or directory")
        || output.contains("Cannot delete qdisc with handle of zero")
        || output.contains("Cannot find device")
}

/// A running container's name and the interfaces a network fault shapes.
struct Shaped {
    name: String,
    interfaces: Vec<String>,
}

impl Engine {
    /// The container's network interfaces (`eth0`, `eth1`, … one per network), after checking that it runs
    /// and has NET_ADMIN.
    async fn shaped(&self, container: &str) -> Result<Shaped, DockerError> {
        let inspected = self
            .docker
            .inspect_container(container, None)
            .await
            .map_err(|source| self.failed("inspect", container, source))?;
        let name = inspected
            .name
            .as_deref()
            .map(|name| name.trim_start_matches('/').to_owned())
            .unwrap_or_else(|| container.to_owned());
        let host = inspected.host_config.unwrap_or_default();
        let capable = host.privileged.unwrap_or(false)
            || host.cap_add.unwrap_or_default().iter().any(|cap| {
                matches!(
                    cap.to_ascii_uppercase().as_str(),
                    "NET_ADMIN" | "CAP_NET_ADMIN" | "ALL"
                )
            });
        if !capable {
            return Err(DockerError::Unsupported {
                container: name,
                message: "network faults need the NET_ADMIN capability (cap_add: [NET_ADMIN] in \
                          docker-compose.yml)"
                    .into(),
            });
        }
        let networks = inspected
            .network_settings
            .and_then(|settings| settings.networks)
            .map_or(0, |networks| networks.len());
        Ok(Shaped {
            name,
            interfaces: (0..networks.max(1)).map(|n| format!("eth{n}")).collect(),
        })
    }

    /// Runs `tc ARGS` as root in `container`; returns its exit code and output (stdout and stderr).
    async fn tc(&self, container: &str, args: &[String]) -> Result<(i64, String), DockerError> {
        let mut cmd = vec![TC_PATH.to_owned()];
        cmd.extend(args.iter().cloned());
        let exec = self
            .docker
            .create_exec(
                container,
                CreateExecOptions {
                    cmd: Some(cmd),
                    user: Some("0".to_owned()),
                    attach_stdout: Some(true),
                    attach_stderr: Some(true),
                    ..CreateExecOptions::default()
                },
            )
            .await
            .map_err(|source| self.failed("exec tc in", container, source))?;
        let mut output = String::new();
        let run = async {
            if let StartExecResults::Attached {
                output: mut stream, ..
            } = self
                .docker
                .start_exec(&exec.id, None)
                .await
                .map_err(|source| self.failed("exec tc in", container, source))?
            {
                while let Some(chunk) = stream.next().await {
                    let chunk =
                        chunk.map_err(|source| self.failed("exec tc in", container, source))?;
                    if output.len() < TC_OUTPUT_LIMIT {
                        output.push_str(&String::from_utf8_lossy(&chunk.into_bytes()));
                    }
                }
            }
            Ok::<(), DockerError>(())
        };
        tokio::time::timeout(TC_TIMEOUT, run)
            .await
            .map_err(|_| DockerError::Unsupported {
                container: container.to_owned(),
                message: format!("tc did not finish within {} s", TC_TIMEOUT.as_secs()),
            })??;
        let inspected = self
            .docker
            .inspect_exec(&exec.id)
            .await
            .map_err(|source| self.failed("exec tc in", container, source))?;
        Ok((inspected.exit_code.unwrap_or(-1), output))
    }

    /// Puts `netem` (see [`netem_args`]) on every interface of `container`.
    pub(super) async fn apply_netem(
        &self,
        container: &str,
        netem: &[String],
    ) -> Result<(), DockerError> {
        let shaped = self.shaped(container).await?;
        for interface in &shaped.interfaces {
            let mut args: Vec<String> = ["qdisc", "replace", "dev", interface, "root"]
                .map(str::to_owned)
                .to_vec();
            args.extend(netem.iter().cloned());
            let (code, output) = self
                .tc(container, &args)
                .await
                .map_err(|error| match &error {
                    DockerError::Engine { source, .. }
                        if source.to_string().contains("executable file not found")
                            || source.to_string().contains("no such file") =>
                    {
                        DockerError::Unsupported {
                            container: shaped.name.clone(),
                            message: format!(
                                "its image has no {TC_PATH} (rebuild it with `bash scripts/images`)"
                            ),
                        }
                    }
                    _ => error,
                })?;
            if code != 0 {
                // What was put on an earlier interface is taken off again.
                let _ = self.undo_netem(container).await;
                return Err(tc_refused(&shaped.name, &output));
            }
        }
        Ok(())
    }

    /// Takes `netem` off every interface of `container`; a container that is not running (its namespace
    /// went with it) or has no `netem` left counts as undone.
    pub(super) async fn undo_netem(&self, container: &str) -> Result<(), DockerError> {
        let shaped = match self.shaped(container).await {
            Ok(shaped) => shaped,
            Err(DockerError::Unsupported { .. }) => return Ok(()),
            Err(error) => return Err(error),
        };
        for interface in &shaped.interfaces {
            let args = ["qdisc", "del", "dev", interface, "root"].map(str::to_owned);
            match self.tc(container, &args).await {
                Ok((0, _)) => {}
                Ok((_, output)) if nothing_to_delete(&output) => {}
                Ok((_, output)) => return Err(tc_refused(&shaped.name, &output)),
                Err(DockerError::Engine { source, .. })
                    if source.to_string().contains("is not running")
                        || source.to_string().contains("is paused") =>
                {
                    return Ok(());
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_and_losses_outside_their_bounds_are_refused_naming_the_field() {
        assert!(checked_delay("delay", Duration::from_millis(200)).is_ok());
        assert!(checked_delay("delay", MAX_NET_DELAY).is_ok());
        for delay in [Duration::ZERO, MAX_NET_DELAY + Duration::from_millis(1)] {
            let error = checked_delay("delay", delay).unwrap_err().to_string();
            assert!(error.starts_with("delay: "), "{error}");
        }
        assert!(checked_loss("loss", 100.0).is_ok());
        assert!(checked_loss("loss", 0.5).is_ok());
        for percent in [0.0, -1.0, 100.1, f64::NAN] {
            let error = checked_loss("loss", percent).unwrap_err().to_string();
            assert!(error.starts_with("loss: "), "{error}");
        }
    }

    #[test]
    fn netem_arguments_carry_the_delay_in_milliseconds_and_the_loss_in_percent() {
        assert_eq!(
            netem_args(Some(Duration::from_millis(250)), None),
            ["netem", "delay", "250ms"]
        );
        assert_eq!(netem_args(None, Some(12.5)), ["netem", "loss", "12.5%"]);
    }

    #[test]
    fn what_tc_says_is_told_as_what_is_missing() {
        let kernel = tc_refused(
            "shop_payment_1",
            "Error: Specified qdisc kind is unknown.\n",
        );
        assert!(kernel.to_string().contains("shop_payment_1"));
        assert!(kernel.to_string().contains("sch_netem"), "{kernel}");
        let capability = tc_refused(
            "shop_payment_1",
            "RTNETLINK answers: Operation not permitted",
        );
        assert!(capability.to_string().contains("NET_ADMIN"), "{capability}");
        let runtime = tc_refused(
            "shop_payment_1",
            "exec /usr/sbin/tc: operation not permitted",
        );
        assert!(runtime.to_string().contains("NET_ADMIN"), "{runtime}");
        assert!(nothing_to_delete(
            "Error: Cannot delete qdisc with handle of zero."
        ));
        assert!(!nothing_to_delete(
            "RTNETLINK answers: Operation not permitted"
        ));
    }
}
