//! The parts of a checked spec: the load, the fault factor with its kinds and profiles, the breaker factor, the
//! stop condition.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::target::ServiceId;

/// Order of the conditions within a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// Shuffled per round from the seed (the default; guards against drift over time).
    #[default]
    Randomized,
    /// Every round in the order the conditions expand.
    Fixed,
}

/// The task mix virtual users follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mix {
    /// The stock Online Boutique Locust mix: index 1, setCurrency 2, browseProduct 10, addToCart 2,
    /// viewCart 3, checkout 1.
    #[default]
    OnlineBoutique,
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    pub users: u32,
    /// The `[targets]` entry the virtual users load (`frontend` unless `load.target` says otherwise).
    pub target: ServiceId,
    /// A workload of the user's shape (`[[load.tasks]]`), used instead of `mix` when given.
    pub custom: Option<std::sync::Arc<crate::load::CustomWorkload>>,
    /// Uniform think time between a user's tasks (unscaled), `min <= max`.
    pub think_time: (Duration, Duration),
    pub mix: Mix,
    /// Open model: tasks per second over all users at a constant arrival rate (replaces think time).
    pub rate: Option<f64>,
    /// Per-request client timeout (not scaled: it is a property of the client, not of the study).
    pub timeout: Duration,
    /// Load workers the users are split between (`[load] workers`, `workers_listen`); `None`: in-process.
    pub workers: Option<LoadWorkers>,
}

/// How many load workers a run needs and where the controller waits for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadWorkers {
    /// `load.workers`, 1 ..= [`MAX_WORKERS`].
    pub count: u32,
    /// `load.workers_listen`.
    pub listen: std::net::SocketAddr,
}

/// Fault kinds: per request through the agent (error, hang, delay, reset), or to the target's containers
/// through the Docker Engine (pause, stop, kill, restart, net_delay, net_loss; see `crate::docker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKindName {
    Error,
    Hang,
    Delay,
    Reset,
    Pause,
    Stop,
    Kill,
    Restart,
    NetDelay,
    NetLoss,
}

impl FaultKindName {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKindName::Error => "error",
            FaultKindName::Hang => "hang",
            FaultKindName::Delay => "delay",
            FaultKindName::Reset => "reset",
            FaultKindName::Pause => "pause",
            FaultKindName::Stop => "stop",
            FaultKindName::Kill => "kill",
            FaultKindName::Restart => "restart",
            FaultKindName::NetDelay => "net_delay",
            FaultKindName::NetLoss => "net_loss",
        }
    }

    /// Whether this kind acts on containers (through the engine) rather than on requests (the agent).
    pub fn is_container(self) -> bool {
        matches!(
            self,
            FaultKindName::Pause
                | FaultKindName::Stop
                | FaultKindName::Kill
                | FaultKindName::Restart
                | FaultKindName::NetDelay
                | FaultKindName::NetLoss
        )
    }
}

/// One fault kind with its parameters, as applied in one condition.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ConditionFault {
    Error {
        status: agent::api::ErrorStatus,
    },
    Hang,
    Delay {
        #[serde(with = "humantime_serde_compat")]
        delay: Duration,
        #[serde(with = "humantime_serde_compat")]
        jitter: Duration,
    },
    Reset,
    /// Every container of the target frozen for the run.
    Pause,
    /// Every container of the target stopped for the run (started again after it).
    Stop,
    /// Every container of the target sent `signal` at the start of the run (started again after it).
    Kill {
        signal: &'static str,
    },
    /// Every container of the target restarted at the start of the run.
    Restart,
    /// Every packet out of every container of the target delayed by `delay` (`tc netem`) for the run.
    NetDelay {
        #[serde(with = "humantime_serde_compat")]
        delay: Duration,
    },
    /// Each packet out of every container of the target lost with the condition's rate as its probability
    /// (`tc netem loss`) for the run.
    NetLoss,
}

impl ConditionFault {
    pub fn name(&self) -> FaultKindName {
        match self {
            ConditionFault::Error { .. } => FaultKindName::Error,
            ConditionFault::Hang => FaultKindName::Hang,
            ConditionFault::Delay { .. } => FaultKindName::Delay,
            ConditionFault::Reset => FaultKindName::Reset,
            ConditionFault::Pause => FaultKindName::Pause,
            ConditionFault::Stop => FaultKindName::Stop,
            ConditionFault::Kill { .. } => FaultKindName::Kill,
            ConditionFault::Restart => FaultKindName::Restart,
            ConditionFault::NetDelay { .. } => FaultKindName::NetDelay,
            ConditionFault::NetLoss => FaultKindName::NetLoss,
        }
    }
}

/// Which requests of the target a fault hits: the agent's own `match` (`[fault.match]` is read in its shape and
/// checked by its rules).
pub use agent::api::MatchRule;

/// The `[fault]` table: the fault factor (kinds × rates, one level each) on one target, with its match rule,
/// lease and schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultFactor {
    /// A boutique service name, or a `[targets]` name.
    pub target: ServiceId,
    /// Every kind is one factor level, with its parameters filled in.
    pub kinds: Vec<ConditionFault>,
    /// Injection probabilities in `[0, 1]`, one factor level each.
    pub rates: Vec<f64>,
    pub match_rule: MatchRule,
    /// Lease asked of the agent; renewed while the fault is on (not scaled).
    pub lease: Duration,
    /// When the fault is on, from the run's start (warmup included), as written (unscaled); `None` = the whole
    /// run. See [`ExperimentSpec::fault_schedule`].
    pub schedule: Option<breaker::sim::Schedule>,
    /// `[[fault.profiles]]`: named (rate, schedule) levels the conditions expand over instead of `rates`
    /// (empty: `rates`, each with `schedule`).
    pub profiles: Vec<FaultProfile>,
}

/// One `[[fault.profiles]]` level: a failure rate with its own schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultProfile {
    pub name: String,
    pub rate: f64,
    /// As written (unscaled); `None` = the whole run.
    pub schedule: Option<breaker::sim::Schedule>,
}

/// One `[[breaker.configs]]` level: a named breaker config (as written, unscaled).
#[derive(Debug, Clone, PartialEq)]
pub struct NamedBreakerConfig {
    pub name: String,
    pub config: breaker::BreakerConfig,
}

/// Breaker modes: the breaker's own [`breaker::Mode`] (the spec's `breaker.modes` use its spelling).
pub use breaker::Mode as BreakerMode;

/// The breaker factor: the modes to compare and the config every mode shares.
#[derive(Debug, Clone, PartialEq)]
pub struct BreakerSpec {
    pub modes: Vec<BreakerMode>,
    /// The services whose breakers take each condition's mode and config (`breaker.services`); every other
    /// service's breakers are disabled for the run. `None`: every service's.
    pub services: Option<Vec<ServiceId>>,
    /// `breaker.instances`: replicas of the calling service, each with its own breaker, recovering together
    /// (default 1). The testbed's replicas are found at run time (`--compose`, …); this is what the predictions
    /// model, their opens, time open and rejections summed over the instances as the measurements are.
    pub instances: u32,
    /// The rest of the `[breaker]` table (`trip`, `open`, `half_open`) in the breaker crate's
    /// vocabulary, validated by it, as written (unscaled; `mode` is set per condition).
    /// Absent sections take the breaker crate's defaults.
    pub config: breaker::BreakerConfig,
    /// `[[breaker.configs]]`: named configs the conditions expand over instead of `config` (empty: `config`).
    pub configs: Vec<NamedBreakerConfig>,
}

impl BreakerSpec {
    /// Whether the breakers of `service` (a replica label such as `checkout#2` counts as its service) take the
    /// condition's config.
    pub fn applies_to(&self, service: &ServiceId) -> bool {
        self.services
            .as_ref()
            .is_none_or(|services| services.iter().any(|name| name == service.service()))
    }

    /// The unscaled breaker config for one mode.
    pub fn config_for(&self, mode: BreakerMode) -> breaker::BreakerConfig {
        self.config.clone().with_mode(mode)
    }
}

/// `duration / time_scale`, saturating (the breaker's, which scales its config's windows the same way).
/// Validation keeps both within bounds, so a parsed spec never saturates.
pub use breaker::scale_duration;

/// Abort a run when a steady-state condition is violated (enforced by the runner).
#[derive(Debug, Clone, PartialEq)]
pub struct StopSpec {
    /// Abort when availability stays below this for `window`.
    pub availability_below: Option<f64>,
    /// How long the condition must hold (not scaled).
    pub window: Duration,
}

/// Serialises durations as humantime strings ("30s") in JSON/TOML output.
mod humantime_serde_compat {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(
        duration: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&humantime::format_duration(*duration))
    }
}
