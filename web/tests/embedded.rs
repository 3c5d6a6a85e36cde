//! The dashboard over the real embedded stack, without a browser: the API creates and starts an experiment,
//! the websocket streams its progress after a snapshot, abort ends the run (its fault deleted by the run) before
//! it answers, halt
//! answers only with the token, the breaker-mode switch keeps the breakers' configured detectors, and a halt puts
//! every breaker back to its startup config.

use std::time::{Duration, Instant};

use bytes::Bytes;
use controller::test_support::TempStore;
use controller::testbed::{AdminClient, Credential};
use futures::StreamExt;
use http::Method;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;
use web::{DashboardConfig, RunningDashboard};

const TOKEN: &str = "embedded-test-token";
const SPEC: &str = r#"name = "long-outage"
rounds = 1
duration = "60s"
warmup = "1s"

[load]
users = 5
think_time = ["50ms", "200ms"]

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]

[breaker]
modes = ["enforce"]
"#;

async fn json(client: &AdminClient, method: Method, url: &str, body: &str) -> Value {
    let bytes = client
        .call(
            method,
            url,
            Credential::Token,
            None,
            Bytes::from(body.to_owned()),
        )
        .await
        .unwrap_or_else(|error| panic!("{url}: {error}"));
    serde_json::from_slice(&bytes).expect("JSON answer")
}

#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "waited {timeout:?} for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn start_streams_progress_and_abort_clears_the_fault() {
    let dir = TempStore::new("web-embedded-test");
    let dashboard = RunningDashboard::start(DashboardConfig {
        bind: "127.0.0.1:0".parse().expect("addr"),
        database: dir.location(),
        token: Some(TOKEN.into()),
        ..DashboardConfig::default()
    })
    .await
    .expect("dashboard starts");
    assert!(dashboard.addr().ip().is_loopback());
    let base = format!("http://{}", dashboard.addr());
    let agent = dashboard
        .stack()
        .expect("embedded stack")
        .url(boutique::ServiceName::Payment);
    let client = AdminClient::new(TOKEN);
    let anonymous = AdminClient::new("");

    // The token is required; the wrong one is refused too.
    let refused = anonymous
        .call(
            Method::POST,
            &format!("{base}/api/halt"),
            Credential::Token,
            None,
            Bytes::new(),
        )
        .await;
    assert!(
        refused.is_err_and(|error| error.to_string().contains("401")),
        "halt without the token"
    );

    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", dashboard.addr()))
        .await
        .expect("websocket");
    let Some(Ok(Message::Text(first))) = socket.next().await else {
        panic!("no snapshot")
    };
    assert!(first.as_str().starts_with("{\"type\":\"snapshot\""));

    let created = json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments"),
        SPEC,
    )
    .await;
    let id = created["id"].as_i64().expect("id");
    json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments/{id}/start"),
        "",
    )
    .await;

    // Progress arrives over the websocket.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let remaining = deadline.saturating_duration_since(Instant::now());
        let Ok(Some(Ok(Message::Text(text)))) =
            tokio::time::timeout(remaining, socket.next()).await
        else {
            panic!("no progress event within 20 s");
        };
        if text.as_str().contains("\"type\":\"progress\"") {
            break;
        }
    }

    // The run's fault is in the agent.
    wait_until(
        "the fault in the agent",
        Duration::from_secs(10),
        || async {
            let faults = json(&client, Method::GET, &format!("{agent}/_agent/faults"), "").await;
            faults.as_array().is_some_and(|list| !list.is_empty())
        },
    )
    .await;

    // The agent's own account of the removal, subscribed before the abort.
    let (mut agent_events, _) = tokio_tungstenite::connect_async(format!(
        "ws://{}/_agent/stream",
        agent.trim_start_matches("http://")
    ))
    .await
    .expect("agent stream");
    let aborted = Instant::now();
    json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments/{id}/abort"),
        "",
    )
    .await;
    let faults = json(&client, Method::GET, &format!("{agent}/_agent/faults"), "").await;
    assert_eq!(faults, Value::Array(Vec::new()), "abort cleared the fault");
    // The abort answered only after the run had ended: the run deleted its own fault (the halt that
    // follows finds nothing left), so the first removal the agent reports is the run's DELETE.
    let removal = loop {
        let Ok(Some(Ok(Message::Text(text)))) =
            tokio::time::timeout(Duration::from_secs(5), agent_events.next()).await
        else {
            panic!("no removal on the agent's stream");
        };
        let event: Value = serde_json::from_str(text.as_str()).expect("agent event JSON");
        if event["event"] == "removed" {
            break event;
        }
    };
    assert_eq!(removal["reason"], "deleted", "{removal}");
    assert!(aborted.elapsed() < Duration::from_secs(5));
    let list = json(&client, Method::GET, &format!("{base}/api/experiments"), "").await;
    assert_eq!(list[0]["status"], "aborted");
    assert_eq!(list[0]["abort_reason"], "aborted from the dashboard");

    // Aborting again is a conflict, not a crash.
    let again = client
        .call(
            Method::POST,
            &format!("{base}/api/experiments/{id}/abort"),
            Credential::Token,
            None,
            Bytes::new(),
        )
        .await;
    assert!(again.is_err_and(|error| error.to_string().contains("409")));

    // The game-day mode switch changes the mode and keeps each breaker's configured detectors.
    let checkout = dashboard
        .stack()
        .expect("embedded stack")
        .url(boutique::ServiceName::Checkout);
    let configured = breaker::BreakerConfig::from_toml_str("[trip]\nconsecutive_failures = 3\n")
        .expect("config");
    client
        .set_breakers(&checkout, &configured, None)
        .await
        .expect("configure checkout's breakers");
    json(
        &client,
        Method::POST,
        &format!("{base}/api/breakers"),
        r#"{"service":"checkout","mode":"shadow"}"#,
    )
    .await;
    let config = json(
        &client,
        Method::GET,
        &format!("{checkout}/_admin/breakers"),
        "",
    )
    .await;
    assert_eq!(config["config"]["mode"], "shadow", "{config}");
    assert_eq!(
        config["config"]["trip"]["consecutive_failures"], 3,
        "{config}"
    );

    dashboard.shutdown().await;
}

/// An experiment the store says is `running` with no runner behind it (its task ended by a panic the run
/// could not catch, or its process died) is aborted at once: before, the abort answered 409 until a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_running_without_its_runner_can_be_aborted() {
    let dir = TempStore::new("web-embedded-stranded");
    let database = dir.location();
    let dashboard = RunningDashboard::start(DashboardConfig {
        bind: "127.0.0.1:0".parse().expect("addr"),
        database: database.clone(),
        token: Some(TOKEN.into()),
        ..DashboardConfig::default()
    })
    .await
    .expect("dashboard starts");
    let base = format!("http://{}", dashboard.addr());
    let client = AdminClient::new(TOKEN);
    let created = json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments"),
        SPEC,
    )
    .await;
    let id = created["id"].as_i64().expect("id");
    // What a runner task that died mid-experiment leaves behind.
    let store = controller::store::Store::open(&database)
        .await
        .expect("store");
    store
        .set_experiment_status(
            controller::store::ExperimentId(id),
            controller::store::Status::Running,
            1,
            None,
        )
        .await
        .expect("status");

    json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments/{id}/abort"),
        "",
    )
    .await;
    let row = store
        .experiment(controller::store::ExperimentId(id))
        .await
        .expect("read")
        .expect("experiment");
    assert_eq!(row.status, controller::store::Status::Aborted);
    assert_eq!(
        row.abort_reason.as_deref(),
        Some("aborted from the dashboard")
    );
    store.close().await;
}

/// The mode of `breaker` of the service at `url` now.
async fn mode_of(client: &AdminClient, url: &str, breaker: &str) -> String {
    let snapshots = client.breakers(url).await.expect("breakers");
    let found = snapshots.iter().find(|snapshot| snapshot.name == breaker);
    found.expect("the breaker").mode.as_str().to_owned()
}

/// A dashboard on a runtime of its own over `testbed`: its address, and the sender that kills it (its runtime
/// dropped with every task, as a killed process stops: nothing restored, nothing renewed).
fn dashboard_to_kill(
    testbed: &controller::testbed::Testbed,
    dir: &TempStore,
) -> (std::net::SocketAddr, std::sync::mpsc::Sender<()>) {
    let config = DashboardConfig {
        bind: "127.0.0.1:0".parse().expect("addr"),
        database: dir.location(),
        token: Some(testbed.token.clone()),
        external: Some(web::ExternalTestbed {
            frontend: testbed.frontend,
            services: testbed.services.clone(),
            agent: testbed.agent.clone(),
        }),
        mode_lease: Duration::from_secs(1),
        ..DashboardConfig::default()
    };
    let (started, addr) = std::sync::mpsc::channel();
    let (kill, killed) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Runtime::new().expect("runtime");
        let dashboard = runtime
            .block_on(RunningDashboard::start(config))
            .expect("dashboard starts");
        started.send(dashboard.addr()).expect("test waits");
        let _ = killed.recv();
        std::mem::forget(dashboard);
        runtime.shutdown_background();
    });
    (addr.recv().expect("dashboard address"), kill)
}

/// A game-day mode switch (here of one breaker) is leased: renewed while the dashboard runs (past several
/// leases), not after a halt or an experiment's start, and when the dashboard dies the service goes back to its
/// startup config by itself once the lease (1 s here) runs out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn a_game_day_mode_switch_is_renewed_while_the_dashboard_lives_and_runs_out_after() {
    let spec = controller::test_support::spec(SPEC);
    let (stack, testbed) = controller::testbed::start_embedded_stack(&spec)
        .await
        .expect("stack");
    let dir = TempStore::new("web-mode-lease-test");
    let (addr, kill) = dashboard_to_kill(&testbed, &dir);
    let base = format!("http://{addr}");
    let client = AdminClient::new(testbed.token.clone());
    let checkout = stack.url(boutique::ServiceName::Checkout);
    let switch = |body: &'static str| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            client
                .call(
                    Method::POST,
                    &format!("{base}/api/breakers"),
                    Credential::Token,
                    None,
                    Bytes::from(body),
                )
                .await
        }
    };
    let refused =
        switch(r#"{"service":"checkout","breaker":"checkout->nowhere","mode":"disabled"}"#)
            .await
            .expect_err("an unknown breaker");
    assert!(
        refused.to_string().contains("400")
            && refused
                .to_string()
                .contains("breaker: no breaker `checkout->nowhere`"),
        "{refused}"
    );
    switch(r#"{"service":"checkout","breaker":"checkout->payment","mode":"disabled"}"#)
        .await
        .expect("one breaker switched");
    assert_eq!(
        mode_of(&client, &checkout, "checkout->payment").await,
        "disabled"
    );
    assert_eq!(
        mode_of(&client, &checkout, "checkout->shipping").await,
        "enforce"
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        mode_of(&client, &checkout, "checkout->payment").await,
        "disabled",
        "renewed past two leases"
    );

    // After a halt (and after an experiment's start) the dashboard renews nothing: a config leased by someone
    // else afterwards runs out by itself.
    let leased_elsewhere_runs_out = || async {
        let shadow = boutique::admin::ModeSwitch::every(breaker::Mode::Shadow);
        client
            .set_breaker_mode(&checkout, &shadow, Some(Duration::from_secs(1)))
            .await
            .expect("pushed");
        wait_until(
            "the other lease to run out",
            Duration::from_secs(3),
            || async { mode_of(&client, &checkout, "checkout->payment").await == "enforce" },
        )
        .await;
    };
    json(&client, Method::POST, &format!("{base}/api/halt"), "").await;
    assert_eq!(
        mode_of(&client, &checkout, "checkout->payment").await,
        "enforce"
    );
    leased_elsewhere_runs_out().await;
    switch(r#"{"service":"checkout","mode":"forced-open"}"#)
        .await
        .expect("switched");
    let created = json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments"),
        SPEC,
    )
    .await;
    let id = created["id"].as_i64().expect("experiment id");
    json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments/{id}/start"),
        "",
    )
    .await;
    json(
        &client,
        Method::POST,
        &format!("{base}/api/experiments/{id}/abort"),
        "",
    )
    .await;
    leased_elsewhere_runs_out().await;

    // The dashboard dies holding a switch: the service holds it for the rest of the lease, then goes back.
    switch(r#"{"service":"checkout","mode":"shadow"}"#)
        .await
        .expect("switched");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    kill.send(()).expect("the dashboard's thread");
    let died = Instant::now();
    assert_eq!(
        mode_of(&client, &checkout, "checkout->payment").await,
        "shadow"
    );
    wait_until(
        "the switch's lease to run out",
        Duration::from_secs(3),
        || async { mode_of(&client, &checkout, "checkout->payment").await == "enforce" },
    )
    .await;
    assert!(
        died.elapsed() >= Duration::from_millis(300),
        "not at once: {:?}",
        died.elapsed()
    );
    stack.shutdown().await;
}
