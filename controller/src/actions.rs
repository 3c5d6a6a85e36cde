//! What a container or a pod fault does, as specs, the game-day form, the store and a pod's annotation spell it.
//! The engine and the cluster give each its checks and its effect (`docker::fault`, `kubernetes::fault`); the
//! store records them without knowing either.

use serde::{Deserialize, Serialize};

/// One container-level fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
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
        /// restores them (filled in by `docker::Engine::prepare`).
        #[serde(default)]
        aliases: Vec<String>,
    },
    /// Every packet out of the container delayed by `delay_ms` (bounded by `docker::netem::MAX_NET_DELAY`).
    NetDelay {
        delay_ms: u64,
    },
    /// Each packet out of the container lost with probability `percent` / 100 (in (0, 100]).
    NetLoss {
        percent: f64,
    },
}

impl ContainerAction {
    /// What the action does beyond its name, for people: `SIGKILL`, `delay 200ms`, `loss 10 %`.
    pub fn detail(&self) -> String {
        match self {
            ContainerAction::Kill { signal } => signal.clone(),
            ContainerAction::Disconnect { network, .. } => format!("from {network}"),
            ContainerAction::NetDelay { delay_ms } => format!("delay {delay_ms}ms"),
            ContainerAction::NetLoss { percent } => format!("loss {percent} %"),
            ContainerAction::Pause | ContainerAction::Stop | ContainerAction::Restart => {
                String::new()
            }
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ContainerAction::Pause => "pause",
            ContainerAction::Stop => "stop",
            ContainerAction::Kill { .. } => "kill",
            ContainerAction::Restart => "restart",
            ContainerAction::Disconnect { .. } => "disconnect",
            ContainerAction::NetDelay { .. } => "net_delay",
            ContainerAction::NetLoss { .. } => "net_loss",
        }
    }
}

/// One pod fault.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum PodAction {
    Delete,
    Kill { signal: String },
    NetDelay { delay_ms: u64 },
    NetLoss { percent: f64 },
}

impl PodAction {
    pub fn name(&self) -> &'static str {
        match self {
            PodAction::Delete => "delete",
            PodAction::Kill { .. } => "kill",
            PodAction::NetDelay { .. } => "net_delay",
            PodAction::NetLoss { .. } => "net_loss",
        }
    }
}
