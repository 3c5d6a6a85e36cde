//! Experiment spec: the TOML file that says what to run (conditions, rounds, load, fault, breaker, stop).
//!
//! Parsing is two steps: `toml` deserialises into raw structs that keep every value's span
//! (`toml::Spanned`), then [`ExperimentSpec::parse`] checks every value and builds the plain, valid
//! spec. Every problem — an unknown field, an impossible value, an unknown target — becomes a
//! [`SpecError`] naming the dotted field and its line, before anything runs or is stored.

mod bounds;
pub(crate) mod checker;
mod error;
mod matrix;
mod raw;
mod schedule;
mod sources;
mod targets;
#[cfg(test)]
mod tests;
mod workload;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::stats::Criterion;
use crate::target::ServiceId;
use serde::{Deserialize, Serialize};

/// The documented bounds and defaults a valid spec keeps to.
pub use bounds::{
    DEFAULT_LEASE, DEFAULT_STOP_WINDOW, DEFAULT_TIMEOUT, MAX_FAULT_DELAY, MAX_LEASE,
    MAX_NAME_BYTES, MAX_PATH_PREFIX_BYTES, MAX_RATE_LEVELS, MAX_ROUNDS, MAX_RUN_DURATION, MAX_RUNS,
    MAX_STOP_WINDOW, MAX_THINK_TIME, MAX_TIMEOUT, MAX_USERS, MAX_WORKERS, MAX_WRITTEN_DURATION,
    MIN_RUN_DURATION, RATE_RANGE, TIME_SCALE_RANGE,
};
pub use error::{Location, SpecError};
pub use matrix::{Condition, PlannedRun, label_in, shuffle_seeded};
pub use schedule::{MAX_PERIODS as MAX_SCHEDULE_PERIODS, MIN_PERIOD as MIN_SCHEDULE_PERIOD};
pub use sources::{
    DEFAULT_SCRAPE_INTERVAL, MAX_SCRAPE_INTERVAL, MAX_SOURCES, MIN_SCRAPE_INTERVAL, ScrapeSpec,
    SourceSpec,
};
pub use targets::{MAX_TARGET_NAME, MAX_TARGETS, Offers};
pub use workload::parse_workload;

/// The services of the boutique testbed a fault or a target may name: `boutique::ServiceName`'s, in its order.
pub const SERVICE_NAMES: [&str; boutique::ServiceName::ALL.len()] = {
    let mut names = [""; boutique::ServiceName::ALL.len()];
    let mut at = 0;
    while at < names.len() {
        names[at] = boutique::ServiceName::ALL[at].as_str();
        at += 1;
    }
    names
};

/// Extra target keys besides the services: the fault agent's control API.
pub const AGENT_TARGET: &str = "agent";

/// A validated experiment spec. Durations are as written; use [`ExperimentSpec::scaled`] for the
/// durations a run really uses.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentSpec {
    pub name: String,
    pub rounds: u32,
    /// Measured time of every run, after the warmup (unscaled).
    pub duration: Duration,
    /// Time at the start of every run that is cut from every figure (unscaled).
    pub warmup: Duration,
    /// Divides every duration, breaker window and think time.
    pub time_scale: f64,
    pub order: Order,
    pub seed: u64,
    pub load: LoadSpec,
    pub fault: FaultFactor,
    pub breaker: BreakerSpec,
    pub stop: Option<StopSpec>,
    /// External targets by service name (or `agent`); empty = the embedded stack.
    pub targets: BTreeMap<ServiceId, String>,
    /// What each target (the agent aside) offers; empty = the embedded stack, which offers everything.
    pub offers: BTreeMap<ServiceId, Offers>,
    /// Where the states of breakers Tolerant did not write come from (`[[sources]]`).
    pub sources: Vec<SourceSpec>,
    /// Release-gate criteria from `[[validate]]` tables, judged by `tolerant validate`.
    pub validate: Vec<Criterion>,
    /// The spec text as given (stored with the experiment).
    pub source: String,
}

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

impl ExperimentSpec {
    /// Parses and validates a spec. The returned spec is runnable; any problem is a [`SpecError`].
    pub fn parse(source: &str) -> Result<Self, SpecError> {
        raw::parse(source)
    }

    /// Reads and validates a spec file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SpecError> {
        let path = path.as_ref();
        let source = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&source)
    }

    /// What target `name` offers: as `[targets]` says, or everything a Tolerant service offers on the embedded
    /// stack (no `[targets]`).
    pub fn offers_of(&self, name: &str) -> Offers {
        if self.targets.is_empty() {
            Offers::tolerant_service(name)
        } else {
            self.offers.get(name).copied().unwrap_or_default()
        }
    }

    /// A duration as a run really uses it: divided by `time_scale`.
    pub fn scaled(&self, duration: Duration) -> Duration {
        scale_duration(duration, self.time_scale)
    }

    /// Scaled warmup of every run.
    pub fn run_warmup(&self) -> Duration {
        self.scaled(self.warmup)
    }

    /// Scaled measured time of every run (after the warmup).
    pub fn run_duration(&self) -> Duration {
        self.scaled(self.duration)
    }

    /// When the fault is on in every run, scaled, from the run's start (warmup included): the written schedule,
    /// or once for the whole run. The runner applies its outages and the predictions simulate it.
    pub fn fault_schedule(&self) -> breaker::sim::Schedule {
        match &self.fault.schedule {
            Some(schedule) => schedule::scaled_schedule(schedule, self.time_scale),
            None => breaker::sim::Schedule::Once {
                start: Duration::ZERO,
                length: self.run_warmup() + self.run_duration(),
            },
        }
    }

    /// The on-periods of the fault in one run, `[start, end)` from the run's start (scaled), in order.
    pub fn fault_periods(&self) -> Vec<(Duration, Duration)> {
        self.periods_of(self.fault_schedule())
    }

    fn periods_of(&self, schedule: breaker::sim::Schedule) -> Vec<(Duration, Duration)> {
        let run = self.run_warmup() + self.run_duration();
        let run_ns = u64::try_from(run.as_nanos()).unwrap_or(u64::MAX);
        schedule
            .outages(run_ns)
            .into_iter()
            .map(|(start, end)| (Duration::from_nanos(start), Duration::from_nanos(end)))
            .collect()
    }

    /// The written schedule of a condition's fault (its `[[fault.profiles]]` level's, or `fault.schedule`);
    /// `None`: on for the whole run.
    pub fn written_schedule_of(&self, condition: &Condition) -> Option<breaker::sim::Schedule> {
        match condition.fault_profile {
            Some(index) => self.fault.profiles.get(index).and_then(|p| p.schedule),
            None => self.fault.schedule,
        }
    }

    /// [`ExperimentSpec::fault_schedule`] of one condition: its profile's schedule, scaled, when it has one.
    pub fn fault_schedule_of(&self, condition: &Condition) -> breaker::sim::Schedule {
        match self.written_schedule_of(condition) {
            Some(schedule) => schedule::scaled_schedule(&schedule, self.time_scale),
            None => breaker::sim::Schedule::Once {
                start: Duration::ZERO,
                length: self.run_warmup() + self.run_duration(),
            },
        }
    }

    /// [`ExperimentSpec::fault_periods`] of one condition.
    pub fn fault_periods_of(&self, condition: &Condition) -> Vec<(Duration, Duration)> {
        self.periods_of(self.fault_schedule_of(condition))
    }

    /// [`ExperimentSpec::breaker_config`] of one condition: its `[[breaker.configs]]` level's config when it has
    /// one, in the condition's mode, windows scaled.
    pub fn breaker_config_of(
        &self,
        condition: &Condition,
    ) -> Result<breaker::BreakerConfig, breaker::ConfigError> {
        match condition
            .breaker_config
            .and_then(|index| self.breaker.configs.get(index))
        {
            Some(named) => named
                .config
                .clone()
                .with_mode(condition.breaker_mode)
                .time_scaled(self.time_scale),
            None => self.breaker_config(condition.breaker_mode),
        }
    }

    /// The breaker config a condition with `mode` applies, with its windows scaled
    /// ([`breaker::BreakerConfig::time_scaled`]). Parsing checked the scaled config, so a parsed spec never
    /// fails here; the error names the field a window fell out of bounds in.
    pub fn breaker_config(
        &self,
        mode: BreakerMode,
    ) -> Result<breaker::BreakerConfig, breaker::ConfigError> {
        self.breaker.config_for(mode).time_scaled(self.time_scale)
    }

    /// Scaled think-time range.
    pub fn think_time(&self) -> (Duration, Duration) {
        (
            self.scaled(self.load.think_time.0),
            self.scaled(self.load.think_time.1),
        )
    }

    /// The conditions (fault kind × fault rate × breaker mode), in expansion order.
    pub fn conditions(&self) -> Vec<Condition> {
        matrix::conditions(self)
    }

    /// Every run of the experiment in execution order: each round holds every condition once,
    /// shuffled per round from the seed when `order = "randomized"`.
    pub fn plan(&self) -> Vec<PlannedRun> {
        matrix::plan(self)
    }
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
