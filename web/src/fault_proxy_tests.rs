//! The dashboard's fault proxy (`/api/faults/{id}`) over the real embedded operations and a real agent on
//! loopback: ids are checked by the agent's own rule before anything is sent, and what the agent refuses comes
//! back as a 400 naming the field, not as a 502 carrying the agent's internal URL.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::header::{AUTHORIZATION, HOST};
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

use agent::{Agent, RawAgentConfig};
use controller::sources::{PushInbox, RateLimit};
use controller::store::Store;
use controller::testbed::Testbed;

use crate::app::router;
use crate::auth::Auth;
use crate::hub::{Hub, HubConfig};
use crate::operations::embedded::EmbeddedOperations;
use crate::state::AppState;
use controller::test_support::TempStore;

const TOKEN: &str = "proxy-token";

/// An agent serving its fault API on a loopback port, and the dashboard over the embedded operations with that
/// agent as its testbed's.
async fn dashboard_over_agent(
    database: &TempStore,
) -> (AppState, Agent, String, tokio::task::JoinHandle<()>) {
    let agent = Agent::new(
        RawAgentConfig {
            token: Some("testbed-token".into()),
            max_lease: Duration::from_secs(60),
            ..RawAgentConfig::default()
        }
        .build()
        .expect("a valid agent config"),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let agent_url = format!("http://{}", listener.local_addr().expect("addr"));
    let served = tokio::spawn({
        let router = agent::fault_api::router(agent.clone());
        async move {
            let _ = axum::serve(listener, router).await;
        }
    });
    let store = Store::open(&database.location()).await.expect("store");
    let hub = Hub::new(HubConfig::default());
    let testbed = Testbed {
        frontend: "127.0.0.1:9".parse().expect("addr"),
        services: Vec::new(),
        agent: agent_url.clone(),
        token: "testbed-token".into(),
    };
    let operations = EmbeddedOperations::new(store, testbed, hub.clone())
        .await
        .expect("operations");
    let state = AppState {
        hub,
        breaker_inbox: PushInbox::new(RateLimit::new(0.01, 10.0)),
        simulations: Default::default(),
        operations: Arc::new(operations),
        auth: Arc::new(Auth::new(TOKEN)),
        shop_url: None,
    };
    (state, agent, agent_url, served)
}

async fn call(state: &AppState, method: Method, uri: &str, body: &str) -> (StatusCode, String) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(HOST, "127.0.0.1:8080")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(body.to_owned()))
        .expect("request");
    let response = router(state.clone())
        .oneshot(request)
        .await
        .expect("router is infallible");
    let status = response.status();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

const FAULT: &str = r#"{"kind":"error","status":503,"rate":1.0,"lease":"30s"}"#;

#[tokio::test]
async fn an_id_the_agent_would_read_differently_is_refused_and_nothing_is_created() {
    let database = TempStore::new("web-proxy-id");
    let (state, agent, _, served) = dashboard_over_agent(&database).await;
    // `x%3Fy` decodes to `x?y`: sent on as it was, the agent saw a put of `x` (query `y`).
    for uri in [
        "/api/faults/x%3Fy",
        "/api/faults/x%2Fy",
        "/api/faults/x%20y",
        "/api/faults/%2E%2E%2Fhalt",
    ] {
        let (status, body) = call(&state, Method::PUT, uri, FAULT).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert!(body.contains("id:"), "{uri}: the field is named: {body}");
        let (status, body) = call(&state, Method::DELETE, uri, "").await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
    }
    assert!(agent.faults().is_empty(), "{:?}", agent.faults());

    let (status, body) = call(&state, Method::PUT, "/api/faults/x-y.1_z", FAULT).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ids: Vec<String> = agent.faults().into_iter().map(|view| view.id).collect();
    assert_eq!(ids, ["x-y.1_z"], "the id reported is the id created");
    served.abort();
}

#[tokio::test]
async fn what_the_agent_refuses_is_a_400_naming_the_field_without_its_url() {
    let database = TempStore::new("web-proxy-refusal");
    let (state, agent, agent_url, served) = dashboard_over_agent(&database).await;
    let host = agent_url.trim_start_matches("http://");
    // Well-formed, but over this agent's lease cap (60 s): only the agent knows its cap.
    let (status, body) = call(
        &state,
        Method::PUT,
        "/api/faults/long",
        r#"{"kind":"hang","rate":1.0,"lease":"5m"}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("lease:"), "{body}");
    assert!(!body.contains(host), "no internal URL: {body}");
    assert!(agent.faults().is_empty());

    // Clearing a fault the agent does not hold: the id is named, the URL is not.
    let (status, body) = call(&state, Method::DELETE, "/api/faults/absent", "").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("id:") && body.contains("absent"), "{body}");
    assert!(!body.contains(host), "no internal URL: {body}");

    // An agent that is gone is still the testbed's failure (502), not the request's.
    served.abort();
    let _ = served.await;
    let (status, _) = call(&state, Method::PUT, "/api/faults/later", FAULT).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY);
}
