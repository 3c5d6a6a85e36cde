//! Router tests without a socket (`router().oneshot()`): open viewing, token-gated mutations, login cookie,
//! CSRF and Origin checks, API shapes and the pages.

use std::sync::Arc;

use axum::body::Body;
use http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, HOST, ORIGIN, SET_COOKIE};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

use crate::app::{AppState, router};
use crate::auth::Auth;
use crate::control::memory::{Call, MemoryControl};
use crate::hub::{Hub, HubConfig};

const TOKEN: &str = "s3cret-token";
const SPEC: &str = "name = \"smoke\"\nrounds = 1\n";

fn app() -> (AppState, MemoryControl) {
    let control = MemoryControl::new();
    let state = AppState {
        hub: Hub::new(HubConfig::default()),
        control: Arc::new(control.clone()),
        auth: Arc::new(Auth::new(TOKEN)),
    };
    (state, control)
}

async fn send(state: &AppState, request: Request<Body>) -> Response<Body> {
    router(state.clone())
        .oneshot(request)
        .await
        .expect("router is infallible")
}

async fn text(response: Response<Body>) -> String {
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

fn get(uri: &str) -> Request<Body> {
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

#[tokio::test]
async fn viewing_needs_no_token() {
    let (state, _) = app();
    for uri in [
        "/",
        "/experiments",
        "/live",
        "/gameday",
        "/login",
        "/api/experiments",
    ] {
        let response = send(&state, get(uri)).await;
        assert_eq!(response.status(), StatusCode::OK, "{uri}");
    }
    let script = send(&state, get("/static/live.js")).await;
    assert_eq!(script.status(), StatusCode::OK);
    assert!(
        script.headers()[CONTENT_TYPE]
            .to_str()
            .expect("ascii")
            .starts_with("text/javascript")
    );
    assert!(text(script).await.contains("new WebSocket"));
    assert_eq!(
        send(&state, get("/static/nope.js")).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn every_mutation_without_the_token_is_refused() {
    let (state, control) = app();
    let api = [
        ("/api/experiments", SPEC),
        ("/api/experiments/1/start", ""),
        ("/api/experiments/1/abort", ""),
        ("/api/halt", ""),
        ("/api/annotations", "{\"text\":\"hi\"}"),
        ("/api/breakers", "{\"mode\":\"enforce\"}"),
    ];
    for (uri, body) in api {
        let response = send(&state, post(uri).body(Body::from(body)).expect("request")).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{uri}");
        assert!(text(response).await.contains("needs the token"), "{uri}");
    }
    let put = Request::put("/api/faults/x")
        .body(Body::from("{\"kind\":\"hang\"}"))
        .expect("request");
    assert_eq!(send(&state, put).await.status(), StatusCode::UNAUTHORIZED);
    let forms = [
        ("/ui/experiments", "spec=x"),
        ("/ui/experiments/1/start", "at="),
        ("/ui/experiments/1/abort", ""),
        ("/ui/halt", ""),
        (
            "/ui/fault",
            "target=payment&kind=error&status=500&rate=100&lease=30s",
        ),
        ("/ui/fault/clear", "target=payment"),
        ("/ui/breakers", "mode=enforce"),
        ("/ui/annotate", "text=hello"),
    ];
    for (uri, body) in forms {
        let response = send(&state, form(uri, body, None)).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED, "{uri}");
    }
    assert!(control.calls().is_empty(), "{:?}", control.calls());
    state.hub.flush();
    assert!(state.hub.state().annotations.is_empty());
}

#[tokio::test]
async fn the_bearer_token_is_accepted_and_a_wrong_one_is_not() {
    let (state, control) = app();
    let wrong = post("/api/experiments")
        .header(AUTHORIZATION, "Bearer nope")
        .body(Body::from(SPEC))
        .expect("request");
    assert_eq!(send(&state, wrong).await.status(), StatusCode::UNAUTHORIZED);

    let right = post("/api/experiments")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(SPEC))
        .expect("request");
    let response = send(&state, right).await;
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(text(response).await, "{\"id\":1}");

    let start = post("/api/experiments/1/start")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from("{\"at\":\"2030-01-01T00:00:00Z\"}"))
        .expect("request");
    assert_eq!(send(&state, start).await.status(), StatusCode::OK);
    assert_eq!(
        control.calls(),
        vec![
            Call::Create(SPEC.into()),
            Call::Start(1, Some(1_893_456_000_000))
        ]
    );
    let list = text(send(&state, get("/api/experiments")).await).await;
    assert!(list.contains("\"status\":\"scheduled\""), "{list}");
}

#[tokio::test]
async fn a_login_cookie_needs_the_csrf_token_and_the_same_origin() {
    let (state, control) = app();
    let (cookie, csrf) = log_in(&state).await;

    let without_csrf = send(&state, form("/ui/halt", "", Some(&cookie))).await;
    assert_eq!(without_csrf.status(), StatusCode::FORBIDDEN);
    let wrong_csrf = send(&state, form("/ui/halt", "csrf=abc", Some(&cookie))).await;
    assert_eq!(wrong_csrf.status(), StatusCode::FORBIDDEN);

    let mut cross_site = form("/ui/halt", &format!("csrf={csrf}"), Some(&cookie));
    cross_site
        .headers_mut()
        .insert(ORIGIN, "http://evil.example".parse().expect("header"));
    assert_eq!(
        send(&state, cross_site).await.status(),
        StatusCode::FORBIDDEN
    );
    assert!(control.calls().is_empty());

    let mut same_site = form("/ui/halt", &format!("csrf={csrf}"), Some(&cookie));
    same_site
        .headers_mut()
        .insert(ORIGIN, "http://127.0.0.1:8080".parse().expect("header"));
    let response = send(&state, same_site).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(control.calls(), vec![Call::Halt]);

    // The API accepts the cookie with the CSRF header (the pages' fetch calls).
    let api = post("/api/halt")
        .header(COOKIE, &cookie)
        .header("x-csrf-token", &csrf)
        .body(Body::empty())
        .expect("request");
    assert_eq!(send(&state, api).await.status(), StatusCode::OK);

    // Pages show the logged-in state and embed the CSRF token in their forms.
    let page = text(
        send(
            &state,
            Request::get("/gameday")
                .header(COOKIE, &cookie)
                .body(Body::empty())
                .expect("request"),
        )
        .await,
    )
    .await;
    assert!(page.contains(&format!("name=\"csrf\" value=\"{csrf}\"")));
    assert!(page.contains("log out"));
}

#[tokio::test]
async fn a_wrong_login_token_is_refused() {
    let (state, _) = app();
    let response = send(&state, form("/login", "token=guess&next=/", None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    assert!(response.headers().get(SET_COOKIE).is_none());
    assert!(text(response).await.contains("That token is wrong"));
}

#[tokio::test]
async fn game_day_forms_reach_the_controller() {
    let (state, control) = app();
    let (cookie, csrf) = log_in(&state).await;
    let fault =
        format!("csrf={csrf}&target=payment&kind=error&status=503&rate=100&lease=45s&delay=500ms");
    assert_eq!(
        send(&state, form("/ui/fault", &fault, Some(&cookie)))
            .await
            .status(),
        StatusCode::SEE_OTHER
    );
    let mode = format!("csrf={csrf}&service=checkout&mode=forced-open");
    assert_eq!(
        send(&state, form("/ui/breakers", &mode, Some(&cookie)))
            .await
            .status(),
        StatusCode::SEE_OTHER
    );
    let note = format!("csrf={csrf}&text=paged+payments&next=/live");
    let response = send(&state, form("/ui/annotate", &note, Some(&cookie))).await;
    assert_eq!(response.headers()["location"], "/live");
    let calls = control.calls();
    let Call::SetFault(request) = &calls[0] else {
        panic!("expected a fault, got {calls:?}")
    };
    assert_eq!(request.target, "payment");
    assert_eq!(
        request.fault,
        serde_json::json!({"kind":"error","status":503,"rate":1.0,"lease":"45s"})
    );
    assert_eq!(
        calls[1],
        Call::BreakerMode(Some("checkout".into()), "forced-open".into())
    );
    state.hub.flush();
    assert_eq!(state.hub.state().annotations[0].text, "paged payments");
}

#[tokio::test]
async fn bad_input_is_an_error_naming_the_field() {
    let (state, control) = app();
    let authorized = |uri: &str, body: &str| {
        post(uri)
            .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::from(body.to_owned()))
            .expect("request")
    };
    let response = send(
        &state,
        authorized("/api/breakers", "{\"mode\":\"sideways\"}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("mode: `sideways`"));

    let response = send(&state, authorized("/api/experiments", "rounds = 1")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("name"));

    let response = send(
        &state,
        authorized("/api/experiments/1/start", "{\"at\":\"tomorrow\"}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("at:"));

    let response = send(&state, authorized("/api/experiments/9/abort", "")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);

    let response = send(&state, authorized("/api/annotations", "{\"text\":\"  \"}")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("text: empty"));
    assert!(
        !control
            .calls()
            .iter()
            .any(|call| matches!(call, Call::BreakerMode(..)))
    );
}

#[tokio::test]
async fn results_page_and_downloads() {
    let (state, _) = app();
    let create = post("/api/experiments")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(SPEC))
        .expect("request");
    assert_eq!(send(&state, create).await.status(), StatusCode::CREATED);
    let page = text(send(&state, get("/experiments/1/results")).await).await;
    assert!(page.contains("id=\"results-table\""));
    assert!(page.contains("error@1.00/enforce"));
    assert!(page.contains("0.500"));
    assert!(page.contains("± 0.100 (n = 2)"));
    let csv = send(&state, get("/api/experiments/1/results.csv")).await;
    assert!(
        csv.headers()["content-disposition"]
            .to_str()
            .expect("ascii")
            .contains("experiment-1.csv")
    );
    assert!(text(csv).await.starts_with("condition,availability"));
    let list = text(send(&state, get("/experiments")).await).await;
    assert!(list.contains("smoke"));
    assert!(list.contains("Start now"));
}
