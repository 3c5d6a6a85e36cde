//! The stack as containers on the machine's Docker Engine: the image is built from the binary this test build
//! made (`scripts/images`, cached by the binary's hash), `docker-compose.yml` is brought up under a project of
//! the test's own, and the `tolerant` binary runs experiments against it through `--compose`: one pausing
//! Payment through the engine, one injecting 500s through the agent. Then a pause whose lease runs out is
//! undone by the sweep, and a pause left by a SIGKILLed controller is undone by the next one. Last, the
//! stack's own dashboard reaches the engine (socket mounted, its project found from its own labels): a pause
//! from its game-day API ends with its lease, a network delay slows Payment's answers by at least the delay
//! (or, on a kernel without `netem`, is refused naming the container and what is missing) and its undo
//! restores them, and its halt undoes a container fault at once. Everything the
//! test made (containers, networks, the volume) is removed at the end; the image stays as the build cache.
//!
//! Without an engine the test is skipped, unless `CI` is set: then it fails.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use controller::clock::now_ms;
use controller::docker::{ContainerAction, ContainerLeases, Engine, StackContainer};
use controller::store::{ExperimentRow, RunId, Status, Store};

mod common;

use common::compose::{Project, TOKEN, WAIT_LIMIT, build_image, engine_and_compose};
use controller::test_support::TempStore;

/// Runs `tolerant <args>` to the end; panics with its output when it fails.
fn tolerant(dir: &Path, args: &[&str]) -> String {
    common::compose::tolerant_with_token(dir, args)
}

fn spec(name: &str, kind: &str, duration: &str, lease: &str) -> String {
    format!(
        r#"
name = "{name}"
rounds = 1
duration = "{duration}"
warmup = "1s"
order = "fixed"
seed = 3

[load]
users = 4
think_time = ["20ms", "100ms"]
timeout = "2s"

[fault]
target = "payment"
kind = "{kind}"
rates = [1.0]
lease = "{lease}"

[breaker]
modes = ["enforce"]

[breaker.trip]
consecutive_failures = 2

[breaker.open]
base = "1s"
"#
    )
}

/// Writes `spec(name, …)` into `dir` and runs it with `tolerant run --compose` to the end.
fn run_spec(
    dir: &Path,
    db: &str,
    project: &str,
    name: &str,
    kind: &str,
    duration: &str,
    lease: &str,
) {
    let file = format!("{name}.toml");
    std::fs::write(dir.join(&file), spec(name, kind, duration, lease)).expect("write the spec");
    tolerant(
        dir,
        &["run", &file, "--fresh", "--db", db, "--compose", project],
    );
}

/// The one experiment stored under `name` and its only run.
async fn only_run(store: &Store, name: &str) -> (ExperimentRow, RunId) {
    let experiment = store
        .experiments()
        .await
        .expect("experiments")
        .into_iter()
        .find(|row| row.name == name)
        .unwrap_or_else(|| panic!("experiment {name} stored"));
    let runs = store.runs(experiment.id).await.expect("runs");
    assert_eq!(runs.len(), 1, "{name}: one run");
    assert_eq!(runs[0].status, Status::Finished, "{name}: {:?}", runs[0]);
    (experiment, runs[0].id)
}

async fn payment(engine: &Engine, project: &str) -> StackContainer {
    let mut replicas = engine.service(project, "payment").await.expect("payment");
    replicas.remove(0)
}

/// Waits until Payment's container is in `state`.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn wait_for_state(engine: &Engine, project: &str, state: &str) {
    let started = Instant::now();
    loop {
        if payment(engine, project).await.state == state {
            return;
        }
        assert!(
            started.elapsed() < WAIT_LIMIT,
            "payment never became {state}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn the_compose_stack_runs_experiments_and_container_faults_keep_their_leases() {
    let Some((engine, program)) = engine_and_compose().await else {
        return;
    };
    // The image, from the binary this build made (rebuilt only when the binary changed).
    build_image();

    let scratch = TempStore::new("containers");
    let db = scratch.dir().join("tolerant.db");
    let db_arg = db.to_str().expect("utf-8 path").to_owned();
    let project = Project::new("test", program);
    project.run(&["up", "-d"]);
    let name = project.name.clone();

    // Every service and the controller are up and healthy; the dashboard answers on loopback only.
    let stack = engine.stack(&name).await.expect("stack");
    let services: Vec<&str> = stack.iter().map(|c| c.service.as_str()).collect();
    assert_eq!(
        stack.len(),
        11,
        "ten services and the controller: {services:?}"
    );
    project.wait_for_dashboard().await;

    // 1. Payment paused through the engine for a run.
    run_spec(scratch.dir(), &db_arg, &name, "pause", "pause", "3s", "3s");
    let store = Store::open(&db_arg).await.expect("open the test database");
    let (_, run) = only_run(&store, "pause").await;
    let faults = store.container_faults_of_run(run).await.expect("faults");
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert_eq!(faults[0].fault.service, "payment");
    assert!(
        faults[0].undone_ms.is_some() && faults[0].undo_error.is_none(),
        "{faults:?}"
    );
    assert_eq!(payment(&engine, &name).await.state, "running");
    let samples = store.container_samples(run).await.expect("samples");
    for service in ["frontend", "payment", "checkout"] {
        assert!(
            samples.iter().any(|s| s.service == service),
            "no stats of {service} stored"
        );
    }
    assert!(
        samples
            .iter()
            .any(|s| s.cpu_seconds > 0.0 && s.energy_joules > 0.0)
    );

    // 2. 500s through the agent in Payment: the breakers in front of it trip, and the controller saw it.
    run_spec(
        scratch.dir(),
        &db_arg,
        &name,
        "errors",
        "error",
        "3s",
        "10s",
    );
    let (_, run) = only_run(&store, "errors").await;
    let transitions = store.transitions(run).await.expect("transitions");
    assert!(
        transitions.iter().any(|t| t.breaker.contains("payment")),
        "no transition of a breaker in front of payment: {transitions:?}"
    );
    assert!(
        !store
            .container_samples(run)
            .await
            .expect("samples")
            .is_empty()
    );

    // 3. A pause whose lease runs out is undone by the sweep.
    let leases = ContainerLeases::new(engine.clone(), store.clone());
    let sweep = leases.spawn_watchdog(Duration::from_millis(200));
    let target = payment(&engine, &name).await;
    let id = leases
        .inject(
            &target,
            &ContainerAction::Pause,
            Duration::from_secs(1),
            None,
            now_ms(),
        )
        .await
        .expect("pause payment");
    assert_eq!(payment(&engine, &name).await.state, "paused");
    wait_for_state(&engine, &name, "running").await;
    // The record is closed right after the engine's unpause answers.
    let started = Instant::now();
    let row = loop {
        let row = store
            .container_fault(id)
            .await
            .expect("row")
            .expect("stored");
        if row.undone_ms.is_some() || started.elapsed() > WAIT_LIMIT {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    sweep.abort();
    assert!(
        row.undone_ms.is_some_and(|at| at >= row.fault.until_ms),
        "{row:?}"
    );
    assert_eq!(row.undo_error, None);

    // 4. A controller SIGKILLed while Payment is paused: the pause outlives it, and the next controller to
    // start undoes it once its lease has run out.
    std::fs::write(
        scratch.dir().join("long.toml"),
        spec("long", "pause", "60s", "2s"),
    )
    .unwrap();
    let mut killed = Command::new(env!("CARGO_BIN_EXE_tolerant"))
        .args([
            "run",
            "long.toml",
            "--fresh",
            "--db",
            &db_arg,
            "--compose",
            &name,
        ])
        .current_dir(scratch.dir())
        .env("TOLERANT_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the controller");
    wait_for_state(&engine, &name, "paused").await;
    killed.kill().expect("SIGKILL the controller");
    killed.wait().expect("reap it");
    assert_eq!(payment(&engine, &name).await.state, "paused");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        payment(&engine, &name).await.state,
        "paused",
        "nothing but a controller undoes it"
    );
    run_spec(scratch.dir(), &db_arg, &name, "after", "error", "2s", "10s");
    assert_eq!(payment(&engine, &name).await.state, "running");
    let pending = store.pending_container_faults(None).await.expect("pending");
    assert!(pending.is_empty(), "{pending:?}");

    // 5. `tolerant halt` undoes a container fault long before its lease would end.
    let target = payment(&engine, &name).await;
    leases
        .inject(
            &target,
            &ContainerAction::Pause,
            Duration::from_secs(600),
            None,
            now_ms(),
        )
        .await
        .expect("pause payment");
    assert_eq!(payment(&engine, &name).await.state, "paused");
    let halted = tolerant(scratch.dir(), &["halt", "--db", &db_arg]);
    assert!(halted.contains("1 container fault(s) undone"), "{halted}");
    assert_eq!(payment(&engine, &name).await.state, "running");
    store.close().await;

    // 6. The stack's own dashboard reaches the engine.
    game_day_container_faults(&engine, &name, project.dashboard_port).await;

    // Down: containers, networks and the volume go.
    drop(project);
    assert!(engine.stack(&name).await.expect("stack").is_empty());
}

/// The compose controller's game-day API over the engine: a pause under a lease, a network delay and its
/// undo, a halt.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn game_day_container_faults(engine: &Engine, project: &str, port: u16) {
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let listing: serde_json::Value = client
        .get(format!("{base}/api/containers"))
        .send()
        .await
        .expect("GET /api/containers")
        .json()
        .await
        .expect("JSON");
    let replicas = listing["containers"]
        .as_array()
        .unwrap_or_else(|| panic!("the dashboard reaches no engine: {listing}"));
    assert!(
        replicas.iter().any(|c| c["replica"] == "payment"),
        "{listing}"
    );
    let apply = |body: serde_json::Value| {
        client
            .post(format!("{base}/api/containers"))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
    };

    // A pause from the game day ends with its lease.
    let response =
        apply(serde_json::json!({"container": "payment", "kind": "pause", "lease": "2s"}))
            .await
            .expect("pause");
    assert!(
        response.status().is_success(),
        "{:?}",
        response.text().await
    );
    assert_eq!(payment(engine, project).await.state, "paused");
    wait_for_state(engine, project, "running").await;

    // A network delay on Payment: its answers take at least the delay, and the undo takes it off.
    let address = payment(engine, project)
        .await
        .address()
        .expect("payment's address");
    let health = format!("http://{address}:8080/_healthz");
    let timed = || async {
        let started = Instant::now();
        let response = client.get(&health).send().await.expect("payment answers");
        assert!(response.status().is_success());
        started.elapsed()
    };
    let delay = Duration::from_millis(400);
    let response = apply(serde_json::json!({
        "container": "payment", "kind": "net_delay", "net_delay": "400ms", "lease": "30s"
    }))
    .await
    .expect("net_delay");
    let status = response.status();
    let answer: serde_json::Value = response.json().await.expect("JSON");
    if status == reqwest::StatusCode::CONFLICT {
        // This host's kernel has no netem: the refusal names the container and what is missing.
        let message = answer["error"].as_str().unwrap_or_default().to_owned();
        eprintln!("net_delay refused on this engine: {message}");
        assert!(
            message.contains("payment") && message.contains("netem"),
            "{answer}"
        );
    } else {
        assert!(status.is_success(), "{answer}");
        let slowed = timed().await;
        assert!(
            slowed >= delay,
            "a request through the delayed Payment took {slowed:?}"
        );
        let id = answer["id"].as_i64().expect("id");
        let undone = client
            .delete(format!("{base}/api/containers/faults/{id}"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("undo");
        assert!(undone.status().is_success());
        let restored = timed().await;
        assert!(
            restored < delay,
            "after the undo a request still took {restored:?}"
        );
    }

    // Halt undoes a container fault long before its lease ends.
    let response =
        apply(serde_json::json!({"container": "payment", "kind": "pause", "lease": "10m"}))
            .await
            .expect("pause");
    assert!(response.status().is_success());
    assert_eq!(payment(engine, project).await.state, "paused");
    let halted = client
        .post(format!("{base}/api/halt"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("halt");
    assert!(halted.status().is_success(), "{:?}", halted.text().await);
    assert_eq!(payment(engine, project).await.state, "running");
}
