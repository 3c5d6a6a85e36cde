//! The advisor's input (`tolerant tune INPUT`): the traffic, the failure profiles the team cares about with their
//! weights, what each kind of cost is worth, the constraints and the search's and verification's settings — read
//! from TOML with every value's span, every number bounded before anything is simulated, and every error naming
//! the dotted field and its line (the spec's [`Checker`](crate::spec::checker::Checker), the same
//! [`SpecError`](crate::spec::SpecError)). `raw` is what serde reads, `read` checks it, `profiles` one profile.

use std::time::Duration;

use breaker::sim::Workload;

mod profiles;
mod raw;
mod read;

/// Healthy time before an outage, a hang or the first blip starts.
pub const FAULT_LEAD: Duration = Duration::from_secs(10);

/// Most failure profiles one input may list.
pub const MAX_PROFILES: usize = 8;
/// Highest request rate of the traffic, requests per second.
pub const MAX_TRAFFIC_RATE: f64 = 10_000.0;
/// Most users of a closed workload.
pub const MAX_TRAFFIC_USERS: u32 = 10_000;
/// Most instances of the calling service.
pub const MAX_TRAFFIC_INSTANCES: u32 = 100;
/// Most workers per instance.
pub const MAX_TRAFFIC_WORKERS: u32 = 100_000;
/// Longest call timeout.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(600);
/// Shortest and longest simulated window of one profile.
pub const MIN_PROFILE_WINDOW: Duration = Duration::from_secs(10);
pub const MAX_PROFILE_WINDOW: Duration = Duration::from_secs(6 * 3600);
/// Most requests one profile's window may hold (rate × window), so the search stays bounded.
pub const MAX_PROFILE_REQUESTS: f64 = 1_000_000.0;
/// Highest weight of a profile and highest price of a cost term.
pub const MAX_WEIGHT: f64 = 1_000_000.0;
/// Longest `detect_within`.
pub const MAX_DETECT_WITHIN: Duration = Duration::from_secs(3600);
/// Most false trips per hour a constraint may allow.
pub const MAX_FALSE_TRIPS_PER_HOUR: f64 = 3_600.0;
/// Most candidates one search may simulate.
pub const MAX_CANDIDATES: u32 = 100_000;
/// Most candidates (current config included) one verification runs.
pub const MAX_VERIFY_CANDIDATES: u32 = 6;
/// Most rounds of a verification.
pub const MAX_VERIFY_ROUNDS: u32 = 30;

/// The checked input.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneInput {
    /// The dependency the breaker guards (names the exported instance: `payment`).
    pub name: String,
    pub traffic: Traffic,
    pub profiles: Vec<Profile>,
    pub costs: Costs,
    pub constraints: Constraints,
    pub search: SearchSettings,
    pub verify: VerifySettings,
}

/// Who calls the dependency and what a call costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// Arrivals (open model: `rate`; closed: `users` thinking `think_min`…`think_max`), with the share calling
    /// the dependency.
    pub workload: Workload,
    /// What a healthy call costs its caller.
    pub latency: Duration,
    /// What a hanging call costs its caller: the caller's timeout.
    pub timeout: Duration,
    /// Workers per instance (`None`: unbounded).
    pub workers: Option<u32>,
    /// Instances of the caller, one breaker each.
    pub instances: u32,
}

/// One failure profile, with its weight among the profiles.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub kind: ProfileKind,
    /// Relative weight of this profile in the total cost.
    pub weight: f64,
    /// Simulated time.
    pub window: Duration,
}

/// What goes wrong in a profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProfileKind {
    /// The dependency fails every call for `length`, every `every` (at once, or hanging until the timeout).
    Blips {
        length: Duration,
        every: Duration,
        hang: bool,
    },
    /// A share `rate` of calls fail, the whole window (at once, or hanging until the timeout).
    Partial { rate: f64, hang: bool },
    /// Every call hangs until the caller's timeout, for `length`.
    Hang { length: Duration },
    /// Every call fails at once, for `length`.
    Outage { length: Duration },
    /// The healthy baseline: a share `rate` of calls fail, at which the breaker must not trip.
    Baseline { rate: f64 },
}

impl ProfileKind {
    /// The spelling in the input.
    pub fn as_str(self) -> &'static str {
        match self {
            ProfileKind::Blips { .. } => "blips",
            ProfileKind::Partial { .. } => "partial",
            ProfileKind::Hang { .. } => "hang",
            ProfileKind::Outage { .. } => "outage",
            ProfileKind::Baseline { .. } => "baseline",
        }
    }

    /// Default simulated window: a few periods of blips, two minutes of partial failure, the outage with time
    /// before and after it, ten minutes of baseline.
    fn default_window(self) -> Duration {
        match self {
            ProfileKind::Blips { every, .. } => (every * 6).max(Duration::from_secs(60)),
            ProfileKind::Partial { .. } => Duration::from_secs(120),
            ProfileKind::Hang { length } | ProfileKind::Outage { length } => {
                length + Duration::from_secs(40)
            }
            ProfileKind::Baseline { .. } => Duration::from_secs(600),
        }
    }
}

/// What each kind of cost is worth, in one unit of the team's choosing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    /// A request rejected that would have succeeded.
    pub rejected_success: f64,
    /// A caller-second blocked on a failing call.
    pub blocked_second: f64,
    /// A request refused by a full worker pool.
    pub refused: f64,
    /// A second to detect (open on) a full outage or hang.
    pub detect_second: f64,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            rejected_success: 1.0,
            blocked_second: 1.0,
            refused: 1.0,
            detect_second: 0.0,
        }
    }
}

/// What a recommendation must keep to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Constraints {
    /// Every sustained failure (outage, hang, partial failure) opens the breaker within this.
    pub detect_within: Option<Duration>,
    /// At most this many trips per hour at the baseline error rate.
    pub false_trips_per_hour: Option<f64>,
}

/// The search's own settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchSettings {
    /// Seed of every draw of the simulations.
    pub seed: u64,
    /// Most candidates simulated (the grid is thinned evenly above it).
    pub max_candidates: u32,
}

/// How `--verify` runs its experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifySettings {
    /// Candidates verified besides the current config (the best by predicted cost).
    pub top: u32,
    pub rounds: u32,
    /// Divides every duration of the experiment (the study's time scale).
    pub time_scale: f64,
    /// `verify.spec`: an experiment spec whose `[targets]`, `[load]`, `[[sources]]` and `fault.target` are the
    /// testbed and load of the verification (the user's own system) instead of the embedded testbed; as written
    /// (relative to the input file once [`TuneInput::from_file`] has read it).
    pub spec: Option<std::path::PathBuf>,
}
