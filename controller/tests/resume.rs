//! Resuming an experiment, against real parts: which plan positions count as done (finished, or
//! aborted by the stop condition — a verdict, never run again), `--fresh` versus resuming the spec's
//! unfinished experiment (through the embedded stack), and the faults a dead controller left on an
//! agent reached over HTTP like a real deployment. SQLite in a temp dir; the store-level scenarios
//! run against PostgreSQL too when `TOLERANT_TEST_PG_URL` is set.

use controller::test_support::{self, TempStore};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::time::Duration;

use controller::load::{EndpointSecond, LatencySummary, OutcomeCounts, SecondStats};
use controller::report::{Format, report};
use controller::runner::{
    Progress, ResumePoint, Runner, RunnerError, StartChoice, StopMonitor, choose_start, fault_spec,
};
use controller::spec::{ExperimentSpec, PlannedRun, StopSpec};
use controller::stats::load_experiment;
use controller::store::{
    ExperimentId, RunId, RunRecord, RunRow, STOP_CONDITION_REASON, Status, Store,
};
use controller::testbed::{AdminClient, Testbed, start_embedded_stack};

/// Five positions (one round, fixed order): enough for every kind of stored attempt at once.
const FIVE_POSITIONS: &str = r#"
name = "resume-store"
duration = "10s"
order = "fixed"

[load]
users = 1

[fault]
target = "payment"
kind = "error"
status = 500
rates = [0.0, 0.25, 0.5, 0.75, 1.0]

[breaker]
modes = ["disabled"]
"#;

/// Runs of one second against the embedded stack (10 s at time_scale 10), positions in plan order.
fn short_runs(name: &str, rates: &str) -> String {
    format!(
        r#"
name = "{name}"
duration = "10s"
time_scale = 10.0
order = "fixed"
seed = 3

[load]
users = 2
think_time = ["100ms", "300ms"]
timeout = "2s"

[fault]
target = "payment"
kind = "error"
status = 500
rates = {rates}
lease = "300s"

[breaker]
modes = ["enforce"]
"#
    )
}

/// The reason a real stop monitor gives when every request of its window failed.
fn stop_reason() -> String {
    let mut monitor = StopMonitor::new(&StopSpec {
        availability_below: Some(0.5),
        window: Duration::from_secs(1),
    })
    .expect("a threshold makes a monitor");
    let failing = SecondStats {
        second: 3,
        warmup: false,
        endpoints: vec![EndpointSecond {
            endpoint: 0,
            outcomes: OutcomeCounts {
                failed: 10,
                ..OutcomeCounts::default()
            },
            latency: LatencySummary::default(),
            latency_ok: LatencySummary::default(),
            latency_failed: LatencySummary::default(),
            histogram_v2: Vec::new(),
            outcome_histograms_v2: None,
        }],
    };
    monitor
        .observe(&failing)
        .expect("the window is all failures")
}

/// How a run ends, without data (the store keeps whatever the record holds).
fn ended(status: Status, abort_reason: Option<String>) -> RunRecord {
    RunRecord {
        status,
        abort_reason,
        load_errors: 0,
        finished_at_ms: 20,
        endpoint_names: Vec::new(),
        seconds: Vec::new(),
        endpoints: Vec::new(),
        collector: Vec::new(),
        transitions: Vec::new(),
        events: Vec::new(),
        energy: None,
        sources: Vec::new(),
    }
}

async fn start(store: &Store, spec: &ExperimentSpec, id: ExperimentId, at: &PlannedRun) -> RunId {
    store
        .start_run(id, at, spec.run_warmup(), spec.run_duration(), 10)
        .await
        .expect("start run")
}

/// A stored experiment left by a controller that died: the runs of `ending` ended as given (by
/// plan position), a `running` attempt at `running`, nothing at the other positions.
async fn left_by_a_dead_controller(
    store: &Store,
    spec: &ExperimentSpec,
    ending: &[(usize, Status, Option<String>)],
    running: usize,
) -> ExperimentId {
    let plan = spec.plan();
    let id = store.create_experiment(spec, 1).await.expect("create");
    store
        .set_experiment_status(id, Status::Running, 2, None)
        .await
        .expect("status");
    for (position, status, reason) in ending {
        let run = start(store, spec, id, &plan[*position]).await;
        store
            .finish_run(run, &ended(*status, reason.clone()))
            .await
            .expect("finish run");
    }
    start(store, spec, id, &plan[running]).await;
    id
}

/// [`FIVE_POSITIONS`] as a dead controller left it, with every kind of stored attempt: 0 finished, 1 stopped by its
/// condition, 2 aborted because the fault could not be applied (not a verdict), 3 interrupted (marked so already),
/// 4 never started.
async fn every_kind_of_attempt(store: &Store, spec: &ExperimentSpec) -> ExperimentId {
    let id = left_by_a_dead_controller(
        store,
        spec,
        &[
            (0, Status::Finished, None),
            (1, Status::Aborted, Some(stop_reason())),
            (
                2,
                Status::Aborted,
                Some("fault not applied: PUT http://agent: connection refused".into()),
            ),
        ],
        3,
    )
    .await;
    assert_eq!(store.mark_interrupted(id, 30).await.expect("mark"), 1);
    id
}

/// Runs by plan position: (position, status, run id), in plan order then attempt order.
fn attempts(runs: &[RunRow]) -> Vec<(i64, Status, RunId)> {
    runs.iter()
        .map(|run| (run.plan_index, run.status, run.id))
        .collect()
}

#[tokio::test]
async fn terminal_positions_are_the_finished_ones_and_those_the_stop_condition_aborted() {
    let dir = TempStore::new("terminal");
    let spec = test_support::spec(FIVE_POSITIONS);
    assert!(stop_reason().starts_with(STOP_CONDITION_REASON));
    for store in dir.stores().await {
        let id = every_kind_of_attempt(&store, &spec).await;

        assert_eq!(
            store.terminal_plan_indices(id).await.expect("query"),
            [0, 1]
        );
        assert_eq!(store.finished_plan_indices(id).await.expect("query"), [0]);
        let stopped: Vec<i64> = store
            .runs(id)
            .await
            .expect("runs")
            .iter()
            .filter(|run| run.stopped_by_condition())
            .map(|run| run.plan_index)
            .collect();
        assert_eq!(stopped, [1]);
        store.close().await;
    }
}

#[tokio::test]
async fn a_stopped_position_shows_as_stopped_in_the_figures_and_the_report() {
    let dir = TempStore::new("stopped-report");
    let spec = test_support::spec(FIVE_POSITIONS);
    for store in dir.stores().await {
        let id = every_kind_of_attempt(&store, &spec).await;
        let stopped_run = store.runs(id).await.expect("runs")[1].id;

        let stats = load_experiment(&store, id).await.expect("stats");
        assert_eq!(stats.experiment.finished_runs, 1);
        assert_eq!(
            stats.experiment.other_runs, 2,
            "fault not applied + interrupted"
        );
        assert_eq!(stats.stopped.len(), 1);
        let stopped = &stats.stopped[0];
        assert_eq!((stopped.run, stopped.plan_index), (stopped_run, 1));
        assert_eq!(stopped.condition.fault_rate, 0.25);
        assert_eq!(stopped.reason, stop_reason());
        assert!(
            stats.runs.iter().all(|run| run.run_id != stopped_run),
            "a stopped run is no normal result"
        );

        let markdown = report(&store, id, Format::Md).await.expect("report").text;
        assert!(
            markdown.contains("1 finished runs of 5 planned (2 aborted or interrupted"),
            "{markdown}"
        );
        assert!(
            markdown.contains("**1 run(s) stopped by the stop condition**"),
            "{markdown}"
        );
        let row = format!(
            "| {stopped_run} | 1 | {} | {} |",
            stopped.condition.label,
            stop_reason()
        );
        assert!(markdown.contains(&row), "{row} missing from:\n{markdown}");
        let json: serde_json::Value =
            serde_json::from_str(&report(&store, id, Format::Json).await.expect("report").text)
                .expect("JSON report");
        assert_eq!(json["stopped"][0]["plan_index"], 1);
        assert_eq!(json["stopped"][0]["reason"], stop_reason().as_str());
        store.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_does_not_run_again_the_position_its_stop_condition_aborted() {
    let dir = TempStore::new("stopped");
    let store = dir.open().await;
    let spec = test_support::spec(&short_runs("resume-stopped", "[0.0, 0.5, 1.0]"));
    // 0 stopped by its condition, 1 running when the controller died, 2 never started.
    let id = left_by_a_dead_controller(
        &store,
        &spec,
        &[(0, Status::Aborted, Some(stop_reason()))],
        1,
    )
    .await;
    let before = attempts(&store.runs(id).await.expect("runs"));
    let (stopped_run, interrupted_run) = (before[0].2, before[1].2);

    let choice = choose_start(&store, &spec, false).await.expect("choose");
    assert_eq!(choice, StartChoice::Resume(id));
    let (stack, testbed) = start_embedded_stack(&spec).await.expect("embedded stack");
    let runner = Runner::new(store.clone(), testbed);
    let point = RefCell::new(None);
    let mut started = Vec::new();
    let result = runner
        .start(
            &spec,
            choice,
            |resumed: &ResumePoint| *point.borrow_mut() = Some(resumed.clone()),
            |event| {
                if let Progress::RunStarted { planned, .. } = event {
                    started.push(planned.sequence);
                }
            },
        )
        .await;
    stack.shutdown().await;
    assert_eq!(result.expect("resume"), id);

    let point = point
        .into_inner()
        .expect("the resume reported where it stood");
    assert_eq!(point.done, BTreeSet::from([0]));
    assert_eq!(point.stopped, 1);
    assert_eq!(point.interrupted, 1);
    assert_eq!(point.remaining(), 2);
    assert_eq!(started, [1, 2], "only the positions without a verdict ran");
    let after = attempts(&store.runs(id).await.expect("runs"));
    assert_eq!(after.len(), 4, "{after:?}");
    assert_eq!(after[0], (0, Status::Aborted, stopped_run));
    assert_eq!(after[1], (1, Status::Interrupted, interrupted_run));
    assert_eq!((after[2].0, after[2].1), (1, Status::Finished));
    assert_eq!((after[3].0, after[3].1), (2, Status::Finished));
    let row = store.experiment(id).await.expect("row").expect("row");
    assert_eq!(row.status, Status::Finished);
    assert_eq!(
        store.terminal_plan_indices(id).await.expect("query"),
        [0, 1, 2]
    );
    store.close().await;
}

/// What a resume or a fresh start of `spec` in `store` did: the experiment it ran, the positions
/// whose runs started, and the resume point if it resumed.
async fn carry_out(
    store: &Store,
    spec: &ExperimentSpec,
    choice: StartChoice,
) -> (ExperimentId, Vec<usize>, Option<ResumePoint>) {
    let (stack, testbed) = start_embedded_stack(spec).await.expect("embedded stack");
    let runner = Runner::new(store.clone(), testbed);
    let point = RefCell::new(None);
    let mut started = Vec::new();
    let result = runner
        .start(
            spec,
            choice,
            |resumed: &ResumePoint| *point.borrow_mut() = Some(resumed.clone()),
            |event| {
                if let Progress::RunStarted { planned, .. } = event {
                    started.push(planned.sequence);
                }
            },
        )
        .await;
    stack.shutdown().await;
    (result.expect("start"), started, point.into_inner())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_starts_a_new_experiment_and_leaves_the_unfinished_one_as_it_was() {
    let dir = TempStore::new("fresh");
    let store = dir.open().await;
    let spec = test_support::spec(&short_runs("resume-fresh", "[0.0, 1.0]"));
    // Position 0 finished, position 1 running when the controller died.
    let old = left_by_a_dead_controller(&store, &spec, &[(0, Status::Finished, None)], 1).await;
    let old_row = store.experiment(old).await.expect("row");
    let old_runs = store.runs(old).await.expect("runs");

    assert_eq!(
        choose_start(&store, &spec, false).await.expect("choose"),
        StartChoice::Resume(old),
        "without --fresh the unfinished experiment would be resumed"
    );
    let choice = choose_start(&store, &spec, true).await.expect("choose");
    assert_eq!(choice, StartChoice::Fresh);
    let (new, started, point) = carry_out(&store, &spec, choice).await;

    assert_ne!(new, old);
    assert_eq!(point, None, "nothing was resumed");
    assert_eq!(started, [0, 1], "every position ran");
    let new_runs = attempts(&store.runs(new).await.expect("runs"));
    assert_eq!(
        new_runs
            .iter()
            .map(|(position, status, _)| (*position, *status))
            .collect::<Vec<_>>(),
        [(0, Status::Finished), (1, Status::Finished)]
    );
    let new_row = store.experiment(new).await.expect("row").expect("row");
    assert_eq!(new_row.status, Status::Finished);
    // The old experiment is untouched: still running, its attempt not even marked interrupted.
    assert_eq!(store.experiment(old).await.expect("row"), old_row);
    assert_eq!(store.runs(old).await.expect("runs"), old_runs);
    assert_eq!(old_runs[1].status, Status::Running);
    // The spec's latest experiment is now the finished fresh one: a plain run starts anew too.
    assert_eq!(
        choose_start(&store, &spec, false).await.expect("choose"),
        StartChoice::Fresh
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_fresh_the_unfinished_experiment_is_resumed() {
    let dir = TempStore::new("no-fresh");
    let store = dir.open().await;
    let spec = test_support::spec(&short_runs("resume-no-fresh", "[0.0, 1.0]"));
    let old = left_by_a_dead_controller(&store, &spec, &[(0, Status::Finished, None)], 1).await;
    let finished_run = store.runs(old).await.expect("runs")[0].id;

    let choice = choose_start(&store, &spec, false).await.expect("choose");
    assert_eq!(choice, StartChoice::Resume(old));
    let (resumed, started, point) = carry_out(&store, &spec, choice).await;

    assert_eq!(resumed, old);
    let point = point.expect("a resume point");
    assert_eq!(point.done, BTreeSet::from([0]));
    assert_eq!(point.stopped, 0);
    assert_eq!(point.interrupted, 1);
    assert_eq!(started, [1], "only the unfinished position ran");
    assert_eq!(store.experiments().await.expect("list").len(), 1);
    let runs = attempts(&store.runs(old).await.expect("runs"));
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert_eq!(runs[0], (0, Status::Finished, finished_run));
    assert_eq!((runs[1].0, runs[1].1), (1, Status::Interrupted));
    assert_eq!((runs[2].0, runs[2].1), (1, Status::Finished));
    let row = store.experiment(old).await.expect("row").expect("row");
    assert_eq!(row.status, Status::Finished);
    store.close().await;
}

const AGENT_TOKEN: &str = "resume-test-token";

/// An agent serving only its control API on a loopback port, like a deployed sidecar's.
async fn agent_over_http() -> (agent::Agent, String, tokio::task::JoinHandle<()>) {
    let agent = agent::Agent::new(
        agent::RawAgentConfig {
            token: Some(AGENT_TOKEN.into()),
            ..agent::RawAgentConfig::default()
        }
        .build()
        .expect("a valid agent config"),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let address = listener.local_addr().expect("local address");
    let router = agent::fault_api::router(agent.clone());
    let server = tokio::spawn(async move {
        axum::serve(listener, router).await.expect("serve agent");
    });
    (agent, format!("http://{address}"), server)
}

/// A testbed whose only live part is the agent (a resume talks to nothing else before it runs).
fn agent_only_testbed(agent_url: &str, token: &str) -> Testbed {
    Testbed {
        frontend: "127.0.0.1:9".parse().expect("address"),
        services: Vec::new(),
        agent: agent_url.to_owned(),
        token: token.to_owned(),
    }
}

#[tokio::test]
async fn a_resume_clears_the_fault_a_dead_controller_left_on_an_agent_over_http() {
    let dir = TempStore::new("agent-http");
    let spec = test_support::spec(&short_runs("resume-agent", "[0.5, 1.0]"));
    let plan = spec.plan();
    let (agent, agent_url, server) = agent_over_http().await;
    for store in dir.stores().await {
        // Position 0 stopped by its condition; position 1 running, its fault still on the agent.
        let id = left_by_a_dead_controller(
            &store,
            &spec,
            &[(0, Status::Aborted, Some(stop_reason()))],
            1,
        )
        .await;
        let running = store.runs(id).await.expect("runs")[1].id;
        let fault_id = format!("experiment-{id}-run-{running}");
        AdminClient::new(AGENT_TOKEN)
            .put_fault(
                &agent_url,
                &fault_id,
                &fault_spec(&spec, &plan[1])
                    .expect("a valid fault")
                    .expect("an agent fault kind"),
            )
            .await
            .expect("put fault over HTTP");
        assert_eq!(agent.faults().len(), 1);

        // A controller without the agent's token can clear nothing, so it changes nothing.
        let refused = Runner::new(store.clone(), agent_only_testbed(&agent_url, "wrong"))
            .prepare_resume(&spec, id)
            .await;
        assert!(matches!(refused, Err(RunnerError::Admin(_))), "{refused:?}");
        assert_eq!(agent.faults().len(), 1);
        assert_eq!(
            store.runs(id).await.expect("runs")[1].status,
            Status::Running
        );

        let runner = Runner::new(store.clone(), agent_only_testbed(&agent_url, AGENT_TOKEN));
        let point = runner.prepare_resume(&spec, id).await.expect("prepare");
        assert_eq!(point.experiment, id);
        assert_eq!(point.faults_cleared, 1);
        assert_eq!(point.interrupted, 1);
        assert_eq!(point.done, BTreeSet::from([0]));
        assert_eq!(point.stopped, 1);
        assert_eq!(point.remaining(), 1);
        assert!(agent.faults().is_empty(), "{:?}", agent.faults());
        let listed = AdminClient::new(AGENT_TOKEN)
            .call(
                http::Method::GET,
                &format!("{agent_url}/_agent/faults"),
                controller::testbed::Credential::Anonymous,
                None,
                bytes::Bytes::new(),
            )
            .await
            .expect("list faults over HTTP");
        assert_eq!(&listed[..], b"[]");
        let statuses: Vec<Status> = store
            .runs(id)
            .await
            .expect("runs")
            .iter()
            .map(|run| run.status)
            .collect();
        assert_eq!(statuses, [Status::Aborted, Status::Interrupted]);
        let row = store.experiment(id).await.expect("row").expect("row");
        assert_eq!(row.status, Status::Running);
        store.close().await;
    }
    server.abort();
}
