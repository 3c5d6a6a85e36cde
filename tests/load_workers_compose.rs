//! Load workers on the machine's Docker Engine: the compose stack brought up with `--profile workers --scale
//! load-worker=3`, and `tolerant run --compose` of a spec with `[load] workers = 3` listening on the host. The
//! stored run's request count must equal the sum of the three workers' own counts (from their logs) exactly;
//! then a second experiment with a worker killed mid-run is stored degraded, naming the worker, its users and
//! the seconds they were missing from. Everything the test made is removed at the end.
//!
//! Without an engine the test is skipped, unless `CI` is set: then it fails.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use controller::store::{Status, Store};

mod common;

use common::compose::{Project, TOKEN, WAIT_LIMIT, build_image, engine_and_compose, free_port};
use controller::test_support::TempStore;

fn spec(name: &str, port: u16) -> String {
    format!(
        r#"
name = "{name}"
rounds = 1
duration = "8s"
order = "fixed"
seed = 25

[load]
users = 30
think_time = ["50ms", "200ms"]
timeout = "3s"
workers = 3
workers_listen = "0.0.0.0:{port}"

[fault]
target = "payment"
kind = "error"
rates = [0.0]

[breaker]
modes = ["disabled"]
"#
    )
}

/// The requests each worker said its shares held, from its `share done` log lines, summed.
fn logged_requests(container: &str) -> u64 {
    let logs = Command::new("docker")
        .args(["logs", container])
        .output()
        .expect("docker logs");
    let text = strip_ansi(
        &(String::from_utf8_lossy(&logs.stdout).into_owned()
            + &String::from_utf8_lossy(&logs.stderr)),
    );
    text.lines()
        .filter(|line| line.contains("share done"))
        .filter_map(|line| {
            line.split("requests=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The text without terminal colour sequences (`ESC [ … m`), which the log's fields may carry.
fn strip_ansi(text: &str) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn three_worker_containers_drive_the_compose_stack() {
    let Some((engine, program)) = engine_and_compose().await else {
        return;
    };
    build_image();
    let scratch = TempStore::new("workers");
    let db = scratch.location();
    let project = Project::new("workers", program);
    let port = free_port();
    let up = |project: &Project| {
        let output = project
            .command(&[
                "--profile",
                "workers",
                "up",
                "-d",
                "--scale",
                "load-worker=3",
            ])
            .env(
                "TOLERANT_WORKERS_URL",
                format!("ws://host.docker.internal:{port}/workers"),
            )
            .output()
            .expect("compose up");
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    up(&project);
    project.wait_for_dashboard().await;
    let name = project.name.clone();
    let workers = engine
        .service(&name, "load-worker")
        .await
        .expect("load workers");
    assert_eq!(workers.len(), 3, "{workers:?}");

    // One whole run on three workers.
    std::fs::write(scratch.dir().join("whole.toml"), spec("whole", port)).unwrap();
    common::compose::tolerant_with_token(
        scratch.dir(),
        &[
            "run",
            "whole.toml",
            "--fresh",
            "--db",
            &db,
            "--compose",
            &name,
        ],
    );
    let store = Store::open(&db).await.expect("open the test database");
    let runs_of = |name: &'static str| {
        let store = store.clone();
        async move {
            let experiment = (store.experiments().await.unwrap().into_iter())
                .find(|row| row.name == name)
                .expect("the experiment is stored");
            store.runs(experiment.id).await.unwrap()
        }
    };
    let runs = runs_of("whole").await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, Status::Finished, "{:?}", runs[0]);
    let stored = runs[0].outcomes.expect("outcomes").total();
    let per_worker: Vec<u64> = workers.iter().map(|w| logged_requests(&w.id)).collect();
    assert!(per_worker.iter().all(|&n| n > 0), "{per_worker:?}");
    assert_eq!(stored, per_worker.iter().sum::<u64>(), "{per_worker:?}");

    // A second experiment: one worker killed four seconds into the run.
    up(&project);
    std::fs::write(scratch.dir().join("killed.toml"), spec("killed", port)).unwrap();
    let mut run = Command::new(common::BIN)
        .args([
            "run",
            "killed.toml",
            "--fresh",
            "--db",
            &db,
            "--compose",
            &name,
        ])
        .current_dir(scratch.dir())
        .env_remove("TOLERANT_DB")
        .env("TOLERANT_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tolerant");
    let stderr = run.stderr.take().unwrap();
    let (connected_tx, connected_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("load workers connected") {
                let _ = connected_tx.send(());
            }
        }
    });
    connected_rx
        .recv_timeout(WAIT_LIMIT)
        .expect("the workers connected");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let victim = engine
        .service(&name, "load-worker")
        .await
        .unwrap()
        .remove(0);
    let killed = Command::new("docker")
        .args(["kill", &victim.id])
        .output()
        .unwrap();
    assert!(killed.status.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = run.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < WAIT_LIMIT, "tolerant run did not end");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // A run that did not end as planned makes `tolerant run` exit non-zero.
    assert!(!status.success());
    let runs = runs_of("killed").await;
    assert_eq!(runs[0].status, Status::Degraded, "{:?}", runs[0]);
    let reason = runs[0].abort_reason.clone().unwrap_or_default();
    // A worker's name is its host name, the container's short id.
    assert!(
        reason.contains(&format!("load worker `{}` lost", &victim.id[..12])),
        "{reason}"
    );
    assert!(
        reason.contains("its 10 users missing in seconds "),
        "{reason}"
    );
    assert!(reason.trim_end().ends_with("..8"), "{reason}");
}
