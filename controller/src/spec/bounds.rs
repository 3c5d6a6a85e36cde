//! The documented bounds and defaults a valid spec keeps to: every user-typed number is checked against these.

use std::time::Duration;

/// Default per-request client timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default fault lease asked of the agent.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// Default time a stop condition must hold.
pub const DEFAULT_STOP_WINDOW: Duration = Duration::from_secs(10);
/// A run shorter than this after scaling measures nothing useful.
pub const MIN_RUN_DURATION: Duration = Duration::from_secs(1);
/// Upper bound on virtual users (each is a task with its own connection).
pub const MAX_USERS: u32 = 100_000;
/// Upper bound on `load.workers` (load workers a run's users are split between).
pub const MAX_WORKERS: u32 = 1_000;
/// Upper bound on `breaker.instances` (replicas of the calling service the predictions model).
pub const MAX_BREAKER_INSTANCES: u32 = 10_000;
/// Upper bound on `rounds`.
pub const MAX_ROUNDS: u32 = 1_000;
/// Upper bound on the runs of one experiment (conditions × rounds), each stored as a row.
pub const MAX_RUNS: usize = 10_000;
/// Upper bound on `fault.rates` levels.
pub const MAX_RATE_LEVELS: usize = 101;
/// Upper bound on any duration as written (a year: a longer one is a typo, not a study).
pub const MAX_WRITTEN_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);
/// Upper bound on one run's warmup + measured time after scaling.
pub const MAX_RUN_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// `time_scale` bounds: a study can be slowed down a thousandfold or sped up a millionfold.
pub const TIME_SCALE_RANGE: (f64, f64) = (1e-3, 1e6);
/// Open-model arrival rate bounds in tasks per second.
pub const RATE_RANGE: (f64, f64) = (1e-2, 1e6);
/// Upper bound on the per-request client timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Upper bound on a think time (as written).
pub const MAX_THINK_TIME: Duration = Duration::from_secs(3600);
/// Upper bound on a delay fault's delay and jitter (the agent caps a hold at `--max-hold` too).
pub const MAX_FAULT_DELAY: Duration = Duration::from_secs(3600);
/// Upper bound on the fault lease asked of the agent (its own maximum may be lower).
pub const MAX_LEASE: Duration = Duration::from_secs(3600);
/// Upper bound on the time a stop condition must hold.
pub const MAX_STOP_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// Upper bound on the name's length in bytes.
pub const MAX_NAME_BYTES: usize = 200;
/// Upper bound on a match path prefix in bytes (the agent's).
pub const MAX_PATH_PREFIX_BYTES: usize = agent::api::MAX_PATH_PREFIX_BYTES;
