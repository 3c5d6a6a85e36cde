//! Container-level faults through the engine and how each is undone.
//!
//! | action | applied as | undone by |
//! |---|---|---|
//! | `pause` | freeze every process (cgroup freezer) | unpause |
//! | `stop` | SIGTERM, SIGKILL after the grace period | start (a swarm task's: nothing, swarm replaces it) |
//! | `kill` | one signal (default SIGKILL) | start, when the signal ended it (a swarm task's: nothing) |
//! | `restart` | stop then start | nothing to undo (the lease only bounds the step) |
//! | `disconnect` | detach from one network: every packet to and from it is lost | reconnect with its aliases |
//! | `net_delay` | `tc netem delay` on its interfaces (see [`super::netem`]) | `tc qdisc del` |
//! | `net_loss` | `tc netem loss` on its interfaces | `tc qdisc del` |

use bollard::container::{KillContainerOptions, StartContainerOptions, StopContainerOptions};
use bollard::models::EndpointSettings;
use bollard::network::{ConnectNetworkOptions, DisconnectNetworkOptions};

use super::{DockerError, Engine};
use crate::actions::ContainerAction;

/// Signals `kill` may send.
pub const SIGNALS: &[&str] = &[
    "SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2",
];
/// Seconds a `stop` (and a `restart`) gives the container before SIGKILL.
const STOP_GRACE_SECS: i64 = 2;

/// The action names, as specs and the game-day form spell them.
pub const ACTION_NAMES: &[&str] = &[
    "pause",
    "stop",
    "kill",
    "restart",
    "disconnect",
    "net_delay",
    "net_loss",
];

impl ContainerAction {
    /// Parses an action by name; `signal` is `kill`'s (default SIGKILL), `network` is `disconnect`'s
    /// (required). Errors name `field`.
    pub fn parse(
        field: &str,
        name: &str,
        signal: Option<&str>,
        network: Option<&str>,
    ) -> Result<ContainerAction, DockerError> {
        let invalid = |message: String| DockerError::Invalid {
            field: field.to_owned(),
            message,
        };
        match name {
            "pause" => Ok(ContainerAction::Pause),
            "stop" => Ok(ContainerAction::Stop),
            "restart" => Ok(ContainerAction::Restart),
            "kill" => {
                let signal = signal.unwrap_or("SIGKILL").trim().to_ascii_uppercase();
                let signal = if signal.starts_with("SIG") {
                    signal
                } else {
                    format!("SIG{signal}")
                };
                if !SIGNALS.contains(&signal.as_str()) {
                    return Err(invalid(format!(
                        "signal `{signal}` is not one of {}",
                        SIGNALS.join(", ")
                    )));
                }
                Ok(ContainerAction::Kill { signal })
            }
            "net_delay" | "net_loss" => Err(invalid(format!(
                "`{name}` takes its delay or loss: use ContainerAction::net_delay or net_loss"
            ))),
            "disconnect" => {
                let network = network
                    .map(str::trim)
                    .filter(|network| !network.is_empty())
                    .ok_or_else(|| {
                        invalid("`disconnect` needs the network to detach from".into())
                    })?;
                Ok(ContainerAction::Disconnect {
                    network: network.to_owned(),
                    aliases: Vec::new(),
                })
            }
            other => Err(invalid(format!(
                "`{other}` is not a container fault (one of {})",
                ACTION_NAMES.join(", ")
            ))),
        }
    }

    /// A `net_delay` of `delay` (in (0, 60 s]); the error names `field`.
    pub fn net_delay(field: &str, delay: std::time::Duration) -> Result<Self, DockerError> {
        let delay = super::netem::checked_delay(field, delay)?;
        Ok(ContainerAction::NetDelay {
            delay_ms: delay.as_millis() as u64,
        })
    }

    /// A `net_loss` of `percent` (in (0, 100]); the error names `field`.
    pub fn net_loss(field: &str, percent: f64) -> Result<Self, DockerError> {
        Ok(ContainerAction::NetLoss {
            percent: super::netem::checked_loss(field, percent)?,
        })
    }
}

/// Whether an engine error says the container is already in the state an undo wants (not paused, already
/// running, already connected): the undo then has nothing left to do.
fn already_done(error: &bollard::errors::Error) -> bool {
    matches!(
        error,
        bollard::errors::Error::DockerResponseServerError { status_code, message }
            if *status_code == 304
                || (*status_code == 409 && message.contains("not paused"))
                || (*status_code == 403 && message.contains("already exists"))
    )
}

impl Engine {
    /// The action as it must be recorded for its undo, before it is applied: a `disconnect` gets the
    /// aliases the container has on that network (an error when it is not on it).
    pub async fn prepare(
        &self,
        container: &str,
        action: &ContainerAction,
    ) -> Result<ContainerAction, DockerError> {
        let ContainerAction::Disconnect { network, .. } = action else {
            return Ok(action.clone());
        };
        let inspected = self
            .docker
            .inspect_container(container, None)
            .await
            .map_err(|source| self.failed("inspect", container, source))?;
        let aliases = inspected
            .network_settings
            .and_then(|settings| settings.networks)
            .and_then(|mut networks| networks.remove(network))
            .ok_or_else(|| DockerError::Invalid {
                field: "network".into(),
                message: format!("container {container} is not on network `{network}`"),
            })?
            .aliases
            .unwrap_or_default();
        Ok(ContainerAction::Disconnect {
            network: network.clone(),
            aliases,
        })
    }

    /// Applies `action` to `container` (an id or name).
    pub async fn apply(
        &self,
        container: &str,
        action: &ContainerAction,
    ) -> Result<(), DockerError> {
        let docker = &self.docker;
        match action {
            ContainerAction::Pause => docker
                .pause_container(container)
                .await
                .map_err(|source| self.failed("pause", container, source))?,
            ContainerAction::Stop => docker
                .stop_container(container, Some(StopContainerOptions { t: STOP_GRACE_SECS }))
                .await
                .map_err(|source| self.failed("stop", container, source))?,
            ContainerAction::Kill { signal } => docker
                .kill_container(
                    container,
                    Some(KillContainerOptions {
                        signal: signal.as_str(),
                    }),
                )
                .await
                .map_err(|source| self.failed("kill", container, source))?,
            ContainerAction::Restart => docker
                .restart_container(
                    container,
                    Some(bollard::container::RestartContainerOptions {
                        t: STOP_GRACE_SECS as isize,
                    }),
                )
                .await
                .map_err(|source| self.failed("restart", container, source))?,
            ContainerAction::Disconnect { network, .. } => docker
                .disconnect_network(
                    network,
                    DisconnectNetworkOptions {
                        container,
                        force: true,
                    },
                )
                .await
                .map_err(|source| self.failed("disconnect", container, source))?,
            ContainerAction::NetDelay { delay_ms } => {
                let delay = std::time::Duration::from_millis(*delay_ms);
                self.apply_netem(container, &super::netem::netem_args(Some(delay), None))
                    .await?
            }
            ContainerAction::NetLoss { percent } => {
                self.apply_netem(container, &super::netem::netem_args(None, Some(*percent)))
                    .await?
            }
        }
        Ok(())
    }

    /// Undoes `action` on `container`; a container already back in its state counts as undone.
    pub async fn undo(&self, container: &str, action: &ContainerAction) -> Result<(), DockerError> {
        if matches!(
            action,
            ContainerAction::NetDelay { .. } | ContainerAction::NetLoss { .. }
        ) {
            return self.undo_netem(container).await;
        }
        let docker = &self.docker;
        let result = match action {
            ContainerAction::Pause => docker.unpause_container(container).await,
            // A swarm task's container is not started again: its orchestrator has put a new task in its slot.
            ContainerAction::Stop | ContainerAction::Kill { .. }
                if self.is_swarm_task(container).await? =>
            {
                Ok(())
            }
            ContainerAction::Stop | ContainerAction::Kill { .. } => {
                docker
                    .start_container(container, None::<StartContainerOptions<String>>)
                    .await
            }
            ContainerAction::Restart
            | ContainerAction::NetDelay { .. }
            | ContainerAction::NetLoss { .. } => Ok(()),
            ContainerAction::Disconnect { network, aliases } => {
                docker
                    .connect_network(
                        network,
                        ConnectNetworkOptions {
                            container,
                            endpoint_config: EndpointSettings {
                                aliases: Some(aliases.clone()),
                                ..EndpointSettings::default()
                            },
                        },
                    )
                    .await
            }
        };
        match result {
            Ok(()) => Ok(()),
            Err(error) if already_done(&error) => Ok(()),
            Err(source) => Err(self.failed("undo", container, source)),
        }
    }
}
