//! Crash-safe resume, end to end: the `tolerant` binary runs a four-run sweep against its embedded
//! stack, is SIGKILLed mid-run twice (during the second and the fourth run), and is restarted with
//! `tolerant run` (which resumes the spec's unfinished experiment) and `tolerant resume <id>`. The
//! stored result must be exactly the plan: each position finished once, the killed attempts marked
//! `interrupted` with no data, every finished run complete.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use controller::store::{ExperimentId, RunRow, Status, Store};

mod common;

use controller::test_support::TempStore;

/// 2 fault rates × 1 breaker mode × 2 rounds = 4 runs of 2 s (20 s at time_scale 10).
const SPEC: &str = r#"
name = "resume-test"
rounds = 2
duration = "20s"
warmup = "5s"
time_scale = 10.0
order = "fixed"
seed = 7

[load]
users = 4
think_time = ["100ms", "300ms"]
mix = "online-boutique"
timeout = "2s"

[fault]
target = "payment"
kind = "error"
status = 500
rates = [0.0, 1.0]

[breaker]
modes = ["enforce"]

[breaker.trip]
consecutive_failures = 5

[breaker.open]
base = "5s"
"#;

const PLANNED_RUNS: usize = 4;

/// Upper bound on any one wait of this test.
const WAIT_LIMIT: Duration = Duration::from_secs(40);

/// Starts `tolerant <args>` in `dir` with its output in `<log>.out` / `<log>.err`.
fn spawn(dir: &Path, log: &str, args: &[&str]) -> Child {
    let out = File::create(dir.join(format!("{log}.out"))).expect("stdout file");
    let err = File::create(dir.join(format!("{log}.err"))).expect("stderr file");
    Command::new(env!("CARGO_BIN_EXE_tolerant"))
        .args(args)
        .current_dir(dir)
        .env_remove("TOLERANT_DB")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("spawn tolerant")
}

fn log_of(dir: &Path, log: &str) -> String {
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{log}.{ext}")));
    format!(
        "--- stdout\n{}\n--- stderr\n{}",
        read("out").unwrap_or_default(),
        read("err").unwrap_or_default()
    )
}

/// SIGKILLs the child (std's `kill` is SIGKILL on Unix) and reaps it.
fn kill_9(child: &mut Child) {
    child.kill().expect("SIGKILL the controller");
    child.wait().expect("reap the controller");
}

/// Waits until the database exists and holds experiment 1, then opens it.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn open_when_created(db: &Path, child: &mut Child, dir: &Path) -> Store {
    let started = Instant::now();
    loop {
        assert!(
            child.try_wait().expect("poll child").is_none(),
            "the controller exited early:\n{}",
            log_of(dir, "first")
        );
        // The controller may still be migrating the new file: an open that fails now is retried.
        let opened = match db.exists() {
            true => Store::open(db.to_str().expect("utf-8 path")).await.ok(),
            false => None,
        };
        if let Some(store) = opened {
            if store
                .experiment(ExperimentId(1))
                .await
                .ok()
                .flatten()
                .is_some()
            {
                return store;
            }
            store.close().await;
        }
        assert!(
            started.elapsed() < WAIT_LIMIT,
            "no experiment stored within {WAIT_LIMIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `finished` runs are stored and the next attempt is `running` (a kill now is a
/// kill mid-run).
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn wait_mid_run(store: &Store, finished: usize, child: &mut Child, dir: &Path, log: &str) {
    let started = Instant::now();
    loop {
        assert!(
            child.try_wait().expect("poll child").is_none(),
            "the controller exited early:\n{}",
            log_of(dir, log)
        );
        let runs = store.runs(ExperimentId(1)).await.expect("read runs");
        let count = |status| runs.iter().filter(|r| r.status == status).count();
        if count(Status::Finished) == finished && count(Status::Running) == 1 {
            return;
        }
        assert!(
            count(Status::Finished) <= finished,
            "more than {finished} runs finished before the kill"
        );
        assert!(
            started.elapsed() < WAIT_LIMIT,
            "{finished} finished runs and one running never seen within {WAIT_LIMIT:?}:\n{}",
            log_of(dir, log)
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn wait_exit(child: &mut Child, dir: &Path, log: &str) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll child") {
            return status;
        }
        if started.elapsed() > WAIT_LIMIT {
            kill_9(child);
            panic!(
                "the controller did not finish within {WAIT_LIMIT:?}:\n{}",
                log_of(dir, log)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkilled_sweep_resumes_to_exactly_the_plan() {
    let scratch = TempStore::new("resume");
    let dir = scratch.dir();
    std::fs::write(dir.join("spec.toml"), SPEC).expect("write spec");
    let db = dir.join("t.db");
    let db_arg = db.to_str().expect("utf-8 path");

    // 1. A fresh sweep, killed during its second run.
    let mut first = spawn(dir, "first", &["run", "spec.toml", "--db", db_arg]);
    let store = open_when_created(&db, &mut first, dir).await;
    wait_mid_run(&store, 1, &mut first, dir, "first").await;
    kill_9(&mut first);

    // 2. `tolerant run` of the same spec resumes experiment 1; killed during the fourth run.
    let mut second = spawn(dir, "second", &["run", "spec.toml", "--db", db_arg]);
    wait_mid_run(&store, 3, &mut second, dir, "second").await;
    kill_9(&mut second);
    let second_log = log_of(dir, "second");
    assert!(
        second_log.contains("resuming experiment 1: 1 of 4 runs finished, 1 interrupted"),
        "the second start did not resume:\n{second_log}"
    );

    // 3. `tolerant resume 1` runs what is left.
    let mut third = spawn(dir, "third", &["resume", "1", "--db", db_arg, "--json"]);
    let status = wait_exit(&mut third, dir, "third").await;
    assert!(
        status.success(),
        "resume failed ({status}):\n{}",
        log_of(dir, "third")
    );

    // One experiment, finished; exactly the plan finished, once per position.
    let experiments = store.experiments().await.expect("experiments");
    assert_eq!(experiments.len(), 1, "a restart created a new experiment");
    assert_eq!(experiments[0].status, Status::Finished);
    let runs = store.runs(ExperimentId(1)).await.expect("runs");
    let mut finished_per_position: BTreeMap<i64, usize> = BTreeMap::new();
    for run in runs.iter().filter(|r| r.status == Status::Finished) {
        *finished_per_position.entry(run.plan_index).or_default() += 1;
    }
    let expected: BTreeMap<i64, usize> = (0..PLANNED_RUNS as i64).map(|i| (i, 1)).collect();
    assert_eq!(finished_per_position, expected, "runs: {runs:#?}");

    // The two killed attempts: interrupted, at positions 1 and 3, without data.
    let interrupted: Vec<&RunRow> = runs
        .iter()
        .filter(|r| r.status == Status::Interrupted)
        .collect();
    let positions: Vec<i64> = interrupted.iter().map(|r| r.plan_index).collect();
    assert_eq!(positions, vec![1, 3], "runs: {runs:#?}");
    assert_eq!(
        runs.len(),
        PLANNED_RUNS + 2,
        "unexpected attempts: {runs:#?}"
    );
    for run in &interrupted {
        assert!(
            run.outcomes.is_none(),
            "interrupted run has totals: {run:?}"
        );
        assert!(store.samples(run.id).await.expect("samples").is_empty());
        assert!(
            store
                .endpoint_seconds(run.id)
                .await
                .expect("seconds")
                .is_empty()
        );
    }
    // Every finished run is whole: totals, per-second rows and samples.
    for run in runs.iter().filter(|r| r.status == Status::Finished) {
        let outcomes = run.outcomes.expect("finished run without totals");
        assert!(
            outcomes.total() > 0,
            "finished run without requests: {run:?}"
        );
        assert!(
            !store
                .endpoint_seconds(run.id)
                .await
                .expect("seconds")
                .is_empty(),
            "finished run without per-second rows: {run:?}"
        );
        assert!(
            !store.samples(run.id).await.expect("samples").is_empty(),
            "finished run without samples: {run:?}"
        );
    }
    store.close().await;
}
