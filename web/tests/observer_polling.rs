//! The testbed is polled once a second during a run with the dashboard open: a service on loopback counts the
//! requests it receives while the embedded operations run an experiment against it with the live feeds on. The
//! run (which samples the service's pool and `/metrics`) and the live page (its pool, its breakers) watch through
//! one observer: each second the service answers one `/_pool`, where two pollers would have sent two.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use controller::clock::now_ms;
use controller::store::{ExperimentId, Status};
use controller::test_support::TempStore;
use controller::testbed::Testbed;
use parking_lot::Mutex;
use web::hub::{Hub, HubConfig};
use web::operations::Operations;
use web::operations::embedded::EmbeddedOperations;

/// Every request the service received: its path and wall-clock milliseconds.
type Received = Arc<Mutex<Vec<(String, i64)>>>;

async fn count(State(received): State<Received>, request: Request, next: Next) -> Response {
    received
        .lock()
        .push((request.uri().path().to_owned(), now_ms()));
    next.run(request).await
}

/// A stream that stays open and says nothing (no transition, no fault change).
async fn quiet_stream(upgrade: WebSocketUpgrade) -> impl IntoResponse {
    upgrade.on_upgrade(|mut socket| async move { while socket.recv().await.is_some() {} })
}

/// The shop (load target, a worker pool, `/metrics`, breakers, streams) and its agent, on one loopback port.
async fn serve(received: Received) -> SocketAddr {
    let app = Router::new()
        .route("/", get(|| async { "shop" }))
        .route(
            "/_pool",
            get(|| async {
                axum::Json(serde_json::json!({
                    "in_flight": 2, "queued": 0, "capacity": 8, "queue_capacity": 16, "rejected": 0
                }))
            }),
        )
        .route(
            "/metrics",
            get(|| async { "tolerant_agent_probes_total 0\n" }),
        )
        .route(
            "/_breakers",
            get(|| async { axum::Json(serde_json::json!([])) }),
        )
        .route("/_breakers/stream", get(quiet_stream))
        .route("/_agent/stream", get(quiet_stream))
        .route(
            "/_agent/halt",
            post(|| async { axum::Json(serde_json::json!({ "removed": 0 })) }),
        )
        .layer(middleware::from_fn_with_state(received, count));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn spec(addr: SocketAddr) -> String {
    format!(
        r#"name = "polled once"
rounds = 1
duration = "5s"
warmup = "0s"

[load]
users = 1
think_time = ["50ms", "100ms"]
target = "shop"

[[load.tasks]]
name = "home"
requests = [{{ path = "/", expect = [200] }}]

[fault]
target = "shop"
rates = [0.0]

[breaker]
modes = ["enforce"]

[targets]
shop = {{ url = "http://{addr}", offers = ["pool", "breaker-stream"] }}
agent = "http://{addr}"
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_testbed_is_polled_once_a_second_during_a_run_with_the_dashboard_open() {
    let received = Received::default();
    let addr = serve(Arc::clone(&received)).await;
    let dir = TempStore::new("web-observer-polling");
    let store = dir.open().await;
    let testbed = Testbed {
        frontend: addr,
        services: vec![("shop".parse().expect("label"), format!("http://{addr}"))],
        agent: format!("http://{addr}"),
        token: "token".into(),
    };
    let hub = Hub::new(HubConfig::default());
    let operations = EmbeddedOperations::new(store.clone(), testbed, hub.clone())
        .await
        .expect("operations");
    // The dashboard is open: its live feeds follow the testbed.
    let feeds = operations.spawn_live_feeds();
    let id = operations.create(spec(addr)).await.expect("a valid spec");
    operations.start(id, None).await.expect("started");
    let mut finished = None;
    for _ in 0..600 {
        let row = store.experiment(ExperimentId(id)).await.unwrap().unwrap();
        if matches!(row.status, Status::Finished | Status::Aborted) {
            finished = Some(row);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let row = finished.expect("the experiment ends within a minute");
    assert_eq!(row.status, Status::Finished, "{:?}", row.abort_reason);
    let run = store.runs(ExperimentId(id)).await.unwrap().remove(0);
    let (from, to) = (run.started_at_ms.unwrap(), run.finished_at_ms.unwrap());

    // Per whole second of the run (its first and last, cut by the run's edges, left out): one pool read.
    let mut per_second: BTreeMap<i64, u64> = BTreeMap::new();
    for (path, at_ms) in received.lock().iter() {
        if path == "/_pool" && (from..to).contains(at_ms) {
            *per_second.entry((at_ms - from) / 1_000).or_default() += 1;
        }
    }
    let last = (to - from) / 1_000;
    let inner: Vec<(i64, u64)> = per_second
        .into_iter()
        .filter(|(second, _)| *second > 0 && *second < last)
        .collect();
    assert!(inner.len() >= 3, "pool reads by second: {inner:?}");
    assert!(
        inner.iter().all(|(_, reads)| *reads == 1),
        "pool reads by second of the run: {inner:?}"
    );

    // Both watched: the run stored the service's pool each second, the live page showed it.
    let samples = store.samples(run.id).await.unwrap();
    assert!(
        samples
            .iter()
            .filter(|sample| sample.collector.pool_in_flight == Some(2))
            .count()
            >= 3,
        "{samples:?}"
    );
    hub.flush();
    let live = hub.state();
    assert!(
        live.samples
            .iter()
            .any(|sample| sample.pools.iter().any(|pool| pool.service == "shop")),
        "the live page shows the shop's pool"
    );
    for feed in feeds {
        feed.abort();
    }
    store.close().await;
}
