//! Router tests without a socket (`router().oneshot()`): the apps they run against (memory operations, or the
//! embedded operations over a SQLite file) and the request helpers; one topic per file beside this one.

use std::sync::Arc;

use axum::body::Body;
use http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, HOST, ORIGIN, SET_COOKIE};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

use controller::sources::{PushInbox, RateLimit};
use controller::store::{ExperimentId, Status, Store};
use controller::testbed::Testbed;

use crate::app::router;
use crate::auth::Auth;
use crate::hub::{Hub, HubConfig};
use crate::operations::embedded::EmbeddedOperations;
use crate::operations::memory::{Call, MemoryOperations};
use crate::state::AppState;

mod access;
mod advisor;
mod annotations;
mod automation;
mod containers;
mod forms;
mod game_day;
mod results;
mod simulate;
mod workers;

const TOKEN: &str = "s3cret-token";

const SPEC: &str = "name = \"smoke\"\nrounds = 1\n";

pub(crate) fn app() -> (AppState, MemoryOperations) {
    let operations = MemoryOperations::new();
    let state = AppState {
        hub: Hub::new(HubConfig::default()),
        operations: Arc::new(operations.clone()),
        auth: Arc::new(Auth::new(TOKEN)),
        shop_url: Some("http://127.0.0.1:9999".into()),
        // 10 events at once, then one every 100 s: a test never waits long enough to earn one.
        breaker_inbox: PushInbox::new(RateLimit::new(0.01, 10.0)),
        simulations: Default::default(),
    };
    (state, operations)
}

pub(crate) async fn send(state: &AppState, request: Request<Body>) -> Response<Body> {
    router(state.clone())
        .oneshot(request)
        .await
        .expect("router is infallible")
}

pub(crate) async fn text(response: Response<Body>) -> String {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

pub(crate) fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).expect("request")
}

fn post(uri: &str) -> http::request::Builder {
    Request::post(uri).header(HOST, "127.0.0.1:8080")
}

fn form(uri: &str, body: &str, cookie: Option<&str>) -> Request<Body> {
    let mut builder = post(uri).header(CONTENT_TYPE, "application/x-www-form-urlencoded");
    if let Some(cookie) = cookie {
        builder = builder.header(COOKIE, cookie);
    }
    builder.body(Body::from(body.to_owned())).expect("request")
}

/// Logs in through the form; returns the cookie pair and the session's CSRF token.
async fn log_in(state: &AppState) -> (String, String) {
    let response = send(
        state,
        form("/login", &format!("token={TOKEN}&next=/gameday"), None),
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], "/gameday");
    let set_cookie = response.headers()[SET_COOKIE]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    assert!(set_cookie.contains("SameSite=Strict"), "{set_cookie}");
    let pair = set_cookie.split(';').next().expect("pair").to_owned();
    let session = state
        .auth
        .session(&{
            let mut headers = http::HeaderMap::new();
            headers.insert(COOKIE, pair.parse().expect("header"));
            headers
        })
        .expect("session exists");
    (pair, session.csrf)
}

const RUNNABLE_SPEC: &str = r#"name = "game-day"
rounds = 1
duration = "2s"

[load]
users = 1

[fault]
target = "payment"
rates = [1.0]

[breaker]
modes = ["enforce"]
"#;

/// The dashboard over the real (embedded) operations and the database at `location`; the testbed is one
/// nobody listens on (nothing here runs an experiment).
pub(crate) async fn stored_app(location: &str) -> (AppState, Store) {
    let store = Store::open(location).await.expect("store");
    let hub = Hub::new(HubConfig::default());
    let testbed = Testbed {
        frontend: "127.0.0.1:9".parse().expect("addr"),
        services: Vec::new(),
        agent: "http://127.0.0.1:9".into(),
        token: "token".into(),
    };
    let operations = EmbeddedOperations::new(store.clone(), testbed, hub.clone())
        .await
        .expect("operations");
    let state = AppState {
        hub,
        breaker_inbox: operations.push_inbox(),
        simulations: Default::default(),
        operations: Arc::new(operations),
        auth: Arc::new(Auth::new(TOKEN)),
        shop_url: Some("http://127.0.0.1:9999".into()),
    };
    (state, store)
}

fn bearer(uri: &str, body: &str) -> Request<Body> {
    post(uri)
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(body.to_owned()))
        .expect("request")
}

async fn json(response: Response<Body>) -> serde_json::Value {
    serde_json::from_str(&text(response).await).expect("JSON body")
}

/// The page a redirect leads to, with the notice it left (and the session `cookie`).
async fn page_after(state: &AppState, response: &Response<Body>, cookie: Option<&str>) -> String {
    let to = response
        .headers()
        .get(http::header::LOCATION)
        .and_then(|value| value.to_str().ok())
        .expect("a redirect")
        .to_owned();
    let notice = notice_cookie(response);
    let cookies = cookie.map_or(notice.clone(), |cookie| format!("{cookie}; {notice}"));
    let request = Request::get(to)
        .header(http::header::COOKIE, cookies)
        .body(Body::empty())
        .expect("request");
    text(send(state, request).await).await
}

/// The cookie a redirect leaves its notice in, as the next request sends it back.
fn notice_cookie(response: &Response<Body>) -> String {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find(|value| value.starts_with("tolerant_notice="))
        .and_then(|value| value.split(';').next())
        .expect("a notice cookie")
        .to_owned()
}
