//! A real orchestrator on this machine: the engine in swarm mode, `docker-stack.yml` deployed from the image this
//! test build made with Checkout at 3 replicas, and a short `tolerant run --swarm` whose fault is a `kill` of one
//! Checkout task (`checkout#2`). Swarm starts a new task in that slot; the run must finish, follow the
//! replacement's breaker stream under the slot's label, and store the kill and the replacement as events. Then
//! the stack is removed and, when the test put the engine in swarm mode, the node leaves it again: a guard does
//! all of that when dropped, so the engine is left as it was found even when the test fails.
//!
//! Without an engine (or the docker CLI) the test is skipped, unless `CI` is set: then it fails.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use controller::docker::{Deployment, Engine};
use controller::store::{RunEventKind, Status, Store};

mod common;
use common::compose::{TOKEN, repo, tolerant_with_token};
use controller::test_support::TempStore;

/// The image the test deploys (its own tag: the compose tests' may be rebuilt meanwhile).
const IMAGE: &str = "tolerant:swarm-test";
/// Longest the stack may take to run every task healthy, and to go away.
const STACK_LIMIT: Duration = Duration::from_secs(120);

fn docker(args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run docker")
}

fn docker_ok(args: &[&str]) -> String {
    let output = docker(args);
    assert!(
        output.status.success(),
        "docker {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn network_exists(name: &str) -> bool {
    docker(&["network", "inspect", name]).status.success()
}

/// Everything the test changed on the engine, undone on drop (stack, network, swarm mode, the gateway bridge
/// swarm made), whatever happened before.
struct EngineGuard {
    stack: String,
    network: String,
    /// The test ran `docker swarm init`: the node leaves swarm mode at the end.
    initialised: bool,
    /// `docker_gwbridge` was there before the test.
    had_gateway_bridge: bool,
}

impl Drop for EngineGuard {
    #[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
    fn drop(&mut self) {
        let _ = docker(&["stack", "rm", &self.stack]);
        // The stack's containers and its network go in the background: wait for them (bounded).
        let started = Instant::now();
        while started.elapsed() < STACK_LIMIT {
            let left = docker(&[
                "ps",
                "-aq",
                "--filter",
                &format!("label=com.docker.stack.namespace={}", self.stack),
            ]);
            let stack_network = format!("{}_boutique", self.stack);
            if left.stdout.iter().all(u8::is_ascii_whitespace) && !network_exists(&stack_network) {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        let _ = docker(&["network", "rm", &self.network]);
        if self.initialised {
            let _ = docker(&["swarm", "leave", "--force"]);
            if !self.had_gateway_bridge {
                let _ = docker(&["network", "rm", "docker_gwbridge"]);
            }
        }
    }
}

/// The engine and the docker CLI with `stack`, or `None` (said why); with `CI` set a missing one fails.
async fn engine() -> Option<Engine> {
    let skip = |why: String| {
        assert!(std::env::var_os("CI").is_none(), "CI is set and {why}");
        eprintln!("skipped: {why}");
        None
    };
    let engine = match Engine::connect(&controller::docker::socket_from_env()).await {
        Ok(engine) => engine,
        Err(error) => return skip(error.to_string()),
    };
    let has_stack = Command::new("docker")
        .args(["stack", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !has_stack {
        return skip("the docker CLI (with `docker stack`) is not installed".into());
    }
    Some(engine)
}

fn spec() -> &'static str {
    r#"
name = "swarm kill"
rounds = 1
duration = "20s"
warmup = "1s"
order = "fixed"
seed = 5

[load]
users = 4
think_time = ["20ms", "100ms"]
timeout = "2s"

[fault]
target = "checkout#2"
kind = "kill"
rates = [1.0]
lease = "30s"

[breaker]
modes = ["enforce"]
"#
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn a_killed_swarm_task_is_replaced_followed_and_recorded() {
    let Some(engine) = engine().await else {
        return;
    };
    let built = Command::new("bash")
        .arg(repo().join("scripts/images"))
        .env("TOLERANT_BINARY", common::BIN)
        .env("TOLERANT_IMAGE", IMAGE)
        .output()
        .expect("run scripts/images");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );

    let pid = std::process::id();
    let was_in_swarm = engine.in_swarm().await.expect("engine info");
    let guard = EngineGuard {
        stack: format!("tolerant-swarm-{pid}"),
        network: format!("tolerant-swarm-reach-{pid}"),
        initialised: !was_in_swarm,
        had_gateway_bridge: network_exists("docker_gwbridge"),
    };
    if !was_in_swarm {
        docker_ok(&["swarm", "init", "--advertise-addr", "127.0.0.1"]);
    }
    assert!(engine.in_swarm().await.unwrap());
    docker_ok(&[
        "network",
        "create",
        "--driver",
        "bridge",
        "--scope",
        "swarm",
        "--attachable",
        "--internal",
        &guard.network,
    ]);
    let deployed = Command::new("docker")
        .args(["stack", "deploy", "-c"])
        .arg(repo().join("docker-stack.yml"))
        .arg(&guard.stack)
        .env("TOLERANT_IMAGE", IMAGE)
        .env("TOLERANT_TOKEN", TOKEN)
        .env("TOLERANT_CHECKOUT_REPLICAS", "3")
        .env("TOLERANT_SWARM_NETWORK", &guard.network)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("run docker stack deploy");
    assert!(
        deployed.status.success(),
        "{}",
        String::from_utf8_lossy(&deployed.stderr)
    );

    // Every task running and answering through the bridge: twelve (Checkout three times).
    let deployment = Deployment::Swarm(guard.stack.clone());
    let started = Instant::now();
    let before = loop {
        let containers = engine
            .containers(&deployment)
            .await
            .expect("list the stack");
        let mut healthy = 0;
        for container in &containers {
            if let Some(ip) = container.address() {
                let url = format!("http://{ip}:8080/_healthz");
                if reqwest::get(&url)
                    .await
                    .is_ok_and(|r| r.status().is_success())
                {
                    healthy += 1;
                }
            }
        }
        if healthy == 12 {
            break containers;
        }
        assert!(
            started.elapsed() < STACK_LIMIT,
            "the stack never ran 12 healthy tasks ({healthy})"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let killed = before
        .iter()
        .find(|c| c.replica() == "checkout#2")
        .expect("checkout's slot 2")
        .clone();

    let dir = TempStore::new("swarm");
    std::fs::write(dir.dir().join("swarm.toml"), spec()).expect("write the spec");
    let db = dir.location();
    tolerant_with_token(
        dir.dir(),
        &[
            "run",
            "swarm.toml",
            "--fresh",
            "--db",
            &db,
            "--swarm",
            &guard.stack,
        ],
    );

    let store = Store::open(&db).await.expect("open the store");
    let experiment = store.experiments().await.unwrap().remove(0);
    assert_eq!(experiment.status, Status::Finished, "{experiment:?}");
    let runs = store.runs(experiment.id).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, Status::Finished, "{:?}", runs[0]);
    let events = store.run_events(runs[0].id).await.unwrap();
    let said = |kind: RunEventKind| {
        (events.iter())
            .filter(move |e| e.event.kind() == kind)
            .map(|e| (e.at_ms, e.event.detail_json()))
    };
    let (kill_at, kill) = said(RunEventKind::Applied)
        .find(|(_, detail)| detail["action"]["action"] == "kill")
        .unwrap_or_else(|| panic!("no kill among {events:#?}"));
    assert_eq!(kill["container"], killed.name.as_str());
    let (replaced_at, replaced) = said(RunEventKind::ReplicaReplaced)
        .find(|(_, detail)| detail["replica"] == "checkout#2")
        .unwrap_or_else(|| panic!("no replacement of checkout#2 among {events:#?}"));
    assert_eq!(replaced["previous"], killed.name.as_str());
    assert_ne!(replaced["instance"], killed.name.as_str());
    assert!(replaced_at >= kill_at, "{events:#?}");
    // The replacement's breaker stream was followed under the slot's label.
    let (_, followed) = said(RunEventKind::ReplicaFollowed)
        .find(|(_, detail)| detail["replica"] == "checkout#2")
        .unwrap_or_else(|| panic!("the replacement was not followed: {events:#?}"));
    assert_eq!(followed["url"], replaced["url"]);
    // And took the run's breaker config under its lease (a replica that never took it is `breakers:join_failed`).
    assert!(
        said(RunEventKind::BreakersJoinFailed).next().is_none(),
        "the replacement did not take the run's config: {events:#?}"
    );
    // And it runs in the stack under the same label now.
    let after = engine.containers(&deployment).await.unwrap();
    let now = after
        .iter()
        .find(|c| c.replica() == "checkout#2")
        .expect("slot 2 again");
    assert_ne!(now.id, killed.id);
    drop(store);
    drop(guard);
    if !was_in_swarm {
        assert!(
            !engine.in_swarm().await.unwrap(),
            "the node is still in swarm mode"
        );
    }
}
