//! `tolerant run`'s exit status tells how its runs ended: a run whose fault cannot be applied is aborted and the
//! command exits non-zero naming the run and why on stderr (it used to say "0 of 1 runs" and exit 0). A spec
//! whose fault lease or delay is above the agent's caps, or with more virtual users than the process's
//! descriptors can hold, is refused before anything is stored (exit 2 naming the field).

use std::path::Path;
use std::process::Command;

use controller::store::{Status, Store};

mod common;

use common::{BIN, text, tolerant};
use controller::test_support::TempStore;

/// Exit status of a run that did not end as planned (`src/cli/controller.rs`).
const EXIT_RUNS_FAILED: i32 = 3;

/// One run of 2 s at time_scale 10; the agent keeps a fault at most 10 minutes, the spec asks for an hour.
const LEASE_ABOVE_AGENT_MAX: &str = r#"
name = "lease-too-long"
rounds = 1
duration = "20s"
warmup = "1s"
time_scale = 10.0
seed = 1

[load]
users = 2
think_time = ["100ms", "200ms"]

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]
lease = "1h"

[breaker]
modes = ["enforce"]
"#;

/// A fault the run cannot apply (a container fault kind with no container engine to apply it through): the
/// run is aborted, and the command exits non-zero naming the run and why on stderr; `show` says why too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_a_run_cannot_apply_makes_run_exit_non_zero() {
    let dir = TempStore::new("unapplied");
    let spec = dir.dir().join("unapplied.toml");
    let pause = LEASE_ABOVE_AGENT_MAX
        .replace("kind = \"error\"\nstatus = 500\n", "kind = \"pause\"\n")
        .replace("lease = \"1h\"\n", "");
    std::fs::write(&spec, pause).unwrap();
    let db = dir.location();
    let output = tolerant(&["run", spec.to_str().unwrap(), "--db", &db], dir.dir());
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(EXIT_RUNS_FAILED),
        "stdout: {}\nstderr: {stderr}",
        text(&output.stdout)
    );
    assert!(
        stderr.contains("1 run(s) did not end as planned"),
        "{stderr}"
    );
    assert!(stderr.contains("run 1 (round 1, "), "{stderr}");
    assert!(
        stderr.contains("aborted — fault.kinds: `pause` acts on containers"),
        "{stderr}"
    );

    let store = Store::open(&db).await.unwrap();
    let experiment = store.experiments().await.unwrap().pop().unwrap();
    let runs = store.runs(experiment.id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, Status::Aborted);
    store.close().await;

    // `show` says why the run did not count.
    let shown = tolerant(
        &["show", &experiment.id.0.to_string(), "--db", &db],
        dir.dir(),
    );
    let stdout = text(&shown.stdout);
    assert!(shown.status.success(), "{}", text(&shown.stderr));
    assert!(
        stdout.contains("run 1 aborted: fault.kinds: `pause` acts on containers"),
        "{stdout}"
    );
}

/// A spec asking more than the agent takes — a lease over its `max_lease`, a delay (with its jitter) over its
/// `max_hold` — exits 2 naming the field at the preflight, before any experiment is stored (it used to store
/// the experiment and abort its run with "fault not applied").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_beyond_the_agents_caps_exits_2_naming_the_field_before_anything_is_stored() {
    let delay = |delay: &str, jitter: &str| {
        LEASE_ABOVE_AGENT_MAX
            .replace(
                "kind = \"error\"\nstatus = 500\n",
                &format!("kind = \"delay\"\ndelay = \"{delay}\"\njitter = \"{jitter}\"\n"),
            )
            .replace("lease = \"1h\"\n", "")
    };
    for (name, spec, said) in [
        (
            "lease",
            LEASE_ABOVE_AGENT_MAX.to_owned(),
            "fault.lease: 1h is over the agent's max_lease of 10m",
        ),
        (
            "delay",
            delay("2m", "0s"),
            "fault.delay: 2m is over the agent's max_hold of 1m",
        ),
        (
            "jitter",
            delay("50s", "20s"),
            "fault.jitter: 1m 10s is over the agent's max_hold (delay + jitter) of 1m",
        ),
    ] {
        let dir = TempStore::new(name);
        let path = dir.dir().join(format!("{name}.toml"));
        std::fs::write(&path, spec).unwrap();
        let db = dir.location();
        let output = tolerant(&["run", path.to_str().unwrap(), "--db", &db], dir.dir());
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(said), "{name}: {stderr}");
        let store = Store::open(&db).await.unwrap();
        assert!(
            store.experiments().await.unwrap().is_empty(),
            "{name}: no experiment stored"
        );
        store.close().await;
    }
}

/// 600 users against the embedded stack with 1 024 descriptors (soft and hard, set by the shell before the
/// binary starts, so it cannot raise them): refused before anything is stored or started, naming the field.
#[test]
fn users_above_the_descriptor_budget_are_refused_before_anything_is_stored() {
    let dir = TempStore::new("budget");
    let spec = dir.dir().join("many.toml");
    let many = LEASE_ABOVE_AGENT_MAX
        .replace("users = 2", "users = 600")
        .replace("lease = \"1h\"\n", "");
    std::fs::write(&spec, many).unwrap();
    let db = dir.location();
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 1024 && exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(["run", spec.to_str().unwrap(), "--db", &db])
        .current_dir(dir.dir())
        .env_remove("TOLERANT_DB")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("load.users: 600 virtual users need more file descriptors"),
        "{stderr}"
    );
    assert!(
        stderr.contains("at most 0 users in a limit of 1024"),
        "{stderr}"
    );
    assert!(!Path::new(&db).exists(), "nothing stored: no database made");
}

/// `tolerant run` with `spec`, in a fresh directory: the exit status, stderr, and whether a database was made.
fn run_spec(name: &str, spec: &str) -> (Option<i32>, String, bool) {
    let dir = TempStore::new(name);
    let path = dir.dir().join(format!("{name}.toml"));
    std::fs::write(&path, spec).unwrap();
    let db = dir.location();
    let output = tolerant(
        &["run", path.to_str().unwrap(), "--db", &db, "--token", "t"],
        dir.dir(),
    );
    (
        output.status.code(),
        text(&output.stderr),
        Path::new(&db).exists(),
    )
}

/// Mistakes only a run finds in a spec (after it parsed) exit 2 naming the field, before anything is stored:
/// a push source without `listen`, `[targets]` without an agent, a load target that is not `http://IP:PORT`.
#[test]
fn spec_mistakes_a_run_finds_exit_2_naming_the_field_before_anything_is_stored() {
    let push = format!("{LEASE_ABOVE_AGENT_MAX}\n[[sources]]\nkind = \"push\"\n");
    let targets = |agent: &str, shop: &str| {
        format!(
            r#"name = "targets"
rounds = 1
duration = "2s"

[load]
users = 1
target = "shop"

[[load.tasks]]
name = "home"
requests = [{{ path = "/" }}]

[fault]
target = "payment"
rates = [1.0]

[targets]
shop = {{ url = "{shop}", offers = [] }}
{agent}
"#
        )
    };
    for (name, spec, field) in [
        ("push-no-listen", push, "sources[0].listen"),
        (
            "targets-no-agent",
            targets("", "http://127.0.0.1:9"),
            "targets.agent",
        ),
        (
            "targets-bad-frontend",
            targets("agent = \"http://127.0.0.1:9\"", "http://localhost:9"),
            "targets.shop",
        ),
    ] {
        let (code, stderr, stored) = run_spec(name, &spec);
        assert_eq!(code, Some(2), "{name}: {stderr}");
        assert!(stderr.contains(field), "{name}: {stderr}");
        assert!(!stored, "{name}: nothing stored, no database made");
    }
}
