//! The Chaos Toolkit extension (`integrations/chaostoolkit`, `chaostoolkit-tolerant`) from a virtual environment
//! this test makes under the target directory: `chaostoolkit` from PyPI at a pinned version, the extension
//! installed from the repository, type-checked (mypy: every function annotated), its unit tests (pytest against
//! answers recorded from a real dashboard), then
//! `chaos run integrations/chaostoolkit/examples/payment-outage.json` against the built binary's whole stack on
//! loopback ports, with `TOLERANT_URL` and `TOLERANT_TOKEN` in the environment:
//!
//! - the journal says the run completed without deviating, the hypothesis was met before and after, every
//!   activity of the method and every rollback succeeded, the breaker was seen open and then closed again, and
//!   the agent holds no fault afterwards;
//! - a second run, interrupted with SIGINT once its fault is on, ends `interrupted` (Chaos Toolkit plays no
//!   rollbacks then) and the extension's control has halted: the agent holds no fault either.
//!
//! Python 3 with `venv` must exist and PyPI be reachable the first time; without them the test fails saying
//! so. Every wait is bounded; the whole test takes about a minute (the breaker's 30 s open window included).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;
use common::{BIN, Running};
use controller::test_support::TempStore;

/// What the venv holds, pinned: the Chaos Toolkit CLI and library, the test runner, the type checker, and
/// the build backend the extension is installed with (offline, once these are in).
const PINS: [&str; 5] = [
    "chaostoolkit==1.19.0",
    "chaostoolkit-lib==1.44.0",
    "pytest==8.4.2",
    "mypy==1.13.0",
    "setuptools>=70.1,<81",
];
const TOKEN: &str = "chaos-toolkit-test-token";
/// The breaker the example waits for.
const BREAKER: &str = "checkout->payment";
/// Longest one `chaos run` of the example may take (it waits up to 30 s for the open and 90 s for the close;
/// the close comes about 30 s after the fault is removed, the breaker's open window).
const RUN_LIMIT: Duration = Duration::from_secs(150);
/// Longest any other wait of this test.
const WAIT_LIMIT: Duration = Duration::from_secs(60);

fn extension_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/chaostoolkit")
}

/// Runs `command` to its end; panics with its output, saying `what` failed, unless it succeeds.
fn run_checked(mut command: Command, what: &str) {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{what}: cannot start it: {error}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The venv's `bin` folder, made once per target directory (again when the pins change), with the
/// extension installed from the repository's current source.
fn venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("chaostoolkit-venv");
        let bin = venv.join("bin");
        let marker = venv.join("tolerant-pins.txt");
        let pins = PINS.join("\n");
        if std::fs::read_to_string(&marker).ok().as_deref() != Some(pins.as_str()) {
            let _ = std::fs::remove_dir_all(&venv);
            let mut make = Command::new("python3");
            make.args(["-m", "venv"]).arg(&venv);
            run_checked(
                make,
                "python3 -m venv (the Chaos Toolkit test needs Python 3 with venv)",
            );
            let mut install = Command::new(bin.join("pip"));
            install
                .args(["install", "--quiet", "--disable-pip-version-check"])
                .args(PINS);
            run_checked(
                install,
                "pip install chaostoolkit (PyPI must be reachable the first time)",
            );
            std::fs::write(&marker, &pins).expect("write the venv's marker");
        }
        // The extension from the source as it is now: its dependencies are the pins, its build needs no network.
        let mut install = Command::new(bin.join("pip"));
        install
            .args([
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-build-isolation",
                "--force-reinstall",
            ])
            .arg(extension_dir())
            .env("PYTHONDONTWRITEBYTECODE", "1");
        run_checked(install, "pip install ./integrations/chaostoolkit");
        bin
    })
}

#[test]
fn every_function_of_the_extension_is_typed() {
    let mut mypy = Command::new(venv().join("python"));
    mypy.args([
        "-m",
        "mypy",
        "--ignore-missing-imports",
        "--disallow-untyped-defs",
        "--disallow-incomplete-defs",
        "--no-incremental",
        "--cache-dir",
        "/dev/null",
        "chaostolerant",
    ])
    .current_dir(extension_dir());
    run_checked(mypy, "mypy on the extension");
}

#[test]
fn the_extensions_unit_tests_pass_against_the_recorded_dashboard_api() {
    let mut pytest = Command::new(venv().join("python"));
    pytest
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(extension_dir())
        .env("PYTHONDONTWRITEBYTECODE", "1");
    run_checked(pytest, "the extension's unit tests (pytest)");
}

/// Starts the whole stack on ephemeral ports in `dir`; returns it with the dashboard's URL.
fn start_stack(dir: &Path) -> (Running, String) {
    let mut child = Command::new(BIN)
        .current_dir(dir)
        .env("TOLERANT_BIND", "127.0.0.1:0")
        .env("TOLERANT_DB", dir.join("tolerant.db"))
        .env("TOLERANT_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .env_remove("TOLERANT_TARGETS")
        .env_remove("TOLERANT_COMPOSE")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("tolerant starts");
    let stdout = child.stdout.take().expect("stdout");
    let (found, url) = std::sync::mpsc::channel();
    // Reads the dashboard's address, then keeps draining so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = line.strip_prefix("Tolerant dashboard: ") {
                let _ = found.send(url.trim().trim_end_matches('/').to_owned());
            }
        }
    });
    let url = url
        .recv_timeout(Duration::from_secs(120))
        .expect("the stack prints its dashboard's address within 2 minutes");
    (Running(child), url)
}

async fn get(client: &reqwest::Client, url: &str) -> Value {
    let response = client.get(url).send().await.expect("the dashboard answers");
    assert!(response.status().is_success(), "GET {url}: {response:?}");
    response.json().await.expect("a JSON answer")
}

/// The ids of the faults the agent holds now, as the dashboard asks it.
async fn faults(client: &reqwest::Client, dashboard: &str) -> Vec<String> {
    let answer = get(client, &format!("{dashboard}/api/faults")).await;
    answer["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .map(|fault| fault["id"].as_str().expect("an id").to_owned())
        .collect()
}

/// Waits (bounded) until `done` holds.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn until<F: std::future::Future<Output = bool>>(what: &str, mut done: impl FnMut() -> F) {
    let deadline = Instant::now() + WAIT_LIMIT;
    while !done().await {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether this process ignores SIGINT (a shell without job control starts background jobs so): a child
/// inherits that, and Python then never turns Ctrl-C into `KeyboardInterrupt`.
fn sigint_ignored() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (2 - 1)) != 0)
}

/// `chaos run EXAMPLE` in `dir` (its journal `journal_name`.json, its log `journal_name`.log) against the
/// dashboard at `dashboard`, started, not waited for.
fn chaos_run(dir: &Path, dashboard: &str, journal_name: &str) -> Running {
    let arguments = [
        "--no-version-check",
        "--log-file",
        &format!("{journal_name}.log"),
        "--settings",
        "settings.yaml",
        "run",
        "--journal-path",
        &format!("{journal_name}.json"),
    ]
    .map(str::to_owned);
    let example = extension_dir().join("examples/payment-outage.json");
    let mut command = if sigint_ignored() {
        // The `chaos` entry point, with Python's Ctrl-C handler put back first.
        let mut command = Command::new(venv().join("python"));
        command.args([
            "-c",
            "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); \
             from chaostoolkit.__main__ import cli; sys.argv[0] = 'chaos'; sys.exit(cli())",
        ]);
        command
    } else {
        Command::new(venv().join("chaos"))
    };
    let child: Child = command
        .args(arguments)
        .arg(example)
        .current_dir(dir)
        .env("TOLERANT_URL", dashboard)
        .env("TOLERANT_TOKEN", TOKEN)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chaos starts");
    Running(child)
}

/// Waits (at most `limit`) for `chaos` to exit; its exit code.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn exit_code(chaos: &mut Running, dir: &Path, journal_name: &str, limit: Duration) -> i32 {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = chaos.0.try_wait().expect("chaos's status") {
            return status.code().unwrap_or(-1);
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join(format!("{journal_name}.log")))
                .unwrap_or_default();
            panic!("chaos run did not end within {limit:?}; its log:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn journal(dir: &Path, journal_name: &str) -> Value {
    let text = std::fs::read_to_string(dir.join(format!("{journal_name}.json")))
        .expect("chaos wrote its journal");
    serde_json::from_str(&text).expect("the journal is JSON")
}

/// `(name, status)` of every activity in `runs` (a journal's `run` or `rollbacks`).
fn activities(runs: &Value) -> Vec<(String, String)> {
    runs.as_array()
        .expect("a list of runs")
        .iter()
        .map(|run| {
            (
                run["activity"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                run["status"].as_str().unwrap_or("none").to_owned(),
            )
        })
        .collect()
}

fn succeeded(names: &[&str]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|name| ((*name).to_owned(), "succeeded".to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chaos_run_sees_the_breaker_open_and_close_and_neither_run_leaves_a_fault() {
    let bin = venv();
    assert!(bin.join("chaos").exists(), "the venv has `chaos`");
    let dir = TempStore::new("chaos-toolkit");
    let (_stack, dashboard) = start_stack(dir.dir());
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    until("the first breaker board", || async {
        let board = get(&client, &format!("{dashboard}/api/breakers")).await;
        board["breakers"]
            .as_array()
            .is_some_and(|tiles| tiles.iter().any(|tile| tile["name"] == BREAKER))
    })
    .await;

    let mut chaos = chaos_run(dir.dir(), &dashboard, "completed");
    let code = exit_code(&mut chaos, dir.dir(), "completed", RUN_LIMIT).await;
    let run = journal(dir.dir(), "completed");
    assert_eq!(code, 0, "chaos run exits 0: {run:#}");
    assert_eq!(run["status"], "completed", "{run:#}");
    assert_eq!(run["deviated"], false);
    for when in ["before", "after"] {
        let hypothesis = &run["steady_states"][when];
        assert_eq!(
            hypothesis["steady_state_met"], true,
            "{when}: {hypothesis:#}"
        );
        assert_eq!(
            activities(&hypothesis["probes"]),
            succeeded(&["checkout->payment is closed", "no fault is injected"]),
            "{when}"
        );
    }
    assert_eq!(
        activities(&run["run"]),
        succeeded(&[
            "shoppers on the boutique",
            "payment answers 503 to everything",
            "checkout->payment opens",
            "payment is back",
            "checkout->payment closes again",
        ])
    );
    let method = run["run"].as_array().expect("the method's runs");
    assert_eq!(method[2]["output"]["state"], "open", "{:#}", method[2]);
    assert_eq!(method[4]["output"]["state"], "closed", "{:#}", method[4]);
    assert!(
        method[2]["output"]["opens"].as_u64() >= Some(1),
        "the open is counted: {:#}",
        method[2]
    );
    assert_eq!(
        activities(&run["rollbacks"]),
        succeeded(&["halt every fault", "stop the shoppers"])
    );
    assert_eq!(faults(&client, &dashboard).await, Vec::<String>::new());

    // Interrupted once the fault is on: no rollbacks are played, the control halts.
    let mut chaos = chaos_run(dir.dir(), &dashboard, "interrupted");
    until("the interrupted run's fault", || async {
        faults(&client, &dashboard).await == ["payment-outage"]
    })
    .await;
    let pid = chaos.0.id().to_string();
    let mut interrupt = Command::new("sh");
    interrupt.args(["-c", "kill -INT \"$0\"", &pid]);
    run_checked(interrupt, "kill -INT chaos");
    exit_code(&mut chaos, dir.dir(), "interrupted", WAIT_LIMIT).await;
    let run = journal(dir.dir(), "interrupted");
    assert_eq!(run["status"], "interrupted", "{run:#}");
    assert_eq!(
        activities(&run["rollbacks"]),
        Vec::<(String, String)>::new(),
        "Chaos Toolkit plays no rollbacks on an interruption: the control is what halts"
    );
    let log = std::fs::read_to_string(dir.dir().join("interrupted.log")).expect("chaos's log");
    assert!(
        log.contains("Experiment ended interrupted: halting Tolerant")
            && log.contains("Tolerant halted: no fault left on its agents"),
        "{log}"
    );
    assert_eq!(faults(&client, &dashboard).await, Vec::<String>::new());
}
