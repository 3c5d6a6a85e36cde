//! Storage tests against a temporary SQLite file, and against PostgreSQL too when
//! `TOLERANT_TEST_PG_URL` is set (e.g. `postgres://tolerant@127.0.0.1/tolerant_test`): the stores, the spec and
//! the records they share; one topic per file beside this one.

use std::time::Duration;

use serde_json::json;

use super::writing::ROWS_PER_INSERT;
use super::*;
use crate::load::{EndpointReport, Recorder, RequestOutcome, deserialize_histogram, endpoint};
use crate::spec::ExperimentSpec;
use crate::test_support::{self, TempStore};

mod annotations;
mod containers;
mod experiments;
mod migration_status;
mod opening;
mod run_events;
mod runs;
mod sources;

const SPEC: &str = r#"
name = "store-test"
rounds = 2
duration = "10s"
warmup = "2s"
seed = 9

[load]
users = 3

[fault]
target = "payment"
rates = [0.0, 1.0]

[breaker]
modes = ["disabled", "enforce"]
"#;

/// The stores every scenario runs against (SQLite always, PostgreSQL when configured), and the temporary
/// directory the SQLite one lives in.
async fn stores() -> (Vec<Store>, TempStore) {
    let file = TempStore::new("store");
    (file.stores().await, file)
}

pub(crate) fn record(status: Status, warmup: Duration) -> RunRecord {
    let names: Vec<String> = endpoint::NAMES.iter().map(|n| (*n).to_owned()).collect();
    let mut recorder = Recorder::new(names.len(), warmup, None);
    let ms = Duration::from_millis(1);
    for i in 0..40u32 {
        let at = ms * (i * 100);
        let outcome = match i % 4 {
            0 | 1 => RequestOutcome::Ok,
            2 => RequestOutcome::Failed,
            _ => RequestOutcome::Rejected,
        };
        recorder.record(endpoint::PRODUCT, at, outcome, ms * (i + 1), Duration::ZERO);
        recorder.record(
            endpoint::CHECKOUT,
            at,
            RequestOutcome::Ok,
            ms * 3,
            Duration::ZERO,
        );
    }
    let (seconds, totals) = recorder.finish(4);
    RunRecord {
        status,
        abort_reason: (status == Status::Aborted).then(|| "availability below 0.2 for 10s".into()),
        load_errors: 0,
        finished_at_ms: 2_000,
        endpoint_names: names.clone(),
        seconds,
        endpoints: names
            .into_iter()
            .zip(totals)
            .map(|(name, stats)| EndpointReport { name, stats })
            .collect(),
        collector: vec![CollectorSample {
            second: 1,
            cart_mean_items: Some(2.5),
            carts: Some(3),
            pool_in_flight: Some(4),
            pool_queued: Some(0),
            cpu_seconds: Some(0.25),
            energy_joules: Some(12.5),
            extra: Some(json!({"agent_injected": 7})),
        }],
        transitions: vec![
            TransitionRecord {
                at_ms: 1_500,
                service: "checkout".into(),
                breaker: "checkout->payment".into(),
                from: breaker::State::Closed,
                to: breaker::State::Open,
                reason: breaker::Reason::ConsecutiveFailures,
                detail: breaker::TransitionDetail {
                    failures: Some(5),
                    ..Default::default()
                },
                seq: 1,
                shadow: false,
                source: None,
            },
            TransitionRecord {
                at_ms: 1_700,
                service: "shop".into(),
                breaker: "inventory".into(),
                from: breaker::State::Closed,
                to: breaker::State::Open,
                reason: breaker::Reason::Observed,
                detail: breaker::TransitionDetail::default(),
                seq: 1,
                shadow: false,
                source: Some("prometheus:http://127.0.0.1:9000/metrics".into()),
            },
        ],
        events: vec![
            RunEventRecord {
                at_ms: 1_000,
                fault_id: "run-1".into(),
                event: RunEvent::Fault(FaultCall::Applied(PutFault::Agent {
                    fault: serde_json::from_value(
                        json!({"kind": "error", "status": 500, "rate": 1.0}),
                    )
                    .unwrap(),
                    period: None,
                })),
            },
            RunEventRecord {
                at_ms: 1_900,
                fault_id: "run-1".into(),
                event: RunEvent::Fault(FaultCall::Removed { period: None }),
            },
        ],
        energy: Some((40.0, EnergySource::Modelled)),
        sources: Vec::new(),
    }
}

async fn new_experiment(store: &Store) -> (ExperimentSpec, ExperimentId) {
    let spec = test_support::spec(SPEC);
    let id = store.create_experiment(&spec, 1_000).await.unwrap();
    (spec, id)
}

/// `experiment`'s run at plan position `index` of `spec`, started at `now_ms` with no warmup and 10 s to go.
async fn start_run_of(
    store: &Store,
    spec: &ExperimentSpec,
    experiment: ExperimentId,
    index: usize,
    now_ms: i64,
) -> RunId {
    store
        .start_run(
            experiment,
            &spec.plan()[index],
            Duration::ZERO,
            Duration::from_secs(10),
            now_ms,
        )
        .await
        .unwrap()
}

/// A new experiment's run at plan position `index`, started (no rows yet).
async fn started_run(store: &Store, index: usize) -> RunId {
    let (spec, experiment) = new_experiment(store).await;
    store
        .start_run(
            experiment,
            &spec.plan()[index],
            Duration::from_secs(2),
            Duration::from_secs(10),
            1_000,
        )
        .await
        .unwrap()
}
