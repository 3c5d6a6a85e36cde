//! What storage writes and reads: statuses, the per-run record handed over when a run ends, and rows.

use serde::{Deserialize, Serialize};

use breaker::{Reason, State, TransitionDetail};

use super::run_events::{FaultCall, RunEvent, RunEventRecord};
use crate::load::{EndpointReport, OutcomeCounts, SecondStats};
use crate::sources::SourceHealth;

/// Identifies an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ExperimentId(pub i64);

/// Identifies one run (one attempt at one plan position).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct RunId(pub i64);

impl std::fmt::Display for ExperimentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// Life cycle of an experiment or a run; serialised as [`Status::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Running,
    Finished,
    /// Stopped on purpose (a stop condition, an abort request); the reason is stored.
    Aborted,
    /// Found running by a controller that restarted: the process died mid-run.
    Interrupted,
    /// A run that ended by a fault of the harness, not a verdict on the system: the run or its load
    /// generator panicked, or the load generator could not send what it was asked to (out of file
    /// descriptors, …). Its figures are kept but left out of every mean. An experiment is never `Failed`
    /// (a failed run aborts it).
    Failed,
    /// A run whose load was driven by load workers and lost one mid-run: its users are missing from the seconds
    /// it missed (the reason says how many when), so the run is not averaged with complete ones. Its figures are
    /// kept but left out of every mean, and the plan goes on. An experiment is never `Degraded`.
    Degraded,
}

impl Status {
    /// Every status.
    pub const ALL: [Status; 7] = [
        Status::Pending,
        Status::Running,
        Status::Finished,
        Status::Aborted,
        Status::Interrupted,
        Status::Failed,
        Status::Degraded,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Finished => "finished",
            Status::Aborted => "aborted",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
            Status::Degraded => "degraded",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the abort reason of a run stopped by its stop condition begins. Such a run is a verdict on
/// its plan position (terminal: a resume does not run the position again), unlike an attempt that
/// ended for another reason (a fault that could not be applied, a controller that died).
pub const STOP_CONDITION_REASON: &str = "stop condition: ";

/// Whether an energy figure was read from hardware counters or computed from a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnergySource {
    Measured,
    Modelled,
}

impl EnergySource {
    pub fn as_str(self) -> &'static str {
        match self {
            EnergySource::Measured => "measured",
            EnergySource::Modelled => "modelled",
        }
    }
}

/// Per-second figures the collector adds to the load driver's (all optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CollectorSample {
    pub second: u64,
    pub cart_mean_items: Option<f64>,
    pub carts: Option<u64>,
    pub pool_in_flight: Option<u64>,
    pub pool_queued: Option<u64>,
    pub cpu_seconds: Option<f64>,
    pub energy_joules: Option<f64>,
    /// Anything else worth keeping, as a JSON object.
    pub extra: Option<serde_json::Value>,
}

/// A breaker transition as stored: the breaker's transition event, its times and sequence as the store's
/// integers. The state and reason columns hold their wire names, the detail its JSON object (keys sorted).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TransitionRecord {
    pub at_ms: i64,
    pub service: String,
    pub breaker: String,
    pub from: State,
    pub to: State,
    pub reason: Reason,
    #[serde(serialize_with = "detail_sorted")]
    pub detail: TransitionDetail,
    pub seq: i64,
    pub shadow: bool,
    /// Where it came from when the breaker is not a Tolerant one (`prometheus:<url>`, `push`).
    pub source: Option<String>,
}

impl TransitionRecord {
    /// A transition event as stored.
    pub fn from_event(event: &breaker::TransitionEvent) -> Self {
        TransitionRecord {
            at_ms: i64::try_from(event.at_ms).unwrap_or(i64::MAX),
            service: event.service.clone(),
            breaker: event.breaker.clone(),
            from: event.from,
            to: event.to,
            reason: event.reason,
            detail: event.detail.clone(),
            seq: i64::try_from(event.seq).unwrap_or(i64::MAX),
            shadow: event.shadow,
            source: event.source.clone(),
        }
    }

    /// The detail as stored: its JSON object, keys sorted.
    pub fn detail_json(&self) -> serde_json::Value {
        serde_json::to_value(&self.detail).unwrap_or(serde_json::Value::Null)
    }
}

/// The detail serialised as it is stored (keys sorted, as before it was typed).
fn detail_sorted<S: serde::Serializer>(
    detail: &TransitionDetail,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serde_json::to_value(detail)
        .map_err(serde::ser::Error::custom)?
        .serialize(serializer)
}

/// A time the fault was on the agent during a run, in seconds from the run's start.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AppliedPeriod {
    pub from_s: f64,
    /// `None`: never removed while the run lasted (its lease ended it).
    pub to_s: Option<f64>,
}

/// The periods a run's fault was actually on, from its events: each runner `applied` to the next `removed` of
/// the same fault (or the agent's `agent:expired` when the lease ran out), from `origin_ms` (the run's start).
pub fn applied_periods(events: &[RunEventRecord], origin_ms: i64) -> Vec<AppliedPeriod> {
    let seconds = |at_ms: i64| (at_ms - origin_ms) as f64 / 1000.0;
    let mut periods: Vec<AppliedPeriod> = Vec::new();
    let mut on: Option<&str> = None;
    for event in events {
        let ends = matches!(
            event.event,
            RunEvent::Fault(FaultCall::Removed { .. })
                | RunEvent::Agent(super::AgentReport::Event(
                    agent::api::AgentEvent::Expired { .. }
                ))
        );
        match (&event.event, on) {
            (RunEvent::Fault(FaultCall::Applied(_)), None) => {
                on = Some(&event.fault_id);
                periods.push(AppliedPeriod {
                    from_s: seconds(event.at_ms),
                    to_s: None,
                });
            }
            (_, Some(id)) if ends && id == event.fault_id => {
                on = None;
                if let Some(last) = periods.last_mut() {
                    last.to_s = Some(seconds(event.at_ms));
                }
            }
            _ => {}
        }
    }
    periods
}

/// Everything one run produced, written in one transaction when it ends.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// `Finished`, `Aborted` or `Failed` (with `abort_reason`).
    pub status: Status,
    pub abort_reason: Option<String>,
    /// Requests the load generator itself could not send or whose task panicked (see
    /// [`crate::load::DriverFailures`]): not the system's answers, in no outcome count.
    pub load_errors: u64,
    pub finished_at_ms: i64,
    /// Endpoint names, indexed as in the seconds' endpoint ids.
    pub endpoint_names: Vec<String>,
    /// Load driver seconds, warmup included.
    pub seconds: Vec<SecondStats>,
    /// Load driver totals per endpoint (measured part).
    pub endpoints: Vec<EndpointReport>,
    pub collector: Vec<CollectorSample>,
    pub transitions: Vec<TransitionRecord>,
    /// The run's event log (its fault's timeline), by time.
    pub events: Vec<RunEventRecord>,
    pub energy: Option<(f64, EnergySource)>,
    /// How well each `[[sources]]` Prometheus source was seen during the run.
    pub sources: Vec<SourceHealth>,
}

impl RunRecord {
    /// Outcomes over every endpoint (measured part).
    pub fn outcomes(&self) -> OutcomeCounts {
        let mut total = OutcomeCounts::default();
        for endpoint in &self.endpoints {
            total.merge(&endpoint.stats.outcomes);
        }
        total
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentRow {
    pub id: ExperimentId,
    pub name: String,
    pub spec_toml: String,
    pub seed: i64,
    pub planned_runs: i64,
    pub status: Status,
    pub created_at_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    pub abort_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRow {
    pub id: RunId,
    pub experiment_id: ExperimentId,
    pub plan_index: i64,
    pub round_index: i64,
    pub condition_index: i64,
    pub condition_label: String,
    pub fault_kind: String,
    pub fault_rate: f64,
    pub breaker_mode: String,
    pub condition_json: String,
    pub status: Status,
    pub warmup_ms: i64,
    pub duration_ms: i64,
    pub started_at_ms: Option<i64>,
    pub finished_at_ms: Option<i64>,
    pub abort_reason: Option<String>,
    /// Totals of the measured part; `None` until the run finished.
    pub outcomes: Option<OutcomeCounts>,
    pub energy: Option<(f64, EnergySource)>,
    /// Requests the load generator itself failed (in no outcome count); `None` until the run ended
    /// (and for runs stored before the count existed).
    pub load_errors: Option<u64>,
}

impl RunRow {
    /// Aborted by its stop condition: a verdict on the plan position, never run again.
    pub fn stopped_by_condition(&self) -> bool {
        self.status == Status::Aborted
            && self
                .abort_reason
                .as_deref()
                .is_some_and(|reason| reason.starts_with(STOP_CONDITION_REASON))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleRow {
    pub second: i64,
    pub warmup: bool,
    pub outcomes: OutcomeCounts,
    pub collector: CollectorSample,
}

/// The latency percentiles stored with a histogram (the columns `p50_us` … `max_us`), in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StoredLatency {
    pub p50_us: i64,
    pub p95_us: i64,
    pub p99_us: i64,
    pub max_us: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointSecondRow {
    pub second: i64,
    pub endpoint: String,
    pub outcomes: OutcomeCounts,
    #[serde(flatten)]
    pub latency: StoredLatency,
    /// p95 of the second's ok requests (`None`: none succeeded, or stored before this was kept).
    pub p95_ok_us: Option<i64>,
    /// p95 of the second's other requests (failed, rejected, timed out; `None`: there were none).
    pub p95_failed_us: Option<i64>,
    #[serde(skip)]
    pub histogram_v2: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointHistogramRow {
    pub endpoint: String,
    pub outcomes: OutcomeCounts,
    #[serde(flatten)]
    pub latency: StoredLatency,
    pub mean_us: f64,
    #[serde(skip)]
    pub histogram_v2: Vec<u8>,
    #[serde(skip)]
    pub histogram_ok_v2: Vec<u8>,
}

/// Identifies a stored annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct AnnotationId(pub i64);

/// Longest annotation text accepted, in characters (after trimming).
pub const MAX_ANNOTATION_CHARS: usize = 2_000;

/// Longest author accepted, in characters (after trimming).
pub const MAX_AUTHOR_CHARS: usize = 100;

/// An annotation to store: free text at a wall-clock time, tied to the experiment and run it was
/// written during when there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAnnotation {
    pub at_ms: i64,
    pub text: String,
    /// Who or what wrote it, when the request said.
    pub author: Option<String>,
    pub experiment_id: Option<ExperimentId>,
    pub run_id: Option<RunId>,
}

/// A stored annotation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnnotationRow {
    pub id: AnnotationId,
    pub at_ms: i64,
    pub text: String,
    pub author: Option<String>,
    pub experiment_id: Option<ExperimentId>,
    pub run_id: Option<RunId>,
}

#[cfg(test)]
mod tests {
    use super::super::RunEventKind;
    use super::Status;

    /// The serialised name (what the dashboard and the JSON report carry) is the stored one.
    #[test]
    fn serialised_names_are_the_stored_ones() {
        for kind in RunEventKind::ALL {
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(serde_json::from_str::<RunEventKind>(&json).unwrap(), kind);
            assert_eq!(RunEventKind::parse(kind.as_str()), Some(kind));
        }
        for status in Status::ALL {
            assert_eq!(Status::parse(status.as_str()), Some(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
            assert_eq!(serde_json::from_str::<Status>(&json).unwrap(), status);
        }
    }
}
