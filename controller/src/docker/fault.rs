//! Container-level faults through the engine and how each is undone.
//!
//! | action | applied as | undone by |
//! |---|---|---|
//! | `pause` | freeze every process (cgroup freezer) | unpause |
//! | `stop` | SIGTERM, SIGKILL after the grace period | start |
//! | `kill` | one signal (default SIGKILL) | start, when the signal ended it |
//! | `restart` | stop then start | nothing to undo (the lease only bounds the step) |
//! | `disconnect` | detach from one network: every packet to and from it is lost | reconnect with its aliases |
//!
//! Network delay or partial loss would need `tc netem` inside the container's network namespace: the engine
//! has no API for it, the images hold no `tc`, and a helper image cannot be pulled. So the only network fault
//! offered is total loss on one network (`disconnect`).

use bollard::container::{KillContainerOptions, StartContainerOptions, StopContainerOptions};
use bollard::models::EndpointSettings;
use bollard::network::{ConnectNetworkOptions, DisconnectNetworkOptions};
use serde::{Deserialize, Serialize};

use super::{DockerError, Engine};

/// Signals `kill` may send.
pub const SIGNALS: &[&str] = &[
    "SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2",
];
/// Seconds a `stop` (and a `restart`) gives the container before SIGKILL.
const STOP_GRACE_SECS: i64 = 2;

/// One container-level fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "lowercase")]
pub enum ContainerAction {
    Pause,
    Stop,
    Kill {
        signal: String,
    },
    Restart,
    Disconnect {
        network: String,
        /// The container's DNS aliases on that network, recorded before it is detached so the reconnect
        /// restores them (filled in by [`Engine::prepare`]).
        #[serde(default)]
        aliases: Vec<String>,
    },
}

/// The action names, as specs and the game-day form spell them.
pub const ACTION_NAMES: &[&str] = &["pause", "stop", "kill", "restart", "disconnect"];

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

    pub fn name(&self) -> &'static str {
        match self {
            ContainerAction::Pause => "pause",
            ContainerAction::Stop => "stop",
            ContainerAction::Kill { .. } => "kill",
            ContainerAction::Restart => "restart",
            ContainerAction::Disconnect { .. } => "disconnect",
        }
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
        }
        Ok(())
    }

    /// Undoes `action` on `container`; a container already back in its state counts as undone.
    pub async fn undo(&self, container: &str, action: &ContainerAction) -> Result<(), DockerError> {
        let docker = &self.docker;
        let result = match action {
            ContainerAction::Pause => docker.unpause_container(container).await,
            ContainerAction::Stop | ContainerAction::Kill { .. } => {
                docker
                    .start_container(container, None::<StartContainerOptions<String>>)
                    .await
            }
            ContainerAction::Restart => Ok(()),
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
