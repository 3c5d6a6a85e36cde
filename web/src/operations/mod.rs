//! What the dashboard asks of the controller, as one object-safe trait, so the web layer is tested without a
//! testbed and wired to the real controller in the binary ([`embedded`] when the controller's runner is in).
//!
//! Live events do not go through this trait: an implementation is handed the [`crate::hub::Hub`] when it is
//! built and publishes into it (transitions, samples, progress, faults).

pub mod embedded;
#[cfg(any(test, feature = "test-util"))]
pub mod memory;

use controller::target::ServiceId;
use futures::future::BoxFuture;
use serde::Serialize;

use crate::hub::{Annotation, ExperimentStatus, FaultChange, LiveSample};

/// The future every operation returns.
pub type OperationFuture<'a, T> = BoxFuture<'a, Result<T, OperationError>>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OperationError {
    /// The spec or an input field is wrong; the message names the field.
    #[error("{0}")]
    Invalid(String),
    #[error("experiment {0} does not exist")]
    NotFound(i64),
    /// The request is fine but cannot be done now (already running, already finished, …).
    #[error("{0}")]
    Conflict(String),
    /// Something behind the controller failed (testbed, agent); the edge logs the detail and answers 502.
    #[error("{0}")]
    Failed(String),
    /// The controller itself failed (database, report rendering); the edge logs the detail and answers 500.
    #[error("{0}")]
    Internal(String),
}

/// One experiment as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentSummary {
    pub id: i64,
    pub name: String,
    pub status: ExperimentStatus,
    pub planned_runs: i64,
    pub finished_runs: Option<i64>,
    pub created_at_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    /// When a scheduled start is due.
    pub scheduled_at_ms: Option<i64>,
    pub abort_reason: Option<String>,
}

/// A mean with its 95 % confidence half-width.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Cell {
    pub mean: f64,
    pub half_width: Option<f64>,
    pub n: usize,
}

/// A breaker-mode switch: every breaker of every service (`service` is `None`), every breaker of one service
/// (a replica's label: of that replica only), or the one breaker of it named `breaker`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeRequest {
    pub service: Option<ServiceId>,
    pub breaker: Option<String>,
    pub mode: breaker::Mode,
}

impl ModeRequest {
    /// Every breaker of `service` (of every service for `None`) to `mode`.
    pub fn every(service: Option<ServiceId>, mode: breaker::Mode) -> ModeRequest {
        ModeRequest {
            service,
            breaker: None,
            mode,
        }
    }
}

/// One condition's row of the results table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionResult {
    pub label: String,
    pub fault_kind: String,
    pub fault_rate: f64,
    pub breaker_mode: String,
    pub runs: usize,
    /// One cell per [`Results::metrics`] column.
    pub cells: Vec<Option<Cell>>,
}

/// Off vs on at one failure rate for one metric.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictResult {
    pub fault_kind: String,
    pub fault_rate: f64,
    pub metric: String,
    pub baseline: String,
    pub treatment: String,
    pub difference: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub intervals_separate: bool,
    pub verdict: String,
}

/// A chart of the report, as SVG text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChartSvg {
    pub title: String,
    pub svg: String,
}

/// A game-day annotation as stored: free text at a wall-clock time, with the experiment and run it
/// was written during (or is about) when there was one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnnotationEntry {
    pub id: i64,
    pub at_ms: i64,
    pub text: String,
    pub author: Option<String>,
    pub experiment_id: Option<i64>,
    pub run_id: Option<i64>,
}

impl AnnotationEntry {
    /// The entry as a live event for the hub.
    pub fn live(&self) -> Annotation {
        Annotation {
            at_ms: u64::try_from(self.at_ms).unwrap_or(0),
            text: self.text.clone(),
            id: Some(self.id),
            author: self.author.clone(),
            experiment_id: self.experiment_id,
            run_id: self.run_id,
        }
    }
}

/// An annotation to store.
#[derive(Debug, Clone, PartialEq)]
pub struct AnnotationRequest {
    /// Wall-clock Unix milliseconds it is stamped with.
    pub at_ms: i64,
    /// Validated by the operations (non-empty after trimming, bounded); errors name `text`.
    pub text: String,
    pub author: Option<String>,
    /// The experiment it is about; `None` = the running experiment and run, if any.
    pub experiment_id: Option<i64>,
}

/// Most annotations one listing returns.
pub const MAX_ANNOTATIONS_LISTED: usize = 1_000;

/// The results page's content.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Results {
    pub experiment: ExperimentSummary,
    /// The experiment's annotations, oldest first.
    pub annotations: Vec<AnnotationEntry>,
    /// Column headers of the conditions × metrics table.
    pub metrics: Vec<String>,
    pub conditions: Vec<ConditionResult>,
    pub verdicts: Vec<VerdictResult>,
    /// The simulator's predictions stored with the experiment, beside the measurements.
    pub predictions: Vec<controller::stats::PredictedCondition>,
    /// What the experiment's targets could not measure, and why: the report's *Not measured* statements.
    pub not_measured: Vec<controller::stats::NotMeasured>,
    /// Every run of the experiment (attempts included), in plan order: the ones a timeline can be replayed of.
    pub runs: Vec<RunLine>,
    #[serde(skip)]
    pub charts: Vec<ChartSvg>,
}

/// One run as the results page lists it for replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunLine {
    pub id: i64,
    /// 1-based position in the plan.
    pub position: i64,
    pub condition: String,
    /// 1-based round.
    pub round: i64,
    pub status: controller::store::Status,
}

/// A stored run's timeline in the live page's own shapes, so the page that replays it draws it with the same
/// code: transitions (the stored records carry the live event's field names), one live-shaped sample per stored
/// second, and the fault's changes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunTimeline {
    pub run: RunLine,
    /// When the run's load started, Unix ms.
    pub started_at_ms: i64,
    /// When the warmup ended and the measured window began.
    pub measured_from_ms: i64,
    /// When the run ended (its last stored second when it has no end time).
    pub ended_at_ms: i64,
    pub transitions: Vec<controller::store::TransitionRecord>,
    pub samples: Vec<LiveSample>,
    pub faults: Vec<FaultChange>,
}

/// One finished run's figures: every metric its stored rows allowed computing, by the report's metric key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFigures {
    pub run_id: i64,
    /// The label of the run's condition.
    pub condition: String,
    /// 1-based round.
    pub round: i64,
    pub figures: std::collections::BTreeMap<String, f64>,
}

/// A manual fault for the game day page.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultRequest {
    /// Fault id in the agent (`gameday` unless given).
    pub id: String,
    /// Service whose agent gets the fault (`payment` in the embedded stack).
    pub target: ServiceId,
    /// The fault, validated by the agent's rules.
    pub fault: agent::api::FaultSpec,
}

/// A container of the testbed's compose project, as the game-day form lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContainerLine {
    /// `checkout` for the first replica, `checkout#2` for the second: what a container fault names.
    pub replica: String,
    pub service: String,
    /// The engine's name for it (`shop_checkout_2`).
    pub name: String,
    /// `running`, `paused`, `exited`, …
    pub state: String,
}

/// A container fault from the game-day page: one replica, one action, for one lease (not renewed: it is
/// undone when the lease ends unless undone earlier).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerFaultRequest {
    /// A [`ContainerLine::replica`].
    pub replica: String,
    pub action: controller::docker::ContainerAction,
    /// Within [`controller::docker::lease::MIN_LEASE`]..=[`controller::docker::lease::MAX_LEASE`].
    pub lease: std::time::Duration,
}

/// What is said when container faults are asked of a dashboard that reaches no engine.
pub const NO_ENGINE: &str = "container faults need the dashboard to reach the Docker Engine of a compose \
                             project (TOLERANT_COMPOSE): this one reaches none";

/// Background load for a game day: virtual users on the Online Boutique mix, thinking between tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct LoadRequest {
    /// 1–[`MAX_GAME_DAY_USERS`].
    pub users: u32,
    /// Think time between a user's tasks, uniform in `[min, max]` ms, each 0–[`MAX_THINK_MS`].
    pub think_min_ms: u64,
    pub think_max_ms: u64,
}

/// Most virtual users a game day drives.
pub const MAX_GAME_DAY_USERS: u32 = 500;
/// Longest think time a game day takes, ms.
pub const MAX_THINK_MS: u64 = 60_000;

impl LoadRequest {
    /// Checks the bounds; the error names the field.
    pub fn checked(
        users: u32,
        think_min_ms: u64,
        think_max_ms: u64,
    ) -> Result<Self, OperationError> {
        if !(1..=MAX_GAME_DAY_USERS).contains(&users) {
            return Err(OperationError::Invalid(format!(
                "users: {users} is not between 1 and {MAX_GAME_DAY_USERS}"
            )));
        }
        for (field, value) in [("think_min", think_min_ms), ("think_max", think_max_ms)] {
            if value > MAX_THINK_MS {
                return Err(OperationError::Invalid(format!(
                    "{field}: {value} ms is above {MAX_THINK_MS} ms"
                )));
            }
        }
        if think_min_ms > think_max_ms {
            return Err(OperationError::Invalid(format!(
                "think_min: {think_min_ms} ms is above think_max ({think_max_ms} ms)"
            )));
        }
        Ok(LoadRequest {
            users,
            think_min_ms,
            think_max_ms,
        })
    }
}

/// The faults an agent holds now, as its own `GET /_agent/faults` lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentFaults {
    /// The service whose agent it is.
    pub target: ServiceId,
    pub faults: Vec<agent::api::FaultView>,
}

/// Everything the dashboard can ask the controller to do.
pub trait Operations: Send + Sync + 'static {
    fn experiments(&self) -> OperationFuture<'_, Vec<ExperimentSummary>>;
    /// Validates and stores a TOML spec; returns the new experiment's id.
    fn create(&self, spec_toml: String) -> OperationFuture<'_, i64>;
    /// The stored spec text.
    fn spec(&self, id: i64) -> OperationFuture<'_, String>;
    /// Starts now (`at_ms` = `None` or in the past) or queues for `at_ms` (kept across restarts).
    fn start(&self, id: i64, at_ms: Option<i64>) -> OperationFuture<'_, ()>;
    /// Stops a running experiment (faults cleared) or removes it from the queue.
    fn abort(&self, id: i64) -> OperationFuture<'_, ()>;
    fn results(&self, id: i64) -> OperationFuture<'_, Results>;
    /// The experiment's report in `format` (the downloads), rendered in that format only.
    fn report(&self, id: i64, format: controller::report::Format) -> OperationFuture<'_, String>;
    /// The stored timeline of run `run` of experiment `experiment` (`None`: the experiment has no such run).
    fn run_timeline(&self, experiment: i64, run: i64) -> OperationFuture<'_, Option<RunTimeline>>;
    /// The figures of finished run `run` of experiment `experiment` (`None`: it has no such finished run).
    fn run_figures(&self, experiment: i64, run: i64) -> OperationFuture<'_, Option<RunFigures>>;
    /// Clears every fault on every known agent.
    fn halt(&self) -> OperationFuture<'_, ()>;
    fn set_fault(&self, request: FaultRequest) -> OperationFuture<'_, ()>;
    fn clear_fault(&self, target: ServiceId, id: String) -> OperationFuture<'_, ()>;
    /// The faults the testbed's agent holds now (asked of the agent, not remembered).
    fn faults(&self) -> OperationFuture<'_, AgentFaults>;
    /// Experiment `id`'s `[[validate]]` criteria judged on its stored 95 % intervals, as `tolerant validate`
    /// judges them; a spec without criteria is a conflict naming `validate`.
    fn validate(&self, id: i64) -> OperationFuture<'_, controller::stats::ValidationReport>;
    /// Switches the mode of every breaker (of one service, of one breaker of it, or of all when the request
    /// names no service); the rest of each breaker's config stays as it was. A game day's switch is leased and
    /// renewed while the dashboard runs (until a halt or an experiment's start).
    fn set_breaker_mode(&self, request: ModeRequest) -> OperationFuture<'_, ()>;
    /// How long a game-day mode switch holds without a renewal.
    fn mode_lease(&self) -> std::time::Duration {
        embedded::GAME_DAY_MODE_LEASE
    }
    /// Starts (or replaces) the game day's background load, or stops it with `None`. Refused while an
    /// experiment runs (its own load is on); starting an experiment stops it.
    fn set_load(&self, load: Option<LoadRequest>) -> OperationFuture<'_, ()>;
    /// Services that have breakers / agents (for the game day form). Names are text, not
    /// [`boutique::ServiceName`]: over `TOLERANT_TARGETS` they are the targets' own names.
    fn services(&self) -> Vec<ServiceId>;
    /// The compose project's containers, or `None` when the dashboard reaches no engine.
    fn containers(&self) -> OperationFuture<'_, Option<Vec<ContainerLine>>> {
        Box::pin(async { Ok(None) })
    }
    /// Applies a container fault under its lease (recorded in the store first, undone when the lease ends,
    /// on [`Operations::clear_container_fault`] and on halt); returns its id. Said live as a fault change.
    fn set_container_fault(&self, request: ContainerFaultRequest) -> OperationFuture<'_, i64> {
        let _ = request;
        Box::pin(async { Err(OperationError::Conflict(NO_ENGINE.into())) })
    }
    /// Undoes container fault `id` now.
    fn clear_container_fault(&self, id: i64) -> OperationFuture<'_, ()> {
        let _ = id;
        Box::pin(async { Err(OperationError::Conflict(NO_ENGINE.into())) })
    }
    /// Stores an annotation (tied to the running experiment and run unless it names an experiment) and
    /// returns it as stored. Publishing it live is the caller's part.
    fn annotate(&self, request: AnnotationRequest) -> OperationFuture<'_, AnnotationEntry>;
    /// An experiment's annotations, oldest first.
    fn annotations(&self, experiment: i64) -> OperationFuture<'_, Vec<AnnotationEntry>>;
    /// The `limit` latest annotations of any experiment (or none), oldest first.
    fn latest_annotations(&self, limit: usize) -> OperationFuture<'_, Vec<AnnotationEntry>>;
}
