//! The control API through `fault_api::router(agent).oneshot(..)`: auth, bad input, leases, renew, delete, halt, events.

use std::time::Duration;

use agent::api::{AgentEvent, FaultView, HaltResponse, RemovalReason};
use agent::{Agent, AgentConfig, RawAgentConfig};
use axum::body::Body;
use http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use serving::ErrorBody;
use tokio::sync::broadcast;
use tower::ServiceExt;

const TOKEN: &str = "s3cret-token";

fn agent() -> Agent {
    Agent::new(
        RawAgentConfig {
            token: Some(TOKEN.into()),
            default_lease: Duration::from_secs(30),
            max_lease: Duration::from_secs(120),
            ..RawAgentConfig::default()
        }
        .build()
        .expect("a valid agent config"),
    )
}

fn mutation(
    method: Method,
    path: &str,
    token: Option<&str>,
    body: impl Into<Body>,
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    builder.body(body.into()).unwrap()
}

async fn call(agent: &Agent, request: Request<Body>) -> (StatusCode, Value) {
    let response = agent::fault_api::router(agent.clone())
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
    };
    (status, value)
}

async fn put(agent: &Agent, id: &str, body: Value) -> (StatusCode, Value) {
    call(
        agent,
        mutation(
            Method::PUT,
            &format!("/_agent/faults/{id}"),
            Some(TOKEN),
            body.to_string(),
        ),
    )
    .await
}

async fn list(agent: &Agent) -> Vec<FaultView> {
    let (status, value) = call(
        agent,
        Request::get("/_agent/faults").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    serde_json::from_value(value).unwrap()
}

fn drain(events: &mut broadcast::Receiver<AgentEvent>) -> Vec<AgentEvent> {
    std::iter::from_fn(|| events.try_recv().ok()).collect()
}

fn design_example() -> Value {
    json!({"kind":"error","status":500,"rate":0.5,"match":{"method":"POST","path_prefix":"/charge"},"lease":"30s"})
}

#[tokio::test]
async fn put_list_replace_and_delete() {
    let agent = agent();
    let (status, view) = put(&agent, "payment-500", design_example()).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(view["id"], "payment-500");
    assert_eq!(view["fault"]["status"], 500);
    assert_eq!(view["lease_ms"], 30_000);

    let listed = list(&agent).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].fault.rate(), 0.5);

    let (status, _) = put(&agent, "payment-500", json!({"kind":"reset","rate":0.1})).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a put over an existing id replaces it"
    );
    assert_eq!(list(&agent).await[0].fault.kind().name(), "reset");

    let (status, _) = call(
        &agent,
        mutation(
            Method::DELETE,
            "/_agent/faults/payment-500",
            Some(TOKEN),
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(list(&agent).await.is_empty());
    let (status, body) = call(
        &agent,
        mutation(
            Method::DELETE,
            "/_agent/faults/payment-500",
            Some(TOKEN),
            "",
        ),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["field"], "id");
}

#[tokio::test]
async fn every_mutation_without_the_right_token_is_refused_and_changes_nothing() {
    let agent = agent();
    put(&agent, "keep", json!({"kind":"hang"})).await;
    let before = list(&agent).await;
    for token in [
        None,
        Some("wrong"),
        Some("s3cret-toke"),
        Some("s3cret-token-and-more"),
        Some(""),
    ] {
        let attempts = [
            mutation(
                Method::PUT,
                "/_agent/faults/new",
                token,
                design_example().to_string(),
            ),
            mutation(
                Method::PUT,
                "/_agent/faults/keep",
                token,
                json!({"kind":"reset"}).to_string(),
            ),
            mutation(
                Method::POST,
                "/_agent/faults/keep/renew",
                token,
                r#"{"lease":"100s"}"#,
            ),
            mutation(Method::DELETE, "/_agent/faults/keep", token, ""),
            mutation(Method::POST, "/_agent/halt", token, ""),
        ];
        for attempt in attempts {
            let (status, body) = call(&agent, attempt).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "token {token:?}");
            assert!(body["error"].as_str().unwrap().contains("token"));
        }
    }
    // Another scheme than Bearer is refused as well.
    let basic = Request::builder()
        .method(Method::POST)
        .uri("/_agent/halt")
        .header(header::AUTHORIZATION, format!("Basic {TOKEN}"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(call(&agent, basic).await.0, StatusCode::UNAUTHORIZED);
    let after = list(&agent).await;
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].fault, before[0].fault);
    assert_eq!(after[0].lease_ms, before[0].lease_ms);
}

#[tokio::test]
async fn an_agent_without_a_token_refuses_every_mutation() {
    let agent = Agent::new(AgentConfig::default());
    let (status, body) = call(
        &agent,
        mutation(
            Method::PUT,
            "/_agent/faults/x",
            Some(""),
            design_example().to_string(),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(body["error"].as_str().unwrap().contains("no token"));
    assert!(agent.faults().is_empty());
}

#[tokio::test]
async fn bad_input_names_the_field_and_changes_nothing() {
    let agent = agent();
    put(&agent, "keep", json!({"kind":"delay","delay":"10ms"})).await;
    let cases: [(&str, String, &str); 12] = [
        ("x", "{\"kind\":".into(), "body"),
        (
            "x",
            json!({"kind":"error","status":500,"rate":1.01}).to_string(),
            "rate",
        ),
        (
            "x",
            json!({"kind":"error","status":500,"rate":-1}).to_string(),
            "rate",
        ),
        (
            "x",
            json!({"kind":"error","status":600}).to_string(),
            "status",
        ),
        (
            "x",
            json!({"kind":"error","status":42}).to_string(),
            "status",
        ),
        ("x", json!({"kind":"teleport"}).to_string(), "kind"),
        (
            "x",
            json!({"kind":"hang","flavour":"sour"}).to_string(),
            "flavour",
        ),
        (
            "x",
            json!({"kind":"hang","lease":"121s"}).to_string(),
            "lease",
        ),
        (
            "x",
            json!({"kind":"hang","lease":"whenever"}).to_string(),
            "lease",
        ),
        (
            "x",
            json!({"kind":"delay","delay":"1s","jitter":"-"}).to_string(),
            "jitter",
        ),
        (
            "x",
            json!({"kind":"hang","match":{"path":"/x"}}).to_string(),
            "match.path",
        ),
        ("a%2Fb", json!({"kind":"hang"}).to_string(), "id"),
    ];
    for (id, body, field) in cases {
        let (status, answer) = call(
            &agent,
            mutation(
                Method::PUT,
                &format!("/_agent/faults/{id}"),
                Some(TOKEN),
                body.clone(),
            ),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        // The stack's one error body, nothing more.
        let parsed: ErrorBody = serde_json::from_value(answer.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), answer, "{body}");
        let answer = parsed;
        assert_eq!(
            answer.field.as_deref(),
            Some(field),
            "{body}: {}",
            answer.error
        );
        assert!(
            answer.error.contains(field),
            "the message should name {field}: {}",
            answer.error
        );
    }
    // The same for a bad update of an existing fault.
    let (status, _) = put(&agent, "keep", json!({"kind":"error","status":1000})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, answer) = call(
        &agent,
        mutation(
            Method::POST,
            "/_agent/faults/keep/renew",
            Some(TOKEN),
            r#"{"lease":"1h"}"#,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["field"], "lease");
    let faults = list(&agent).await;
    assert_eq!(faults.len(), 1);
    assert_eq!(faults[0].id, "keep");
    assert_eq!(faults[0].fault.kind().name(), "delay");
}

#[tokio::test(start_paused = true)]
async fn leases_expire_by_themselves_and_emit_an_event() {
    let agent = agent();
    let mut events = agent.subscribe();
    put(
        &agent,
        "short",
        json!({"kind":"error","status":500,"lease":"5s"}),
    )
    .await;
    put(&agent, "default", json!({"kind":"error","status":500})).await;
    tokio::time::sleep(Duration::from_millis(4_900)).await;
    assert_eq!(list(&agent).await.len(), 2);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let left = list(&agent).await;
    assert_eq!(
        left.iter().map(|view| view.id.as_str()).collect::<Vec<_>>(),
        ["default"]
    );
    tokio::time::sleep(Duration::from_secs(25)).await;
    assert!(list(&agent).await.is_empty());
    let kinds: Vec<(String, &'static str)> = drain(&mut events)
        .into_iter()
        .map(|event| {
            let name = match event {
                AgentEvent::Applied { .. } => "applied",
                AgentEvent::Expired { .. } => "expired",
                AgentEvent::Removed { .. } => "removed",
                AgentEvent::Lagged { .. } => "lagged",
            };
            (event_id(&event), name)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("short".to_owned(), "applied"),
            ("default".to_owned(), "applied"),
            ("short".to_owned(), "expired"),
            ("default".to_owned(), "expired"),
        ]
    );
    assert!(
        agent
            .render_metrics()
            .contains("tolerant_agent_leases_expired_total 2\n")
    );
}

fn event_id(event: &AgentEvent) -> String {
    event.fault_id().unwrap_or_default().to_owned()
}

#[tokio::test(start_paused = true)]
async fn the_reaper_removes_expired_faults_without_any_request() {
    let agent = agent();
    let mut events = agent.subscribe();
    put(&agent, "f", json!({"kind":"hang","lease":"2s"})).await;
    assert!(matches!(
        events.recv().await.unwrap(),
        AgentEvent::Applied { .. }
    ));
    // Nobody lists or sends requests: the expiry arrives from the reaper task alone.
    let expired = tokio::time::timeout(Duration::from_secs(3), events.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(expired, AgentEvent::Expired { ref id, .. } if id == "f"));
    assert!(
        agent
            .render_metrics()
            .contains("tolerant_agent_active_faults 0\n")
    );
}

#[tokio::test(start_paused = true)]
async fn renew_extends_the_lease() {
    let agent = agent();
    put(&agent, "f", json!({"kind":"reset","lease":"10s"})).await;
    tokio::time::sleep(Duration::from_secs(8)).await;
    let (status, view) = call(
        &agent,
        mutation(Method::POST, "/_agent/faults/f/renew", Some(TOKEN), ""),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(view["expires_in_ms"], 10_000);
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(
        list(&agent).await.len(),
        1,
        "renewed at 8 s, so alive at 16 s"
    );
    let (status, view) = call(
        &agent,
        mutation(
            Method::POST,
            "/_agent/faults/f/renew",
            Some(TOKEN),
            r#"{"lease":"60s"}"#,
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(view["lease_ms"], 60_000);
    tokio::time::sleep(Duration::from_secs(59)).await;
    assert_eq!(list(&agent).await.len(), 1);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(list(&agent).await.is_empty());
    let (status, _) = call(
        &agent,
        mutation(Method::POST, "/_agent/faults/f/renew", Some(TOKEN), ""),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "an expired fault cannot be renewed"
    );
}

#[tokio::test]
async fn halt_clears_everything_and_emits_removed_events() {
    let agent = agent();
    for id in ["a", "b", "c"] {
        put(&agent, id, json!({"kind":"error","status":500})).await;
    }
    let mut events = agent.subscribe();
    let (status, body) = call(
        &agent,
        mutation(Method::POST, "/_agent/halt", Some(TOKEN), ""),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_value::<HaltResponse>(body)
            .unwrap()
            .removed,
        3
    );
    assert!(list(&agent).await.is_empty());
    let removed: Vec<String> = drain(&mut events)
        .into_iter()
        .map(|event| match event {
            AgentEvent::Removed {
                id,
                reason: RemovalReason::Halt,
                ..
            } => id,
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    assert_eq!(removed, ["a", "b", "c"]);
    assert_eq!(agent.halt(), 0);
}

#[tokio::test]
async fn metrics_are_prometheus_text() {
    let agent = agent();
    put(&agent, "a", json!({"kind":"error","status":500})).await;
    let response = agent::fault_api::router(agent.clone())
        .oneshot(Request::get("/_agent/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = String::from_utf8(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    assert!(text.contains("tolerant_agent_active_faults 1\n"));
    assert!(text.contains("# TYPE tolerant_agent_requests_total counter\n"));
}

#[tokio::test]
async fn probes_come_in_10_ms_buckets_of_the_asked_window() {
    let agent = agent();
    for at_ms in [1_000_003, 1_000_007, 1_000_011, 1_002_000] {
        agent.record_probe_at(at_ms);
    }
    assert_eq!(agent.probes_seen(), 4);
    let get = |uri: &str| {
        agent::fault_api::router(agent.clone())
            .oneshot(Request::get(uri).body(Body::empty()).unwrap())
    };
    let response = get("/_agent/probes?since_ms=1000000&until_ms=1002000")
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        answer,
        json!({"bucket_ms": 10, "buckets": [[1_000_000, 2], [1_000_010, 1]]})
    );
    let refused = get("/_agent/probes?since_ms=soon").await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let body = refused.into_body().collect().await.unwrap().to_bytes();
    let error: ErrorBody = serde_json::from_slice(&body).unwrap();
    assert_eq!(error.field.as_deref(), Some("since_ms"));
}

/// `.` and `..` are refused as fault ids (a URL path resolves them, so such a fault could not be renewed or
/// deleted afterwards); ids merely holding dots are fine.
#[tokio::test]
async fn dot_segments_are_not_fault_ids() {
    let agent = agent();
    let fault = json!({"kind": "error", "status": 503, "rate": 1.0});
    for id in [".", ".."] {
        let (status, body) = put(&agent, id, fault.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{id}: {body}");
        assert_eq!(body["field"], "id", "{id}: {body}");
    }
    assert!(list(&agent).await.is_empty());
    for id in ["...", ".a", "a..b"] {
        let (status, body) = put(&agent, id, fault.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{id}: {body}");
    }
}

/// `GET /_agent/limits` says the caps a put is checked against (open, like every read).
#[tokio::test]
async fn limits_are_the_caps_a_put_is_checked_against() {
    let agent = agent();
    let request = Request::get("/_agent/limits").body(Body::empty()).unwrap();
    let (status, body) = call(&agent, request).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let limits: agent::api::AgentLimits = serde_json::from_value(body).unwrap();
    assert_eq!(limits.max_lease, "2m");
    assert_eq!(limits.default_lease, "30s");
    assert_eq!(limits.max_hold, "1m");
    assert_eq!(limits.max_faults, agent::MAX_FAULTS);
    let max = agent::api::parse_duration(&limits.max_lease).unwrap();
    let (at_cap, body) = put(
        &agent,
        "a",
        json!({"kind": "error", "status": 500, "lease": limits.max_lease}),
    )
    .await;
    assert_eq!(at_cap, StatusCode::CREATED, "{body}");
    let over = agent::api::format_duration(max + Duration::from_secs(1));
    let (beyond, body) = put(
        &agent,
        "b",
        json!({"kind": "error", "status": 500, "lease": over}),
    )
    .await;
    assert_eq!(beyond, StatusCode::BAD_REQUEST, "{body}");
}
