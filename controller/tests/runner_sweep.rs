//! A small sweep against the embedded boutique stack: 2 fault rates × 2 breaker modes × 2 rounds,
//! seconds each (time_scale 10). Every run is stored, and the figures are plausible: with every
//! charge failing and breakers enforcing, a breaker opened and checkouts were rejected; in shadow
//! mode nothing was rejected.

use controller::load::endpoint;
use controller::runner::{Progress, Runner, RunnerError};
use controller::spec::BreakerMode;
use controller::store::{RunEvent, RunEventKind, Status};
use controller::test_support::{self, TempStore};
use controller::testbed::start_embedded_stack;

const SWEEP: &str = r#"
name = "small-sweep"
rounds = 2
duration = "30s"
warmup = "5s"
time_scale = 10.0
order = "randomized"
seed = 5

[load]
users = 12
think_time = ["200ms", "1s"]
timeout = "5s"

[fault]
target = "payment"
kind = "error"
status = 500
rates = [0.0, 1.0]

[breaker]
modes = ["shadow", "enforce"]

[breaker.trip]
consecutive_failures = 3

[breaker.open]
base = "60s"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_sweep_stores_every_run_with_plausible_figures() {
    let spec = test_support::spec(SWEEP);
    let db = TempStore::new("sweep");
    let store = db.open().await;
    let (stack, testbed) = start_embedded_stack(&spec).await.unwrap();
    let runner = Runner::new(store.clone(), testbed);

    let mut finished = 0;
    let experiment = runner
        .run_experiment(&spec, |event| {
            if let Progress::RunFinished { .. } = event {
                finished += 1;
            }
        })
        .await
        .unwrap();
    stack.shutdown().await;

    assert_eq!(finished, 8);
    let row = store.experiment(experiment).await.unwrap().unwrap();
    assert_eq!(row.status, Status::Finished);
    let runs = store.runs(experiment).await.unwrap();
    assert_eq!(runs.len(), 8);
    let checkout = endpoint::NAMES[endpoint::CHECKOUT];

    for run in &runs {
        assert_eq!(run.status, Status::Finished, "{}", run.condition_label);
        let outcomes = run.outcomes.unwrap();
        assert!(outcomes.total() > 0, "{}: no requests", run.condition_label);
        let samples = store.samples(run.id).await.unwrap();
        assert_eq!(
            samples.len(),
            4,
            "{}: 0.5 s warmup + 3 s",
            run.condition_label
        );
        // The collector sampled pools and carts once per second.
        assert!(
            samples.iter().any(|s| s.collector.pool_in_flight.is_some()),
            "{}: {samples:?}",
            run.condition_label
        );
        assert!(
            samples
                .iter()
                .any(|s| s.collector.cart_mean_items.is_some()),
            "{}",
            run.condition_label
        );
        // Energy per run, labelled (this VM has no RAPL: modelled; a machine with it: measured).
        let (joules, _source) = run.energy.expect("energy figure per run");
        assert!(joules >= 0.0, "{}: {joules}", run.condition_label);
        assert!(samples.iter().any(|s| s.collector.cpu_seconds.is_some()));
        let histograms = store.endpoint_histograms(run.id).await.unwrap();
        let transitions = store.transitions(run.id).await.unwrap();
        let (probes, faults): (Vec<_>, Vec<_>) = store
            .run_events(run.id)
            .await
            .unwrap()
            .into_iter()
            .partition(|f| f.event.kind() == RunEventKind::ProbeBuckets);
        // Every run's end read the agent's probes in 10 ms buckets, once.
        match &probes[..] {
            [probes] => match &probes.event {
                RunEvent::ProbeBuckets(read) => {
                    assert_eq!(read.agents.len(), 1, "{read:?}");
                    assert!(read.errors.is_empty(), "{read:?}");
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{}: {other:?}", run.condition_label),
        }
        let rejected: u64 = histograms.iter().map(|h| h.outcomes.rejected).sum();
        let label = &run.condition_label;

        if run.fault_rate == 0.0 {
            assert!(faults.is_empty(), "{label}: no fault at 0 %");
            assert_eq!(rejected, 0, "{label}");
            assert!(outcomes.ok > 0, "{label}");
        } else {
            // The runner's own control calls, in order…
            let events: Vec<&str> = faults
                .iter()
                .map(|f| f.event.kind().as_str())
                .filter(|e| !e.starts_with("agent:"))
                .collect();
            // …and the agent's account of the same fault.
            let agent: Vec<&str> = faults
                .iter()
                .map(|f| f.event.kind().as_str())
                .filter(|e| e.starts_with("agent:"))
                .collect();
            assert!(agent.contains(&"agent:applied"), "{label}: {agent:?}");
            assert!(agent.contains(&"agent:removed"), "{label}: {agent:?}");
            assert_eq!(events.first(), Some(&"applied"), "{label}: {events:?}");
            assert_eq!(events.last(), Some(&"removed"), "{label}: {events:?}");
        }

        let opened = transitions.iter().any(|t| t.to == breaker::State::Open);
        if run.breaker_mode == BreakerMode::Shadow.as_str() {
            assert_eq!(rejected, 0, "{label}: shadow mode never rejects");
        }
        if run.fault_rate == 1.0 && run.breaker_mode == BreakerMode::Enforce.as_str() {
            assert!(opened, "{label}: a breaker opened: {transitions:?}");
            let checkouts = histograms.iter().find(|h| h.endpoint == checkout).unwrap();
            assert!(
                checkouts.outcomes.rejected > 0,
                "{label}: checkouts rejected: {:?}",
                checkouts.outcomes
            );
            assert_eq!(checkouts.outcomes.ok, 0, "{label}: no checkout can succeed");
        }
        if run.fault_rate == 1.0 && run.breaker_mode == BreakerMode::Shadow.as_str() {
            // Shadow breakers record what they would have done.
            assert!(
                transitions.iter().all(|t| t.shadow),
                "{label}: {transitions:?}"
            );
        }
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_condition_aborts_the_run_and_clears_the_fault() {
    let spec = test_support::spec(
        r#"
name = "stop"
rounds = 1
duration = "600s"
warmup = "5s"
time_scale = 10.0
order = "fixed"

[load]
users = 6
think_time = ["200ms", "1s"]

[fault]
target = "payment"
rates = [1.0]

[breaker]
modes = ["disabled"]

[stop]
# Any failed checkout within 3 s of measured time (checkout is 1 task in 19) stops the run.
availability_below = 0.9999
window = "3s"
"#,
    );
    let db = TempStore::new("stop");
    let store = db.open().await;
    let (stack, testbed) = start_embedded_stack(&spec).await.unwrap();
    let runner = Runner::new(store.clone(), testbed);
    let experiment = runner.run_experiment(&spec, |_| {}).await.unwrap();
    stack.shutdown().await;

    let runs = store.runs(experiment).await.unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.status, Status::Aborted);
    let reason = run.abort_reason.as_deref().unwrap_or("");
    assert!(reason.starts_with("stop condition"), "{reason}");
    // Stopped well before the planned 60.5 s: the stored seconds end early.
    let samples = store.samples(run.id).await.unwrap();
    assert!(samples.len() < 30, "{} seconds stored", samples.len());
    let events: Vec<String> = store
        .run_events(run.id)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.event.kind().as_str().to_owned())
        .filter(|e| !e.starts_with("agent:") && !e.starts_with("probes:"))
        .collect();
    assert_eq!(
        events.first().map(String::as_str),
        Some("applied"),
        "{events:?}"
    );
    assert_eq!(
        events.last().map(String::as_str),
        Some("removed"),
        "{events:?}"
    );
    store.close().await;
}

/// Preflight against the embedded stack: it passes as started; a service nobody answers for, a wrong token, or an
/// agent nobody answers for each fail naming the target, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preflight_names_the_target_that_does_not_answer_or_refuses_the_token() {
    let spec = test_support::spec(SWEEP);
    let db = TempStore::new("preflight");
    let store = db.open().await;
    let (stack, testbed) = start_embedded_stack(&spec).await.unwrap();
    Runner::new(store.clone(), testbed.clone())
        .check_testbed()
        .await
        .expect("the embedded stack passes its preflight");

    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let nowhere = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);

    let mut missing_cart = testbed.clone();
    for (name, url) in &mut missing_cart.services {
        if name == "cart" {
            url.clone_from(&nowhere);
        }
    }
    let mut wrong_token = testbed.clone();
    wrong_token.token = "not-the-token".into();
    let mut missing_agent = testbed.clone();
    missing_agent.agent.clone_from(&nowhere);
    for (testbed, named, says) in [
        (missing_cart, "targets.cart:", "does not answer"),
        (wrong_token, "targets.", "refuses the token"),
        (missing_agent, "targets.agent:", "does not answer"),
    ] {
        let error = Runner::new(store.clone(), testbed)
            .check_testbed()
            .await
            .expect_err("preflight should fail")
            .to_string();
        assert!(error.contains(named) && error.contains(says), "{error}");
    }
    stack.shutdown().await;
    assert!(store.experiments().await.unwrap().is_empty());
    store.close().await;
}

/// Cancelling a run (an abort, Ctrl-C) ends its scope as a finish does: when `run_experiment` returns, the
/// fault is already off the agent (its lease is far from over, and nobody halted it), nothing of the run is
/// stored, and the attempt and the experiment are marked interrupted, so a resume redoes the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_removes_its_fault_before_it_returns() {
    let spec = test_support::spec(
        r#"
name = "cancelled"
rounds = 1
duration = "60s"
warmup = "1s"

[load]
users = 2
think_time = ["100ms", "300ms"]

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]
lease = "60s"

[breaker]
modes = ["disabled"]
"#,
    );
    let db = TempStore::new("cancel");
    let store = db.open().await;
    let (stack, testbed) = start_embedded_stack(&spec).await.unwrap();
    let admin = controller::testbed::AdminClient::new(testbed.token.clone());
    let faults_url = format!("{}/_agent/faults", testbed.agent);
    let fault_count = || async {
        let body = admin
            .call(
                http::Method::GET,
                &faults_url,
                controller::testbed::Credential::Anonymous,
                None,
                bytes::Bytes::new(),
            )
            .await
            .expect("fault list");
        serde_json::from_slice::<Vec<serde_json::Value>>(&body)
            .expect("JSON list")
            .len()
    };
    let cancel = tokio_util::sync::CancellationToken::new();
    let runner = Runner::new(store.clone(), testbed.clone()).with_cancel(cancel.clone());
    let cancel_once_faulted = async {
        for _ in 0..200 {
            if fault_count().await > 0 {
                cancel.cancel();
                return true;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        false
    };
    let (result, cancelled) =
        tokio::join!(runner.run_experiment(&spec, |_| {}), cancel_once_faulted);
    assert!(cancelled, "the run's fault never showed on the agent");
    assert!(matches!(result, Err(RunnerError::Cancelled)), "{result:?}");
    assert_eq!(fault_count().await, 0, "the run removed its fault");
    let experiment = store.experiments().await.unwrap().remove(0);
    assert_eq!(experiment.status, Status::Interrupted);
    let runs = store.runs(experiment.id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, Status::Interrupted);
    assert!(store.samples(runs[0].id).await.unwrap().is_empty());
    stack.shutdown().await;
    store.close().await;
}
