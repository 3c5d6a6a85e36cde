//! Runs that do not end as planned say so: a panic in a run's own future (here its progress report, code the
//! caller gives the runner) is caught at the run's scope — the fault is removed first, the run is stored as
//! `failed` with the panic's message, and the experiment is aborted instead of staying `running`.

use bytes::Bytes;
use controller::runner::{Progress, Runner, RunnerError};
use controller::store::Status;
use controller::test_support::{self, TempStore};
use controller::testbed::{AdminClient, start_embedded_stack};
use http::Method;

const SPEC: &str = r#"
name = "panicking-run"
rounds = 1
duration = "20s"
warmup = "1s"
time_scale = 10.0
seed = 3

[load]
users = 2
think_time = ["100ms", "200ms"]

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]

[breaker]
modes = ["enforce"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_in_a_run_stores_it_failed_with_its_fault_removed() {
    let spec = test_support::spec(SPEC);
    let db = TempStore::new("run-failures");
    let store = db.open().await;
    let (stack, testbed) = start_embedded_stack(&spec).await.unwrap();
    let agent = testbed.agent.clone();
    let admin = AdminClient::new(testbed.token.clone());
    let runner = Runner::new(store.clone(), testbed);

    let mut finished = Vec::new();
    let error = runner
        .run_experiment(&spec, |event| match event {
            // Reported once the fault is on: the panic happens with a fault to remove.
            Progress::RunStarted { .. } => panic!("the progress report exploded"),
            Progress::RunFinished { status, reason, .. } => finished.push((status, reason)),
        })
        .await
        .expect_err("a failed run ends the experiment");
    let faults = admin
        .call(
            Method::GET,
            &format!("{agent}/_agent/faults"),
            controller::testbed::Credential::Anonymous,
            None,
            Bytes::new(),
        )
        .await
        .unwrap();
    stack.shutdown().await;

    let RunnerError::RunFailed { run, reason } = error else {
        panic!("not a failed run: {error}");
    };
    assert!(reason.contains("the progress report exploded"), "{reason}");
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0].0, Status::Failed);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&faults).unwrap(),
        serde_json::json!([])
    );

    let experiment = store.experiments().await.unwrap().pop().unwrap();
    assert_eq!(experiment.status, Status::Aborted, "not left running");
    assert!(
        experiment
            .abort_reason
            .as_deref()
            .unwrap_or("")
            .contains("exploded"),
        "{:?}",
        experiment.abort_reason
    );
    let runs = store.runs(experiment.id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].id, run);
    assert_eq!(runs[0].status, Status::Failed);
    assert!(
        runs[0]
            .abort_reason
            .as_deref()
            .unwrap()
            .contains("the run panicked")
    );
    // The fault was applied, then removed by the run's end.
    let events: Vec<String> = store
        .run_events(run)
        .await
        .unwrap()
        .into_iter()
        .map(|event| event.event.kind().as_str().to_owned())
        .filter(|event| !event.starts_with("agent:"))
        .collect();
    assert_eq!(
        events.first().map(String::as_str),
        Some("applied"),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e == "removed"), "{events:?}");
    // A resume runs it again: a failed run is no verdict.
    assert!(
        store
            .terminal_plan_indices(experiment.id)
            .await
            .unwrap()
            .is_empty()
    );
    store.close().await;
}
