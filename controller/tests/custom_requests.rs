//! A custom workload's request headers and JSON body reach the server: a spec with `headers` and `json` is parsed,
//! driven by the load driver against an axum server on a loopback ephemeral port that records what it was sent.

use controller::test_support;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use controller::load::{LoadSettings, Workload, run};
use parking_lot::Mutex;

/// (content type, authorization, x-tenant, body) of every request.
type Seen = Arc<Mutex<Vec<(String, String, String, String)>>>;

async fn serve(seen: Seen) -> SocketAddr {
    let app = Router::new().route(
        "/api/orders",
        post(move |headers: HeaderMap, body: String| {
            let seen = Arc::clone(&seen);
            async move {
                let get = |name: &str| {
                    headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_owned()
                };
                seen.lock().push((
                    get(header::CONTENT_TYPE.as_str()),
                    get(header::AUTHORIZATION.as_str()),
                    get("x-tenant"),
                    body,
                ));
                StatusCode::CREATED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

const SPEC: &str = r#"
name = "headers and json"
duration = "10s"

[load]
users = 2
values = { sku = ["A1", "B2"], tenant = { from = 1, to = 3 } }

[[load.tasks]]
name = "order"
requests = [
  { method = "POST", path = "/api/orders", expect = [201], headers = { Authorization = "Bearer token-{tenant}", "X-Tenant" = "t{tenant}" }, json = { sku = "{sku}", qty = 2, gift = false, tags = ["new", "{sku}"] } },
]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_carries_its_headers_and_json_body() {
    let spec = test_support::spec(SPEC);
    let workload = Workload::Custom(spec.load.custom.clone().expect("a custom workload"));
    let seen = Seen::default();
    let addr = serve(Arc::clone(&seen)).await;
    let report = run(
        LoadSettings {
            target: addr,
            workload,
            users: 2,
            think_time: (Duration::from_millis(1), Duration::from_millis(2)),
            rate: None,
            timeout: Duration::from_secs(2),
            warmup: Duration::ZERO,
            duration: Duration::from_millis(300),
            seed: 3,
        }
        .try_into()
        .expect("valid load config"),
        None,
    )
    .await;
    assert!(report.outcomes().total() > 0);
    assert_eq!(report.outcomes().ok, report.outcomes().total());

    let seen = seen.lock();
    assert!(!seen.is_empty());
    for (content_type, authorization, tenant, body) in seen.iter() {
        assert_eq!(content_type, "application/json");
        let number = tenant.strip_prefix('t').expect("X-Tenant is t<n>");
        assert!(["1", "2", "3"].contains(&number), "{tenant}");
        // One draw per task run: both headers carry the same value.
        assert_eq!(authorization, &format!("Bearer token-{number}"));
        let json: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
        let sku = json["sku"].as_str().expect("sku is a string");
        assert!(["A1", "B2"].contains(&sku), "{body}");
        assert_eq!(json["qty"], 2);
        assert_eq!(json["gift"], false);
        assert_eq!(json["tags"], serde_json::json!(["new", sku]));
    }
}
