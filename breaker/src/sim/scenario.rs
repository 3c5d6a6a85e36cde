//! What to simulate: the callers' workload, when and how the upstream fails, the breaker's config, the services further up the call chain ([`Caller`]) and the
//! callers' resources (instances, worker pools). A [`Scenario`] is only built valid, from the unchecked
//! [`RawScenario`] by `TryFrom` (`checks.rs`), which bounds every number before anything is allocated and names the field it
//! rejects.

use std::time::Duration;

use crate::clock::duration_nanos;
use crate::config::{BreakerConfig, ConfigError};

/// Longest simulated window.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// Shortest simulated window.
pub const MIN_WINDOW: Duration = Duration::from_secs(1);
/// Highest request rate, requests per second over all instances.
pub const MAX_RATE: f64 = 100_000.0;
/// Most simulated users of a closed workload.
pub const MAX_USERS: u32 = 100_000;
/// Most instances of the calling service.
pub const MAX_INSTANCES: u32 = 1_000;
/// Most workers per instance.
pub const MAX_WORKERS: u32 = 1_000_000;
/// Longest call timeout (what a hanging call costs its caller).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Most requests one simulation may make (rate × window, or users × window / shortest think time).
pub const MAX_REQUESTS: f64 = 50_000_000.0;
/// Most fault periods a periodic schedule may have inside the window.
pub const MAX_PERIODS: u64 = 100_000;
/// Shortest think time of a closed workload.
pub const MIN_THINK: Duration = Duration::from_millis(10);
/// Highest warm capacity of a recovering dependency, requests per second.
pub const MAX_WARM_CAPACITY: f64 = 1_000_000.0;
/// Most callers further up the chain than the dependency's caller.
pub const MAX_CALLERS: usize = 8;

/// A whole simulation as written, nothing checked yet: one window of time, on a virtual clock. The simulator takes
/// only a [`Scenario`], made from this by `Scenario::try_from`.
#[derive(Debug, Clone, PartialEq)]
pub struct RawScenario {
    /// Simulated time.
    pub window: Duration,
    /// Who calls and how often.
    pub workload: Workload,
    /// When and how the dependency fails.
    pub upstream: Upstream,
    /// The breaker every instance puts in front of the dependency (one breaker per instance).
    pub breaker: BreakerConfig,
    /// Instances of the calling service; arrivals are spread over them in turn, each has its own breaker.
    pub instances: u32,
    /// Workers per instance; a request that finds every worker busy is refused. `None` = unbounded.
    pub workers: Option<u32>,
    /// Seed of every random draw (which requests call the dependency, which calls fail, think times, jitter).
    pub seed: u64,
    /// Keep a record of every request (for step-by-step comparisons; costs memory).
    pub log_calls: bool,
    /// When the breaker learns a call's outcome.
    pub model: Model,
    /// The services further up the call chain, outermost first, each with its breaker on the next one down (the
    /// last one's on the service whose breaker is `breaker`). Empty: the dependency's caller is the entry.
    pub callers: Vec<Caller>,
}

/// A service further up the call chain: its breaker on the service below it, and its call timeout.
///
/// Its call fails when the call below it fails or is rejected (the service below answers 5xx at once for a
/// rejection or an error, at the timeout for a hang); while its breaker is open nothing goes further down. It
/// learns an outcome when the call below answers, or at its own timeout if that is sooner (a failure then);
/// under [`Model::Published`] at once, like the breaker in front of the dependency.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    /// Its breaker on the service below (one per instance, like the dependency's).
    pub breaker: BreakerConfig,
    /// How long it waits for the service below.
    pub timeout: Duration,
    /// How long the service below works on a call besides its own call further down (its reads before it, its
    /// answer after): every outcome, a rejection below too, reaches this caller that much later, so a half-open
    /// probe is in flight that long. Zero: the service below answers the instant the call below it does.
    pub latency: Duration,
}

/// A checked simulation: every number within its bounds ([`RawScenario`]'s fields, read through accessors).
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario(pub(super) RawScenario);

impl Scenario {
    /// Simulated time.
    pub fn window(&self) -> Duration {
        self.0.window
    }

    /// Who calls and how often.
    pub fn workload(&self) -> Workload {
        self.0.workload
    }

    /// When and how the dependency fails.
    pub fn upstream(&self) -> &Upstream {
        &self.0.upstream
    }

    /// The breaker every instance puts in front of the dependency.
    pub fn breaker(&self) -> &BreakerConfig {
        &self.0.breaker
    }

    /// Instances of the calling service.
    pub fn instances(&self) -> u32 {
        self.0.instances
    }

    /// Workers per instance; `None` = unbounded.
    pub fn workers(&self) -> Option<u32> {
        self.0.workers
    }

    /// Seed of every random draw.
    pub fn seed(&self) -> u64 {
        self.0.seed
    }

    /// When the breaker learns a call's outcome.
    pub fn model(&self) -> Model {
        self.0.model
    }

    /// The services further up the call chain, outermost first ([`RawScenario::callers`]).
    pub fn callers(&self) -> &[Caller] {
        &self.0.callers
    }

    /// Whether every request is recorded.
    pub fn log_calls(&self) -> bool {
        self.0.log_calls
    }

    /// The same scenario, every request recorded or not (valid either way).
    pub fn with_log_calls(self, log_calls: bool) -> Scenario {
        Scenario(RawScenario {
            log_calls,
            ..self.0
        })
    }

    /// The scenario's values, to change and check again with `Scenario::try_from`.
    pub fn into_raw(self) -> RawScenario {
        self.0
    }
}

impl From<Scenario> for RawScenario {
    fn from(scenario: Scenario) -> Self {
        scenario.0
    }
}

/// When the breaker learns a call's outcome: the one difference between the two models the simulator draws.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// When the call ends, as the production breaker does: a hanging call's failure arrives at the timeout, so
    /// calls keep reaching the dependency until the first failures come back (`at-timeout`, the default).
    #[default]
    AtTimeout,
    /// The published simulator's model (`published`): the breaker sees every outcome the instant the call is
    /// made, while the caller still pays the full timeout for a hanging call (a "slow failure").
    Published,
}

impl Model {
    /// The name `--model` and the `model` setting take.
    pub fn name(self) -> &'static str {
        match self {
            Model::AtTimeout => "at-timeout",
            Model::Published => "published",
        }
    }
}

impl std::fmt::Display for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Workload {
    /// Arrivals at a constant rate whatever happens to earlier requests (an open model: a full pool keeps filling).
    Open {
        /// Requests per second over all instances.
        rate: f64,
        /// Share of requests that call the dependency, in (0, 1].
        share: f64,
    },
    /// Users that each wait for their request, think, and send the next (a closed model, like an experiment's load).
    Closed {
        /// Simulated users.
        users: u32,
        /// Shortest think time.
        think_min: Duration,
        /// Longest think time (drawn uniformly between the two).
        think_max: Duration,
        /// Share of tasks that call the dependency, in (0, 1] (the task mix's weight of those tasks over the total).
        share: f64,
    },
}

impl Workload {
    /// Share of requests that call the dependency.
    pub fn share(&self) -> f64 {
        match *self {
            Workload::Open { share, .. } | Workload::Closed { share, .. } => share,
        }
    }

    /// Mean request rate over all instances (for a closed model: users / mean think time, as if requests took
    /// no time).
    pub fn mean_rate(&self) -> f64 {
        match *self {
            Workload::Open { rate, .. } => rate,
            Workload::Closed {
                users,
                think_min,
                think_max,
                ..
            } => f64::from(users) / ((think_min + think_max).as_secs_f64() / 2.0),
        }
    }
}

/// The dependency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Upstream {
    /// When the fault is active.
    pub schedule: Schedule,
    /// Share of calls that fail while the fault is active, in [0, 1] (1 = every call: a binary outage).
    pub failure_rate: f64,
    /// Which calls fail at a partial rate.
    pub pattern: Pattern,
    /// How a failing call fails.
    pub kind: CallFailure,
    /// What a hanging call costs its caller: the caller's timeout.
    pub timeout: Duration,
    /// What a successful call costs its caller (less than the timeout).
    pub latency: Duration,
    /// A dependency that comes back cold: for a while after each outage it serves only so many calls a second.
    pub warmup: Option<Warmup>,
}

/// How failing calls fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallFailure {
    /// An instant error (an HTTP 500): costs the caller nothing.
    Error,
    /// No answer until the caller's timeout.
    Hang,
}

/// Which calls fail when the failure rate is partial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Each call fails with the failure rate's probability (seeded draws).
    Random,
    /// Failures spread as evenly as possible over the calls that reach the dependency (at 0.5: every other call).
    Even,
}

/// A dependency that restarts cold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Warmup {
    /// Calls per second it serves while warming up; the calls beyond fail like the fault's calls.
    pub capacity: f64,
    /// How long after each outage it stays cold.
    pub length: Duration,
}

/// When the fault is active, relative to the window's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Once: from `start` for `length`.
    Once {
        /// When it starts.
        start: Duration,
        /// How long it lasts (zero = no fault).
        length: Duration,
    },
    /// From `start`, `on` then `off`, repeated to the window's end.
    Periodic {
        /// When the first period starts.
        start: Duration,
        /// How long each outage lasts.
        on: Duration,
        /// How long the dependency is healthy between outages.
        off: Duration,
    },
}

impl Schedule {
    /// The outages inside `[0, window_ns)`, as `[start, end)` nanoseconds, in order.
    pub fn outages(&self, window_ns: u64) -> Vec<(u64, u64)> {
        let mut outages = Vec::new();
        match *self {
            Schedule::Once { start, length } => {
                let start = duration_nanos(start);
                let end = start.saturating_add(duration_nanos(length)).min(window_ns);
                if start < end {
                    outages.push((start, end));
                }
            }
            Schedule::Periodic { start, on, off } => {
                let (on, off) = (duration_nanos(on), duration_nanos(off));
                let mut at = duration_nanos(start);
                while at < window_ns && on > 0 {
                    outages.push((at, at.saturating_add(on).min(window_ns)));
                    at = at.saturating_add(on).saturating_add(off);
                }
            }
        }
        outages
    }
}

/// A scenario that cannot be simulated; `Display` names the field, e.g. `rate: must be at most 100000`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ScenarioError {
    /// The offending field (`breaker.<field>` for the breaker's config).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl ScenarioError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            field: field.into(),
            message: message.into(),
        }
    }

    /// A breaker config error, its field under `breaker.`.
    pub(crate) fn of_breaker(error: ConfigError) -> Self {
        ScenarioError::new(format!("breaker.{}", error.field), error.message)
    }
}
