//! `tolerant report | validate | halt` as a user runs them: the built binary spawned against a store
//! filled through the controller's public store API in a temp dir (and, for halt, the binary's own
//! `tolerant agent` on a loopback port).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use controller::load::{EndpointReport, EndpointStats, RequestOutcome, endpoint};
use controller::report::CSV_HEADER;
use controller::store::{ExperimentId, NewAnnotation, RunRecord, Status, Store};
use controller::testbed::AdminClient;
use http::Method;

mod common;

use common::{BIN, text, tolerant};
use controller::test_support::{self, TempStore};

const SPEC: &str = r#"
name = "cli-results"
rounds = 3
duration = "10s"
warmup = "2s"
order = "fixed"

[load]
users = 1

[fault]
target = "payment"
rates = [0.0, 1.0]

[breaker]
modes = ["disabled", "enforce"]
"#;

/// 100 requests on `GET /`: all ok at 0 %; at 100 %, round r has 90 + r ok and 10 − r failed, so
/// the availability at 100 % is 0.90, 0.91, 0.92 over the three rounds (mean 0.91, 95 % CI
/// 0.91 ± 4.303 · 0.01 / √3 ≈ [0.885, 0.935]).
fn record(rate: f64, round: u32, start_ms: i64) -> RunRecord {
    let names: Vec<String> = endpoint::NAMES.iter().map(|n| (*n).to_owned()).collect();
    let ok = if rate > 0.0 { 90 + round } else { 100 };
    let mut stats = EndpointStats::default();
    for i in 0..100 {
        let outcome = if i < ok {
            RequestOutcome::Ok
        } else {
            RequestOutcome::Failed
        };
        stats.record(outcome, 1_000, 0);
    }
    RunRecord {
        status: Status::Finished,
        abort_reason: None,
        load_errors: 0,
        finished_at_ms: start_ms + 12_000,
        endpoint_names: names.clone(),
        seconds: Vec::new(),
        endpoints: vec![EndpointReport {
            name: names[endpoint::INDEX].clone(),
            stats,
        }],
        collector: Vec::new(),
        transitions: Vec::new(),
        events: Vec::new(),
        energy: None,
        sources: Vec::new(),
    }
}

/// Stores the experiment of `spec` with every planned run finished; returns its id.
async fn fill_store(db: &str, spec: &str) -> i64 {
    let store = Store::open(db).await.unwrap();
    let spec = test_support::spec(spec);
    let id = store.create_experiment(&spec, 1_000).await.unwrap();
    let (warmup, duration) = (Duration::from_secs(2), Duration::from_secs(10));
    for planned in spec.plan() {
        let start_ms = 100_000 * (planned.sequence as i64 + 1);
        let run = store
            .start_run(id, &planned, warmup, duration, start_ms)
            .await
            .unwrap();
        let record = record(planned.condition.fault_rate, planned.round, start_ms);
        store.finish_run(run, &record).await.unwrap();
    }
    store
        .set_experiment_status(id, Status::Finished, 2_000_000, None)
        .await
        .unwrap();
    store.close().await;
    id.0
}

/// Writes the spec plus one availability criterion at 100 % / enforce and returns its path.
fn spec_with_criterion(dir: &TempStore, file: &str, criterion: &str) -> PathBuf {
    let path = dir.dir().join(file);
    let toml = format!(
        "{SPEC}\n[[validate]]\nmetric = \"availability\"\nbreaker = \"enforce\"\n{criterion}\n"
    );
    std::fs::write(&path, toml).unwrap();
    path
}

/// On SQLite always, and on PostgreSQL too when `TOLERANT_TEST_PG_URL` is set (as `scripts/test`
/// does): the gate reads the same figures from either.
#[tokio::test]
async fn validate_exits_0_on_pass_1_on_fail_2_on_a_bad_spec() {
    let dir = TempStore::new("validate");
    validate_exit_codes_on(&dir, &dir.location()).await;
    if let Ok(url) = std::env::var("TOLERANT_TEST_PG_URL") {
        validate_exit_codes_on(&dir, &url).await;
    }
}

async fn validate_exit_codes_on(dir: &TempStore, db: &str) {
    let db = db.to_owned();
    fill_store(&db, SPEC).await;

    let pass = spec_with_criterion(
        dir,
        "pass.toml",
        "fault_rate = 1.0\ncomparison = \">=\"\nthreshold = 0.85",
    );
    let output = tolerant(
        &["validate", pass.to_str().unwrap(), "--db", &db],
        dir.dir(),
    );
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("**PASS**"), "{stdout}");

    // The interval reaches below 0.9 although the mean (0.91) is above it: not a pass.
    let fail = spec_with_criterion(
        dir,
        "fail.toml",
        "fault_rate = 1.0\ncomparison = \">=\"\nthreshold = 0.9",
    );
    let report = dir.dir().join("validation.md");
    let output = tolerant(
        &[
            "validate",
            fail.to_str().unwrap(),
            "--db",
            &db,
            "--out",
            report.to_str().unwrap(),
        ],
        dir.dir(),
    );
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("**FAIL**"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&report).unwrap(), stdout);

    // A criterion at a fault rate the spec does not run is a bad spec, named in the message.
    let bad = spec_with_criterion(
        dir,
        "bad.toml",
        "fault_rate = 0.5\ncomparison = \">=\"\nthreshold = 0.5",
    );
    let output = tolerant(&["validate", bad.to_str().unwrap(), "--db", &db], dir.dir());
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("fault_rate 0.5"),
        "{}",
        text(&output.stderr)
    );

    // A wrong comparison is a bad spec too, and so is a spec without criteria.
    let wrong = spec_with_criterion(
        dir,
        "wrong.toml",
        "fault_rate = 1.0\ncomparison = \"=~\"\nthreshold = 0.5",
    );
    let output = tolerant(
        &["validate", wrong.to_str().unwrap(), "--db", &db],
        dir.dir(),
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("comparison"),
        "{}",
        text(&output.stderr)
    );
    let bare = dir.dir().join("bare.toml");
    std::fs::write(&bare, SPEC).unwrap();
    let output = tolerant(
        &["validate", bare.to_str().unwrap(), "--db", &db],
        dir.dir(),
    );
    assert_eq!(output.status.code(), Some(2));

    // A spec whose experiment was never stored cannot pass.
    let other = dir.dir().join("other.toml");
    let renamed = std::fs::read_to_string(&pass)
        .unwrap()
        .replace("cli-results", "never-run");
    std::fs::write(&other, renamed).unwrap();
    let output = tolerant(
        &["validate", other.to_str().unwrap(), "--db", &db],
        dir.dir(),
    );
    assert_eq!(output.status.code(), Some(1));
    assert!(
        text(&output.stderr).contains("never-run"),
        "{}",
        text(&output.stderr)
    );
}

#[tokio::test]
async fn report_prints_csv_and_json_and_writes_markdown_with_plots() {
    let dir = TempStore::new("report");
    let db = dir.location();
    let experiment = fill_store(&db, SPEC).await;
    let id = experiment.to_string();
    let store = Store::open(&db).await.unwrap();
    store
        .insert_annotation(&NewAnnotation {
            at_ms: 150_000,
            text: "18:02 cut the payment database".into(),
            author: Some("game-day lead".into()),
            experiment_id: Some(ExperimentId(experiment)),
            run_id: None,
        })
        .await
        .unwrap();
    store.close().await;

    let output = tolerant(&["report", &id, "--format", "csv", "--db", &db], dir.dir());
    assert!(output.status.success(), "{}", text(&output.stderr));
    let csv = text(&output.stdout);
    assert_eq!(csv.lines().next().unwrap(), CSV_HEADER.join(","));
    assert!(csv.contains("availability"), "{csv}");

    let output = tolerant(&["report", &id, "--format", "json", "--db", &db], dir.dir());
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["confidence"], 0.95);
    assert_eq!(
        json["annotations"][0]["text"], "18:02 cut the payment database",
        "{json}"
    );
    // The simulator's predictions were stored with the experiment, one per condition.
    let predictions = json["predictions"].as_array().expect("predictions");
    assert_eq!(predictions.len(), 4, "{json}");
    assert_eq!(predictions[3]["label"], "error 500 @ 100% / enforce");

    let output = tolerant(&["show", &id, "--db", &db], dir.dir());
    assert!(output.status.success(), "{}", text(&output.stderr));
    let shown = text(&output.stdout);
    assert!(shown.contains("predicted by breaker::sim"), "{shown}");
    // Per breaker of the chain: Payment's breaker and the frontend's on Checkout above it, each predicted and
    // bounded under its own name.
    for breaker in ["checkout->payment", "frontend->checkout"] {
        assert!(
            shown.contains(&format!("opens bound [{breaker}]")),
            "{breaker}: {shown}"
        );
        assert!(
            shown
                .lines()
                .any(|line| line.contains(&format!("breaker_opens [{breaker}]"))
                    && line.contains("predicted")),
            "{breaker}: {shown}"
        );
    }
    let output = tolerant(&["show", &id, "--json", "--db", &db], dir.dir());
    let shown: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(shown["predictions"].as_array().map(Vec::len), Some(4));

    let output = tolerant(&["report", &id, "--db", &db], dir.dir());
    assert!(output.status.success(), "{}", text(&output.stderr));
    let printed = text(&output.stdout);
    let markdown_path = dir.dir().join(printed.trim());
    let markdown = std::fs::read_to_string(&markdown_path).unwrap();
    assert!(markdown.contains("cli-results"), "{markdown}");
    assert!(markdown.contains("## Predicted vs measured"), "{markdown}");
    let folder = markdown_path.parent().unwrap();
    assert!(folder.ends_with(format!("report-{id}")));
    let svgs = std::fs::read_dir(folder)
        .unwrap()
        .filter(|entry| {
            let path = entry.as_ref().unwrap().path();
            path.extension().is_some_and(|e| e == "svg")
        })
        .count();
    assert!(svgs > 0, "no SVG next to {}", markdown_path.display());

    let output = tolerant(&["report", &id, "--format", "pdf", "--db", &db], dir.dir());
    assert_eq!(output.status.code(), Some(2), "clap refuses the format");
    let output = tolerant(
        &["report", "999", "--format", "csv", "--db", &db],
        dir.dir(),
    );
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("999"),
        "{}",
        text(&output.stderr)
    );
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `tolerant agent` with its control API on `control`, killed when dropped.
struct AgentProcess(Child);

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn halt_clears_the_faults_of_the_agents_stored_experiments_name() {
    const TOKEN: &str = "halt-test-token";
    let dir = TempStore::new("halt");
    let control = format!("127.0.0.1:{}", free_port());
    let _agent = AgentProcess(
        Command::new(BIN)
            .args(["agent", "--upstream", "http://127.0.0.1:9"])
            .args(["--listen", &format!("127.0.0.1:{}", free_port())])
            .args(["--control", &control, "--threads", "1"])
            .env("TOLERANT_TOKEN", TOKEN)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let agent_url = format!("http://{control}");
    let client = AdminClient::new(TOKEN);
    let fault = Bytes::from_static(br#"{"kind":"error","status":500,"rate":1.0,"lease":"60s"}"#);
    let put = format!("{agent_url}/_agent/faults/test");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = client
            .call(
                Method::PUT,
                &put,
                controller::testbed::Credential::Token,
                Some("application/json"),
                fault.clone(),
            )
            .await;
        match answer {
            Ok(_) => break,
            Err(error) if Instant::now() > deadline => panic!("agent never answered: {error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    let faults_url = format!("{agent_url}/_agent/faults");
    let listed = client
        .call(
            Method::GET,
            &faults_url,
            controller::testbed::Credential::Anonymous,
            None,
            Bytes::new(),
        )
        .await
        .unwrap();
    assert!(text(&listed).contains("test"), "{}", text(&listed));

    // The agent is known only through a stored experiment's [targets].
    let db = dir.location();
    let spec =
        format!("{SPEC}\n[targets]\nfrontend = \"http://127.0.0.1:9\"\nagent = \"{agent_url}\"\n");
    fill_store(&db, &spec).await;

    let output = tolerant(&["halt", "--db", &db], dir.dir());
    assert!(
        !output.status.success(),
        "no token: refused before any call"
    );

    let output = tolerant(&["halt", "--db", &db, "--token", "wrong"], dir.dir());
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("NOT halted"),
        "{}",
        text(&output.stderr)
    );

    let output = tolerant(&["halt", "--db", &db, "--token", TOKEN], dir.dir());
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("1 faults removed"), "{stdout}");
    let listed = client
        .call(
            Method::GET,
            &faults_url,
            controller::testbed::Credential::Anonymous,
            None,
            Bytes::new(),
        )
        .await
        .unwrap();
    assert!(!text(&listed).contains("\"test\""), "{}", text(&listed));

    // Given by hand instead, without a database: the same agent, now with nothing to remove.
    let output = tolerant(
        &[
            "halt",
            "--db",
            dir.dir().join("absent.db").to_str().unwrap(),
            "--agent",
            &agent_url,
            "--token",
            TOKEN,
        ],
        dir.dir(),
    );
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(stdout.contains("0 faults removed"), "{stdout}");
}

// Two workers: the binary is waited for on one, the services answer it on the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halt_puts_the_breakers_of_a_given_service_back_to_their_startup_config() {
    const TOKEN: &str = "halt-breakers-token";
    let dir = TempStore::new("halt-breakers");
    let config = boutique::RawStackConfig::default()
        .with_token(TOKEN)
        .and_then(boutique::RawStackConfig::build)
        .expect("a valid stack config");
    let stack = boutique::RunningStack::start(config).await.unwrap();
    let checkout = stack.url(boutique::ServiceName::Checkout);
    let client = AdminClient::new(TOKEN);
    let disabled = breaker::BreakerConfig::default().with_mode(breaker::Mode::Disabled);
    client
        .set_breakers(&checkout, &disabled, Some(Duration::from_secs(600)))
        .await
        .unwrap();
    assert_eq!(
        client
            .breaker_config(&checkout)
            .await
            .unwrap()
            .config
            .mode(),
        breaker::Mode::Disabled
    );
    let absent = dir.dir().join("absent.db");
    let halt = |token: &'static str| {
        let args = [
            "halt",
            "--db",
            absent.to_str().unwrap(),
            "--service",
            &checkout,
            "--token",
            token,
        ];
        tolerant(&args, dir.dir())
    };

    let output = halt("wrong");
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("breakers NOT restored"),
        "{}",
        text(&output.stderr)
    );
    let output = halt(TOKEN);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    assert!(
        stdout.contains("breakers back to the startup config"),
        "{stdout}"
    );
    let view = client.breaker_config(&checkout).await.unwrap();
    assert_eq!(view.config, view.startup);
    assert_eq!(view.lease, None);
    stack.shutdown().await;
}

/// `tolerant show 1 | head` and friends: a reader that has gone (EPIPE) ends every printing subcommand
/// quietly — exit 0, no panic — instead of crashing on the first line.
#[tokio::test]
async fn every_printing_subcommand_exits_quietly_on_a_closed_pipe() {
    let dir = TempStore::new("epipe");
    let db = dir.location();
    let id = fill_store(&db, SPEC).await.to_string();
    let validate = spec_with_criterion(
        &dir,
        "gate.toml",
        "fault_rate = 1.0\ncomparison = \">=\"\nthreshold = 0.5",
    );
    let commands: Vec<Vec<&str>> = vec![
        vec!["show", &id, "--db", &db],
        vec!["list", "--db", &db],
        vec!["report", &id, "--db", &db],
        vec!["report", &id, "--format", "csv", "--db", &db],
        vec!["report", &id, "--format", "json", "--db", &db],
        vec!["validate", validate.to_str().unwrap(), "--db", &db],
        vec!["simulate"],
        vec!["--help"],
    ];
    for args in commands {
        // The pipe's reading end is closed before the command starts: its first write meets EPIPE.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = Command::new(BIN)
            .args(&args)
            .current_dir(dir.dir())
            .env_remove("TOLERANT_DB")
            .env_remove("TOLERANT_TOKEN")
            .env("RUST_LOG", "warn")
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = text(&output.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

/// A user's mistake (here an experiment that is not there) is one line on stderr and exit 1, with no backtrace
/// even under `RUST_BACKTRACE=1`: a backtrace belongs to a panic.
#[tokio::test]
async fn a_user_error_is_one_line_without_a_backtrace() {
    let dir = TempStore::new("one-line");
    let db = dir.location();
    fill_store(&db, SPEC).await;
    let output = Command::new(BIN)
        .args(["report", "999", "--db", &db])
        .current_dir(dir.dir())
        .env_remove("TOLERANT_DB")
        .env_remove("TOLERANT_TOKEN")
        .env("RUST_LOG", "warn")
        .env("RUST_BACKTRACE", "1")
        .env("RUST_LIB_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains("999"),
        "names what was not found: {stderr}"
    );
    assert!(!stderr.to_lowercase().contains("backtrace"), "{stderr}");
}
