//! A real foreign system: a Python shop whose breaker is pybreaker (from PyPI), its state exported with
//! prometheus-client or pushed by a pybreaker listener, calling its upstream through `tolerant agent`. An
//! experiment with 100 % and then 0 % errors on the upstream must show the breaker opening and closing on
//! Tolerant's timeline (stored transitions with their source), the opens counted, a workload of the user's shape
//! stored and reported like any other, and the report saying what the shop does not offer.
//!
//! The test installs pybreaker and prometheus-client itself into a venv under the target directory (Python 3 with
//! `venv` and pip must exist; PyPI must be reachable the first time). Everything listens on loopback; every wait
//! is bounded.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use controller::store::{ExperimentId, Store};

mod common;

use common::Running;
use controller::test_support::TempStore;

const TOKEN: &str = "foreign-pybreaker-token";
/// Upper bound on any one wait of this test.
const WAIT_LIMIT: Duration = Duration::from_secs(60);

/// A venv with pybreaker and prometheus-client, made once per target directory.
fn python() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pybreaker-venv");
    let python = venv.join("bin").join("python");
    let ready = |python: &Path| {
        Command::new(python)
            .args(["-c", "import pybreaker, prometheus_client"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if !ready(&python) {
        let made = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 runs");
        assert!(made.success(), "python3 -m venv failed");
        let installed = Command::new(venv.join("bin").join("pip"))
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "pybreaker>=1.0,<2",
                "prometheus-client>=0.17,<1",
            ])
            .status()
            .expect("pip runs");
        assert!(
            installed.success(),
            "pip install pybreaker prometheus-client failed"
        );
        assert!(
            ready(&python),
            "the venv cannot import pybreaker and prometheus_client"
        );
    }
    python
}

/// Starts a child and returns it with the first line of its output that `parse` accepts.
fn start<T: Send + 'static>(
    mut command: Command,
    parse: impl Fn(&str) -> Option<T> + Send + 'static,
) -> (Running, T) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the child starts");
    let stdout = child.stdout.take().expect("piped");
    let running = Running(child);
    let (found, wait) = mpsc::channel();
    std::thread::spawn(move || {
        let mut found = Some(found);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(value) = parse(&line) {
                if let Some(found) = found.take() {
                    let _ = found.send(value);
                }
            }
        }
    });
    let value = wait
        .recv_timeout(WAIT_LIMIT)
        .expect("the child printed where it listens");
    (running, value)
}

fn python_server(python: &Path, mode: &str, env: &[(&str, String)]) -> (Running, u16) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/foreign/pybreaker_shop.py");
    let mut command = Command::new(python);
    command.arg(script).arg(mode);
    for (key, value) in env {
        command.env(key, value);
    }
    start(command, |line| {
        line.strip_prefix("listening ")?.trim().parse().ok()
    })
}

/// The sidecar in front of the upstream: (process, proxy address, control address).
fn agent(upstream: u16) -> (Running, SocketAddr, SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tolerant"));
    command
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--control",
            "127.0.0.1:0",
            "--threads",
            "2",
        ])
        .arg("--upstream")
        .arg(format!("http://127.0.0.1:{upstream}"))
        .env("TOLERANT_TOKEN", TOKEN);
    let (running, (proxy, control)) = {
        let (found, wait) = mpsc::channel();
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("agent starts");
        let stdout = child.stdout.take().expect("piped");
        std::thread::spawn(move || {
            let (mut proxy, mut control) = (None, None);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let after = |prefix: &str| -> Option<SocketAddr> {
                    line.strip_prefix(prefix)?
                        .split(['/', ' '])
                        .next()?
                        .parse()
                        .ok()
                };
                proxy = proxy.or_else(|| after("tolerant agent: proxy http://"));
                control = control.or_else(|| after("tolerant agent: control http://"));
                if let (Some(proxy), Some(control)) = (proxy, control) {
                    let _ = found.send((proxy, control));
                    return;
                }
            }
        });
        let addresses = wait
            .recv_timeout(WAIT_LIMIT)
            .expect("the agent printed its addresses");
        (Running(child), addresses)
    };
    (running, proxy, control)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The spec of the experiment against the shop on `shop`, with `sources` appended.
fn spec(name: &str, shop: u16, control: SocketAddr, sources: &str) -> String {
    format!(
        r#"name = "{name}"
rounds = 1
duration = "4s"
order = "fixed"
seed = 3

[load]
users = 4
think_time = ["20ms", "60ms"]
target = "shop"
timeout = "3s"

[[load.tasks]]
name = "home"
critical = true
requests = [{{ path = "/", expect = [200] }}]

[fault]
target = "shop"
rates = [1.0, 0.0]
lease = "10s"

[targets]
shop = {{ url = "http://127.0.0.1:{shop}", offers = [] }}
agent = "http://{control}"

{sources}
"#
    )
}

/// Runs `spec` with `tolerant run` against the database `db`; returns the experiment id.
fn run(dir: &Path, db: &Path, name: &str, spec: &str) -> i64 {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, spec).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tolerant"))
        .arg("run")
        .arg(&path)
        .arg("--db")
        .arg(db)
        .args(["--token", TOKEN, "--json", "--fresh"])
        .output()
        .expect("tolerant run");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "tolerant run failed:\n{stderr}");
    // The preflight says what the shop does not offer.
    assert!(
        stderr.contains("targets.shop (")
            && stderr.contains("offers nothing; not offered: reset, breaker-config"),
        "{stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON summary");
    summary["experiment"].as_i64().expect("experiment id")
}

/// The (from, to, source) of every stored transition of each run of `experiment`, in plan order.
async fn transitions(db: &Path, experiment: i64) -> Vec<Vec<(String, String, String)>> {
    let store = Store::open(db.to_str().unwrap()).await.unwrap();
    let mut runs = store.runs(ExperimentId(experiment)).await.unwrap();
    runs.sort_by_key(|run| run.plan_index);
    let mut all = Vec::new();
    for run in runs {
        assert_eq!(run.status.as_str(), "finished", "{run:?}");
        let outcomes = run.outcomes.expect("a finished run has outcomes");
        assert!(outcomes.total() > 0, "the custom workload sent requests");
        let rows = store.transitions(run.id).await.unwrap();
        all.push(
            rows.into_iter()
                .map(|t| {
                    (
                        t.from.as_str().to_owned(),
                        t.to.as_str().to_owned(),
                        t.source.unwrap_or_default(),
                    )
                })
                .collect(),
        );
    }
    store.close().await;
    all
}

/// The markdown report of `experiment`, written into `dir` by `tolerant report`.
fn report(dir: &Path, db: &Path, experiment: i64) -> String {
    let out = dir.join(format!("report-{experiment}"));
    let output = Command::new(env!("CARGO_BIN_EXE_tolerant"))
        .args(["report", &experiment.to_string(), "--format", "md", "--db"])
        .arg(db)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("tolerant report");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let markdown = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "md"))
        .expect("a markdown report");
    std::fs::read_to_string(markdown).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pybreaker_breaker_opens_and_closes_on_tolerants_timeline() {
    let python = python();
    let scratch = TempStore::new("pybreaker");
    let (dir, db) = (scratch.dir(), std::path::PathBuf::from(scratch.location()));
    let (_upstream, upstream) = python_server(&python, "upstream", &[]);
    let (_agent, proxy, control) = agent(upstream);

    // Scraped: prometheus-client's gauge, read four times a second and more.
    let (scraped_shop, shop) =
        python_server(&python, "shop", &[("UPSTREAM", format!("http://{proxy}"))]);
    let sources = format!(
        "[[sources]]\nkind = \"prometheus\"\nurl = \"http://127.0.0.1:{shop}/metrics\"\npreset = \"gauge\"\n\
         metric = \"pybreaker_state\"\nlabel = \"breaker\"\ninterval = \"100ms\"\nservice = \"shop\"\n"
    );
    let scraped = run(
        dir,
        &db,
        "pybreaker-scraped",
        &spec("pybreaker-scraped", shop, control, &sources),
    );
    drop(scraped_shop);
    let runs = transitions(&db, scraped).await;
    let source = format!("prometheus:http://127.0.0.1:{shop}/metrics");
    assert_eq!(runs.len(), 2);
    assert!(
        runs[0]
            .iter()
            .any(|(from, to, s)| from == "closed" && to == "open" && *s == source),
        "100 % errors open the breaker: {:?}",
        runs[0]
    );
    assert!(
        runs[1]
            .iter()
            .any(|(_, to, s)| to == "closed" && *s == source),
        "0 % errors close it again: {:?}",
        runs[1]
    );
    let markdown = report(dir, &db, scraped);
    assert!(markdown.contains("## Not measured"), "{markdown}");
    for capability in [
        "`reset`",
        "`breaker-config`",
        "`breaker-stream`",
        "`pool`",
        "`cart-metrics`",
    ] {
        assert!(markdown.contains(capability), "{capability}: {markdown}");
    }
    assert!(markdown.contains("scraped every 100ms"), "{markdown}");
    assert!(
        markdown.contains("GET /"),
        "the custom workload's endpoint is reported: {markdown}"
    );

    // Pushed: a pybreaker listener posts every state change to `tolerant run`'s ingest address.
    let push_port = free_port();
    let (_pushing_shop, shop) = python_server(
        &python,
        "shop",
        &[
            ("UPSTREAM", format!("http://{proxy}")),
            (
                "PUSH_URL",
                format!("http://127.0.0.1:{push_port}/api/breaker-events"),
            ),
            ("TOLERANT_TOKEN", TOKEN.to_owned()),
        ],
    );
    let sources = format!("[[sources]]\nkind = \"push\"\nlisten = \"127.0.0.1:{push_port}\"\n");
    let pushed = run(
        dir,
        &db,
        "pybreaker-pushed",
        &spec("pybreaker-pushed", shop, control, &sources),
    );
    let runs = transitions(&db, pushed).await;
    assert!(
        runs[0]
            .iter()
            .any(|(from, to, s)| from == "closed" && to == "open" && s == "push:pybreaker"),
        "the listener's open is on the timeline: {:?}",
        runs[0]
    );
    assert!(
        runs[1]
            .iter()
            .any(|(_, to, s)| to == "closed" && s == "push:pybreaker"),
        "and its close: {:?}",
        runs[1]
    );
    let markdown = report(dir, &db, pushed);
    assert!(markdown.contains("## Not measured"), "{markdown}");
}
