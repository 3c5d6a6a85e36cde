//! The testbed's bearer token goes only to Tolerant's own control endpoints: a `[targets]` service of the user's
//! own and a `[[sources]]` exposition, both served on loopback by a server that records every request, see the
//! preflight and a short run without an `Authorization` header, while the agent's control API still gets the
//! token on every mutation.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use axum::routing::get;
use controller::runner::Runner;
use controller::store::Status;
use controller::target::ServiceId;
use controller::test_support::{self, TempStore};
use controller::testbed::Testbed;
use http::header::AUTHORIZATION;
use parking_lot::Mutex;

const TOKEN: &str = "token-scope-secret";

/// One request a server received: method, path and its `Authorization` header, if any.
type Seen = Arc<Mutex<Vec<(String, String, Option<String>)>>>;

async fn record(State(seen): State<Seen>, request: Request, next: Next) -> Response {
    seen.lock().push((
        request.method().to_string(),
        request.uri().path().to_owned(),
        (request.headers().get(AUTHORIZATION))
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned()),
    ));
    next.run(request).await
}

/// Serves `router` on loopback, recording every request into the returned list.
async fn recorded(router: Router) -> (std::net::SocketAddr, Seen) {
    let seen = Seen::default();
    let router = router.layer(from_fn_with_state(Arc::clone(&seen), record));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (address, seen)
}

fn spec(shop: std::net::SocketAddr, agent: std::net::SocketAddr) -> String {
    format!(
        r#"name = "token-scope"
rounds = 1
duration = "1s"
order = "fixed"
seed = 1

[load]
users = 2
think_time = ["20ms", "40ms"]
target = "shop"
timeout = "2s"

[[load.tasks]]
name = "home"
requests = [{{ path = "/", expect = [200] }}]

[fault]
target = "shop"
rates = [0.5]
lease = "10s"

[targets]
shop = {{ url = "http://{shop}", offers = [] }}
agent = "http://{agent}"

[[sources]]
kind = "prometheus"
url = "http://{shop}/metrics"
preset = "gauge"
metric = "shop_breaker_state"
label = "breaker"
interval = "100ms"
service = "shop"
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_target_and_source_never_see_the_token_and_the_agent_does() {
    let shop = Router::new()
        .route(
            "/metrics",
            get(|| async { "shop_breaker_state{breaker=\"upstream\"} 0\n" }),
        )
        .fallback(|| async { "ok" });
    let (shop, shop_seen) = recorded(shop).await;
    let agent = agent::Agent::new(
        agent::RawAgentConfig {
            token: Some(TOKEN.into()),
            ..agent::RawAgentConfig::default()
        }
        .build()
        .unwrap(),
    );
    let (agent_address, agent_seen) = recorded(agent::fault_api::router(agent)).await;
    let spec = test_support::spec(&spec(shop, agent_address));
    let testbed = Testbed {
        frontend: shop,
        services: vec![(ServiceId::new("shop").unwrap(), format!("http://{shop}"))],
        agent: format!("http://{agent_address}"),
        token: TOKEN.into(),
    };
    let db = TempStore::new("token-scope");
    let store = db.open().await;
    let runner = Runner::new(store.clone(), testbed);

    runner.check_spec_targets(&spec).await.expect("preflight");
    let experiment = runner.run_experiment(&spec, |_| {}).await.expect("run");
    let runs = store.runs(experiment).await.unwrap();
    assert_eq!(runs[0].status, Status::Finished, "{:?}", runs[0]);

    let shop_seen = shop_seen.lock().clone();
    for path in ["/", "/metrics"] {
        assert!(
            shop_seen.iter().any(|(_, seen, _)| seen == path),
            "{path} was asked: {shop_seen:?}"
        );
    }
    let leaked: Vec<_> = shop_seen
        .iter()
        .filter(|(.., auth)| auth.is_some())
        .collect();
    assert!(leaked.is_empty(), "the token reached the shop: {leaked:?}");

    let agent_seen = agent_seen.lock().clone();
    let bearer = format!("Bearer {TOKEN}");
    let mutations: Vec<_> = agent_seen
        .iter()
        .filter(|(method, ..)| method != "GET")
        .collect();
    assert!(
        mutations
            .iter()
            .any(|(method, path, _)| method == "PUT" && path.starts_with("/_agent/faults/")),
        "the fault was put: {agent_seen:?}"
    );
    assert!(
        mutations
            .iter()
            .all(|(.., auth)| auth.as_deref() == Some(bearer.as_str())),
        "every mutation of the agent carries the token: {agent_seen:?}"
    );
    store.close().await;
}
