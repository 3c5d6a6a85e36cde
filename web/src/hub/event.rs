//! What flows through the hub: one [`LiveEvent`] per thing that happened, serialized with a `type` tag.
//!
//! Browsers receive these inside frames (see [`super::Frame`]); the shapes here are the dashboard's wire
//! contract, so the JavaScript reads exactly these field names.

use breaker::TransitionEvent;
use serde::{Deserialize, Serialize};

use super::status::{ExperimentStatus, FaultChangeEvent};

/// Upper bounds (µs) of the latency histogram buckets carried by a [`LiveSample`]; a last, open bucket
/// counts everything slower. Fixed and coarse on purpose: the browser adds them up per endpoint.
pub const LATENCY_BUCKET_BOUNDS_US: [u64; 12] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000,
];

/// One event for the live dashboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LiveEvent {
    /// A breaker changed state (the breaker's own wire shape, plus `type`).
    Transition(TransitionEvent),
    /// One second of load and collector figures.
    Sample(LiveSample),
    /// Where the running experiment is.
    Progress(RunProgress),
    /// A fault was applied, renewed, expired or removed.
    Fault(FaultChange),
    /// A person wrote something on the timeline.
    Annotation(Annotation),
    /// An experiment changed status (created, scheduled, running, finished, aborted).
    Experiment(ExperimentChange),
    /// Every breaker of the testbed as it is now (once a second): the tiles and the lanes.
    Breakers(BreakerBoard),
    /// An operator or a run switched a breaker's mode.
    Mode(ModeChange),
    /// The game day's background load started, changed or stopped.
    Load(GameDayLoad),
    /// Every container of the compose project over the last second (when the dashboard reaches an engine).
    Containers(ContainerStats),
    /// The running experiment's load workers (once a second), or that its users run in-process.
    Workers(LoadWorkers),
}

/// Where the running (or last) experiment's virtual users run: on load workers (`[load] workers`), each with
/// its users, rate and lag, the lost ones marked; or in the dashboard's own process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadWorkers {
    pub at_ms: u64,
    pub experiment_id: i64,
    /// `None`: the experiment's users run in-process (it has no `[load] workers`).
    pub pool: Option<controller::workers::WorkersView>,
}

/// Each container's use of the last second, from the engine's stats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerStats {
    pub at_ms: u64,
    pub containers: Vec<ContainerUse>,
}

/// One container's second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerUse {
    /// `checkout`, `checkout#2`.
    pub replica: String,
    pub service: String,
    /// CPU time over wall time, in percent of one core.
    pub cpu_percent: f64,
    pub memory_bytes: u64,
    /// Bytes received and sent per second, over every network.
    pub rx_bytes_per_s: f64,
    pub tx_bytes_per_s: f64,
    /// Modelled: the machine's modelled power at the stack's CPU use, split by this container's CPU share.
    pub modelled_watts: f64,
}

/// The game day's background load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameDayLoad {
    pub at_ms: u64,
    /// 0 when stopped.
    pub users: u32,
    pub think_min_ms: u64,
    pub think_max_ms: u64,
}

/// Every breaker of the testbed at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerBoard {
    pub at_ms: u64,
    /// By name (`caller->dependency`), sorted.
    pub breakers: Vec<BreakerTile>,
}

/// One breaker's tile: its mode, config and counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerTile {
    /// `caller->dependency`.
    pub name: String,
    /// The service it lives in (the caller).
    pub service: String,
    pub state: breaker::State,
    pub mode: breaker::Mode,
    /// The running config in words (`None` until the service answered).
    pub config: Option<TileConfig>,
    /// Counters since the service started.
    pub calls: u64,
    pub failures: u64,
    pub rejected: u64,
    pub opens: u64,
    /// Over the last [`TILE_WINDOW_S`] seconds.
    pub window: TileWindow,
    /// When the open window ends, Unix ms (open, not forced).
    pub open_until_ms: Option<u64>,
}

/// Seconds a tile's window looks back.
pub const TILE_WINDOW_S: u64 = 10;

/// A breaker's config as a tile shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileConfig {
    /// `5 in a row`, `50 % of ≥ 20 calls in 10s`, `slow ≥ 1s: 50 % of ≥ 20 calls in 10s`, joined by ` or `.
    pub detector: String,
    /// `30s`, or `30s ×2 up to 5m`.
    pub open_window: String,
    /// `1 probe, 2 successes close`.
    pub probes: String,
}

/// Counter deltas over the tile's window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TileWindow {
    pub calls: u64,
    pub failures: u64,
    pub rejected: u64,
    /// failures / calls, `None` without calls.
    pub failure_rate: Option<f64>,
}

/// A breaker's mode changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeChange {
    pub at_ms: u64,
    pub breaker: String,
    pub service: String,
    pub from: breaker::Mode,
    pub to: breaker::Mode,
}

/// Requests by outcome class (within one second, in a live sample): the load driver's own type.
pub use controller::load::OutcomeCounts;

/// One endpoint's second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointSample {
    /// Endpoint name as the load driver labels it (`checkout`, `viewCart`, …).
    pub name: String,
    pub requests: u64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    /// This endpoint's requests by outcome over the sample's seconds (they add up to the sample's
    /// `outcomes`): the live per-endpoint table's counts.
    #[serde(default)]
    pub outcomes: OutcomeCounts,
    /// p50 of the `ok` requests alone (`None` when none succeeded this second, or not stored).
    #[serde(default)]
    pub ok_p50_us: Option<u64>,
    /// p50 of the other requests (`None` when there were none, or not stored).
    #[serde(default)]
    pub failed_p50_us: Option<u64>,
    /// p95 of the `ok` requests alone (`None` when none succeeded this second).
    #[serde(default)]
    pub ok_p95_us: Option<u64>,
    /// p95 of the other requests (failed, rejected, timed out; `None` when there were none): a fast
    /// rejection shows here instead of pulling the successes' p95 down.
    #[serde(default)]
    pub failed_p95_us: Option<u64>,
    /// Counts per [`LATENCY_BUCKET_BOUNDS_US`] bucket, the open bucket last (13 entries).
    pub buckets: Vec<u64>,
}

/// Worker-pool occupancy of one service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolSample {
    pub service: String,
    pub in_flight: u64,
    pub queued: u64,
    pub capacity: u64,
}

/// One second of an experiment run (or of a game day's background load).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveSample {
    /// Wall-clock ms at the end of the second.
    pub at_ms: u64,
    /// Seconds since the run started.
    pub second: u64,
    pub warmup: bool,
    pub outcomes: OutcomeCounts,
    pub endpoints: Vec<EndpointSample>,
    /// Mean items per cart, when sampled.
    pub cart_mean_items: Option<f64>,
    /// p95 of `GET /cart` in this second, when any completed.
    pub cart_p95_us: Option<u64>,
    pub pools: Vec<PoolSample>,
}

/// Where an experiment is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunProgress {
    pub experiment_id: i64,
    pub experiment: String,
    /// 1-based position of the current run in the plan.
    pub run: u64,
    pub runs: u64,
    /// Condition label, e.g. `error@1.00/enforce`.
    pub condition: String,
    pub round: u64,
    /// `running` while the run runs, then how it ended (the run's status), or the experiment's status once it
    /// ended.
    pub phase: ExperimentStatus,
    pub started_at_ms: u64,
    /// When the current run is expected to end.
    pub ends_at_ms: Option<u64>,
    /// When the run's warmup ends and its measured window begins (`None`: not known). The results count a
    /// run's breaker opens from here on, so the live header does too and shows the warmup's apart.
    #[serde(default)]
    pub measured_from_ms: Option<u64>,
    /// What the experiment's targets cannot measure, and why: the report's *Not measured* statements
    /// ([`controller::stats::not_measured`]); the live page shows them in a notice.
    #[serde(default)]
    pub not_measured: Vec<String>,
    /// Nothing watches a breaker: the live header's opens are "not measured", not 0.
    #[serde(default)]
    pub opens_not_measured: bool,
}

impl RunProgress {
    /// What `spec`'s targets cannot measure (the report's statements) and whether that includes the opens: the
    /// two fields a running experiment's progress carries.
    pub fn not_measured_of(spec: &controller::spec::ExperimentSpec) -> (Vec<String>, bool) {
        let statements = controller::stats::not_measured_statements(spec);
        let opens =
            controller::stats::left_out(&statements, controller::metric::MetricName::BreakerOpens)
                .is_some();
        (
            statements.into_iter().map(|line| line.statement).collect(),
            opens,
        )
    }
}

/// A fault's life cycle event, from the agent stream or the controller's own calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultChange {
    pub at_ms: u64,
    pub event: FaultChangeEvent,
    pub fault_id: String,
    /// Service the fault sits in (`payment`).
    pub target: String,
    /// `error`, `hang`, `delay`, `reset` (empty for removals that do not know).
    pub kind: String,
    pub rate: f64,
    /// `status 500`, `delay 800ms` (empty when the kind says it all or it is unknown).
    #[serde(default)]
    pub detail: String,
    /// The requests it applies to: `POST /charge…`, or `every request`.
    #[serde(default)]
    pub matches: String,
    /// When the lease runs out unless renewed, Unix ms.
    #[serde(default)]
    pub expires_at_ms: Option<u64>,
}

impl FaultChange {
    /// Whether the fault is in force after this event.
    pub fn is_active(&self) -> bool {
        matches!(
            self.event,
            FaultChangeEvent::Applied | FaultChangeEvent::Renewed
        ) && self.rate > 0.0
    }
}

/// Free text on the timeline; the stored ones carry their id and what they are about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotation {
    pub at_ms: u64,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
}

/// An experiment's new status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExperimentChange {
    pub experiment_id: i64,
    pub status: ExperimentStatus,
    pub at_ms: u64,
}

/// Bucket counts for [`LATENCY_BUCKET_BOUNDS_US`] from `(upper_bound_us, count)` steps of a histogram.
pub fn bucketize(values: impl IntoIterator<Item = (u64, u64)>) -> Vec<u64> {
    let mut buckets = vec![0; LATENCY_BUCKET_BOUNDS_US.len() + 1];
    for (value_us, count) in values {
        let index = LATENCY_BUCKET_BOUNDS_US
            .iter()
            .position(|bound| value_us <= *bound)
            .unwrap_or(LATENCY_BUCKET_BOUNDS_US.len());
        buckets[index] += count;
    }
    buckets
}
