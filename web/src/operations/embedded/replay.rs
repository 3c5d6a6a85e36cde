//! A stored run's timeline for the results page's replay, in the live page's shapes (so one drawing code
//! serves both): a live sample per stored second, the stored transitions, the fault's changes.

use agent::api::AgentEvent;
use controller::load::endpoint;
use controller::store::{
    AgentReport, EndpointSecondRow, ExperimentId, RunEvent, RunEventRecord, RunId, RunRow,
    SampleRow, TransitionRecord,
};

use super::load_seconds::latency_buckets;
use super::{EmbeddedOperations, store_failed};
use crate::hub::{EndpointSample, FaultChange, FaultChangeEvent, LiveSample};
use crate::operations::{OperationError, RunLine, RunTimeline};

impl EmbeddedOperations {
    pub(super) async fn run_timeline_of(
        &self,
        experiment: i64,
        run: i64,
    ) -> Result<Option<RunTimeline>, OperationError> {
        let store = &self.inner.store;
        let runs = store
            .runs(ExperimentId(experiment))
            .await
            .map_err(store_failed)?;
        let Some(row) = runs.into_iter().find(|row| row.id == RunId(run)) else {
            return Ok(None);
        };
        let samples = store.samples(row.id).await.map_err(store_failed)?;
        let seconds = store.endpoint_seconds(row.id).await.map_err(store_failed)?;
        let transitions = store.transitions(row.id).await.map_err(store_failed)?;
        let faults = store.run_events(row.id).await.map_err(store_failed)?;
        Ok(Some(timeline_of(
            &row,
            &samples,
            &seconds,
            transitions,
            &faults,
        )))
    }
}

/// How the results page lists a run.
pub(super) fn run_line(row: &RunRow) -> RunLine {
    RunLine {
        id: row.id.0,
        position: row.plan_index + 1,
        condition: row.condition_label.clone(),
        round: row.round_index + 1,
        status: row.status,
    }
}

/// The run's stored rows as the live page's events. A stored second `s` becomes a sample at the end of that
/// second of the load (`started + (s + 1) s`), as the live sampler stamps them.
pub(super) fn timeline_of(
    run: &RunRow,
    samples: &[SampleRow],
    seconds: &[EndpointSecondRow],
    transitions: Vec<TransitionRecord>,
    faults: &[RunEventRecord],
) -> RunTimeline {
    let started = run.started_at_ms.unwrap_or(0);
    let at = |second: i64| started + (second + 1) * 1000;
    let unsigned = |value: i64| u64::try_from(value).unwrap_or(0);
    let live_samples: Vec<LiveSample> = samples
        .iter()
        .map(|sample| {
            let rows = seconds.iter().filter(|row| row.second == sample.second);
            let endpoints: Vec<EndpointSample> = rows
                .clone()
                .map(|row| EndpointSample {
                    name: row.endpoint.clone(),
                    requests: row.outcomes.total(),
                    outcomes: row.outcomes,
                    ok_p50_us: None,
                    failed_p50_us: None,
                    p50_us: unsigned(row.latency.p50_us),
                    p95_us: unsigned(row.latency.p95_us),
                    p99_us: unsigned(row.latency.p99_us),
                    ok_p95_us: row.p95_ok_us.map(unsigned),
                    failed_p95_us: row.p95_failed_us.map(unsigned),
                    buckets: latency_buckets(&row.histogram_v2),
                })
                .collect();
            let cart_p95_us = rows
                .filter(|row| row.endpoint == endpoint::NAMES[endpoint::VIEW_CART])
                .map(|row| unsigned(row.latency.p95_us))
                .next();
            LiveSample {
                at_ms: unsigned(at(sample.second)),
                second: unsigned(sample.second),
                warmup: sample.warmup,
                outcomes: sample.outcomes,
                endpoints,
                cart_mean_items: sample.collector.cart_mean_items,
                cart_p95_us,
                pools: Vec::new(),
            }
        })
        .collect();
    let last_second = samples.iter().map(|sample| sample.second).max();
    let ended_at_ms = run
        .finished_at_ms
        .or(last_second.map(at))
        .unwrap_or(started + run.warmup_ms + run.duration_ms);
    RunTimeline {
        run: run_line(run),
        started_at_ms: started,
        measured_from_ms: started + run.warmup_ms.max(0),
        ended_at_ms,
        transitions,
        samples: live_samples,
        faults: faults
            .iter()
            .map(|event| fault_change(run, event))
            .collect(),
    }
}

/// A stored fault event as the live page's fault change: the agent's own events (`agent:applied`, …) and the
/// runner's (`applied`, `removed`, …) both; the rate is the fault's (stored in the agent's event, decoded into
/// the agent's own [`AgentEvent`], else the run's).
fn fault_change(run: &RunRow, event: &RunEventRecord) -> FaultChange {
    let rate = match &event.event {
        RunEvent::Agent(AgentReport::Event(AgentEvent::Applied { fault, .. })) => fault.rate(),
        _ => run.fault_rate,
    };
    FaultChange {
        at_ms: u64::try_from(event.at_ms).unwrap_or(0),
        event: FaultChangeEvent::of_stored(event.event.kind()),
        fault_id: event.fault_id.clone(),
        target: String::new(),
        kind: run.fault_kind.clone(),
        rate,
        detail: String::new(),
        matches: String::new(),
        expires_at_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use controller::load::{OutcomeCounts, new_histogram, serialize_histogram};
    use controller::store::{CollectorSample, FaultCall, Status, StoredLatency};

    fn run() -> RunRow {
        RunRow {
            id: RunId(7),
            experiment_id: ExperimentId(1),
            plan_index: 2,
            round_index: 0,
            condition_index: 0,
            condition_label: "error@1.00/enforce".into(),
            fault_kind: "error".into(),
            fault_rate: 1.0,
            breaker_mode: "enforce".into(),
            condition_json: "{}".into(),
            status: Status::Finished,
            warmup_ms: 2_000,
            duration_ms: 3_000,
            started_at_ms: Some(100_000),
            finished_at_ms: Some(105_200),
            abort_reason: None,
            outcomes: None,
            energy: None,
            load_errors: None,
        }
    }

    fn second(second: i64, ok: u64, rejected: u64) -> SampleRow {
        SampleRow {
            second,
            warmup: second < 2,
            outcomes: OutcomeCounts {
                ok,
                rejected,
                ..OutcomeCounts::default()
            },
            collector: CollectorSample {
                second: u64::try_from(second).unwrap(),
                cart_mean_items: Some(second as f64),
                ..CollectorSample::default()
            },
        }
    }

    #[test]
    fn stored_seconds_become_live_samples_with_the_split_latency() {
        let mut histogram = new_histogram();
        histogram.record(800_000).unwrap();
        histogram.record(1_000).unwrap();
        let checkout = EndpointSecondRow {
            second: 3,
            endpoint: endpoint::NAMES[endpoint::CHECKOUT].into(),
            outcomes: OutcomeCounts {
                ok: 1,
                rejected: 1,
                ..OutcomeCounts::default()
            },
            latency: StoredLatency {
                p50_us: 1_000,
                p95_us: 800_000,
                p99_us: 800_000,
                max_us: 800_000,
            },
            p95_ok_us: Some(800_000),
            p95_failed_us: Some(1_000),
            histogram_v2: serialize_histogram(&histogram),
        };
        let transition = TransitionRecord {
            at_ms: 102_500,
            service: "frontend".into(),
            breaker: "frontend->checkout".into(),
            from: breaker::State::Closed,
            to: breaker::State::Open,
            reason: breaker::Reason::FailureRate,
            detail: breaker::TransitionDetail::default(),
            seq: 1,
            shadow: false,
            source: None,
        };
        let applied = RunEventRecord {
            at_ms: 99_900,
            fault_id: "run-7".into(),
            // The agent's event as the runner stores it.
            event: RunEvent::agent(
                serde_json::from_value(serde_json::json!({
                    "event": "applied", "id": "run-7", "lease_ms": 30_000, "renewed": false, "at_ms": 99_900,
                    "seq": 1, "fault": {"kind": "error", "status": 500, "rate": 0.5}
                }))
                .expect("the agent's event"),
            ),
        };
        let removed = RunEventRecord {
            at_ms: 105_100,
            fault_id: "run-7".into(),
            event: RunEvent::Fault(FaultCall::Removed { period: None }),
        };
        let timeline = timeline_of(
            &run(),
            &[second(0, 5, 0), second(3, 1, 1)],
            &[checkout],
            vec![transition.clone()],
            &[applied, removed],
        );
        assert_eq!(timeline.run.position, 3);
        assert_eq!(timeline.run.round, 1);
        assert_eq!(
            (
                timeline.started_at_ms,
                timeline.measured_from_ms,
                timeline.ended_at_ms
            ),
            (100_000, 102_000, 105_200)
        );
        assert_eq!(timeline.transitions, vec![transition]);
        let stamps: Vec<u64> = timeline.samples.iter().map(|s| s.at_ms).collect();
        assert_eq!(stamps, vec![101_000, 104_000], "at the end of each second");
        assert!(timeline.samples[0].endpoints.is_empty());
        assert!(timeline.samples[0].warmup);
        let sample = &timeline.samples[1];
        assert_eq!(sample.outcomes.rejected, 1);
        assert_eq!(sample.cart_mean_items, Some(3.0));
        let endpoint = &sample.endpoints[0];
        assert_eq!(
            (endpoint.ok_p95_us, endpoint.failed_p95_us),
            (Some(800_000), Some(1_000))
        );
        assert_eq!(endpoint.buckets.iter().sum::<u64>(), 2);
        assert_eq!(endpoint.buckets[0], 1, "the 1 ms rejection in ≤1 ms");
        let events: Vec<(&str, f64)> = timeline
            .faults
            .iter()
            .map(|f| (f.event.as_str(), f.rate))
            .collect();
        assert_eq!(events, vec![("applied", 0.5), ("removed", 1.0)]);
    }
}
