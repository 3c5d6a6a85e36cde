//! Router tests without a socket (`router().oneshot()`): open viewing, token-gated mutations, login cookie,
//! CSRF and Origin checks, API shapes and the pages; annotations also over the embedded operations and a SQLite
//! file, across a restart.

use std::sync::Arc;

use axum::body::Body;
use http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, HOST, ORIGIN, SET_COOKIE};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use tower::ServiceExt;

use controller::runner::Testbed;
use controller::sources::{PushInbox, RateLimit};
use controller::store::{ExperimentId, Status, Store};

use crate::app::{AppState, router};
use crate::auth::Auth;
use crate::hub::{Hub, HubConfig};
use crate::operations::embedded::EmbeddedOperations;
use crate::operations::memory::{Call, MemoryOperations};

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
    let (state, operations) = app();
    let api = [
        ("/api/experiments", SPEC),
        ("/api/experiments/1/start", ""),
        ("/api/experiments/1/abort", ""),
        ("/api/halt", ""),
        ("/api/annotations", "{\"text\":\"hi\"}"),
        ("/api/breakers", "{\"mode\":\"enforce\"}"),
        ("/api/breaker-events", "{\"breaker\":\"b\",\"to\":\"open\"}"),
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
    assert!(operations.calls().is_empty(), "{:?}", operations.calls());
    state.hub.flush();
    assert!(state.hub.state().annotations.is_empty());
}

#[tokio::test]
async fn the_bearer_token_is_accepted_and_a_wrong_one_is_not() {
    let (state, operations) = app();
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
        operations.calls(),
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
    let (state, operations) = app();
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
    assert!(operations.calls().is_empty());

    let mut same_site = form("/ui/halt", &format!("csrf={csrf}"), Some(&cookie));
    same_site
        .headers_mut()
        .insert(ORIGIN, "http://127.0.0.1:8080".parse().expect("header"));
    let response = send(&state, same_site).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(operations.calls(), vec![Call::Halt]);

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
    let (state, operations) = app();
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
    let calls = operations.calls();
    let Call::SetFault(request) = &calls[0] else {
        panic!("expected a fault, got {calls:?}")
    };
    assert_eq!(request.target, "payment");
    assert_eq!(
        request.fault,
        agent::api::FaultSpec {
            lease: Some(std::time::Duration::from_secs(45)),
            ..agent::api::FaultSpec::error(503, 1.0)
        }
    );
    assert_eq!(
        calls[1],
        Call::BreakerMode(Some("checkout".into()), breaker::Mode::ForcedOpen)
    );
    let Call::Annotate(request) = &calls[2] else {
        panic!("expected an annotation, got {calls:?}")
    };
    assert_eq!(
        (request.text.as_str(), request.experiment_id),
        ("paged payments", None)
    );
    state.hub.flush();
    assert_eq!(state.hub.state().annotations[0].text, "paged payments");
}

#[tokio::test]
async fn bad_input_is_an_error_naming_the_field() {
    let (state, operations) = app();
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
        !operations
            .calls()
            .iter()
            .any(|call| matches!(call, Call::BreakerMode(..)))
    );
}

/// With one round there is no interval and no verdict, and the page says why instead of promising intervals.
#[tokio::test]
async fn one_round_results_say_intervals_need_two_rounds() {
    let (state, operations) = app();
    operations.set_rounds(1);
    let create = post("/api/experiments")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(SPEC))
        .expect("request");
    assert_eq!(send(&state, create).await.status(), StatusCode::CREATED);
    let page = text(send(&state, get("/experiments/1/results")).await).await;
    assert!(page.contains("id=\"results-table\""));
    assert!(!page.contains("with its 95 % confidence interval (Student t)"));
    assert!(page.contains("id=\"one-round\""));
    assert!(page.contains("Intervals need at least two rounds"));
    assert!(page.contains("id=\"no-verdict\""));
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
    assert!(page.contains("95 % confidence interval"));
    // The stored prediction sits beside the measurements.
    assert!(page.contains("id=\"predictions\""), "{page}");
    assert!(page.contains("58.00 [56.00, 60.00]"), "{page}");
    assert!(page.contains("≤ 62 (estimate ≈ 57.98)"), "{page}");
    assert!(page.contains("not measured yet"), "{page}");
    assert!(!page.contains("id=\"one-round\""));
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

/// The results page lists the runs to replay and the timeline comes from its own endpoint; a run the
/// experiment does not have is a 404 naming the run.
#[tokio::test]
async fn results_page_replays_a_stored_run() {
    let (state, _) = app();
    let create = post("/api/experiments")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(SPEC))
        .expect("request");
    assert_eq!(send(&state, create).await.status(), StatusCode::CREATED);
    let page = text(send(&state, get("/experiments/1/results")).await).await;
    assert!(page.contains("id=\"replay-run\""), "{page}");
    assert!(
        page.contains("1 · error@1.00/enforce · round 1 · finished"),
        "{page}"
    );
    assert!(page.contains("/static/replay.js"), "{page}");
    let timeline = json(send(&state, get("/api/experiments/1/runs/1/timeline")).await).await;
    assert_eq!(timeline["run"]["id"], 1);
    assert_eq!(timeline["measured_from_ms"], 1_002_000);
    assert!(timeline["samples"].is_array() && timeline["transitions"].is_array());
    let missing = send(&state, get("/api/experiments/1/runs/9/timeline")).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(text(missing).await.contains("no run 9"));
    let asset = send(&state, get("/static/replay.js")).await;
    assert_eq!(asset.status(), StatusCode::OK);
}

/// A SQLite file in the temp dir, removed with its WAL files when dropped.
pub(crate) struct TempDatabase(std::path::PathBuf);

impl TempDatabase {
    pub(crate) fn new(name: &str) -> Self {
        TempDatabase(
            std::env::temp_dir().join(format!("tolerant-web-{name}-{}.db", std::process::id())),
        )
    }

    pub(crate) fn location(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempDatabase {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
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

#[tokio::test]
async fn annotations_are_stored_tied_to_the_run_and_seen_by_a_new_app_over_the_same_database() {
    let database = TempDatabase::new("annotations");
    let (state, store) = stored_app(&database.location()).await;
    let created = send(&state, bearer("/api/experiments", RUNNABLE_SPEC)).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let experiment = json(created).await["id"].as_i64().expect("id");
    // What the runner records while it runs (nothing here can run it for real).
    let spec = controller::spec::ExperimentSpec::parse(RUNNABLE_SPEC).expect("spec");
    store
        .set_experiment_status(ExperimentId(experiment), Status::Running, 1_000, None)
        .await
        .expect("running");
    let run = store
        .start_run(
            ExperimentId(experiment),
            &spec.plan()[0],
            std::time::Duration::ZERO,
            std::time::Duration::from_secs(2),
            1_000,
        )
        .await
        .expect("run");

    // The game day form, with the login cookie and its CSRF token.
    let (cookie, csrf) = log_in(&state).await;
    let note = format!("csrf={csrf}&text=18%3A02+cut+payment+DB&author=alice&next=/gameday");
    let response = send(&state, form("/ui/annotate", &note, Some(&cookie))).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    // The API, with the token.
    let response = send(
        &state,
        bearer("/api/annotations", "{\"text\":\" 18:05 rollback \"}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let stored = json(response).await;
    assert_eq!(stored["text"], "18:05 rollback");
    assert_eq!(stored["experiment_id"], experiment);
    assert_eq!(stored["run_id"], run.0);

    // Refused input names the field and stores nothing.
    for (body, field) in [
        ("{\"text\":\"   \"}".to_owned(), "text: empty"),
        (
            format!("{{\"text\":\"{}\"}}", "x".repeat(2_001)),
            "text: longer than 2000",
        ),
        ("{\"text\":\"ok\",\"experiment\":\"x\"}".to_owned(), "body:"),
    ] {
        let response = send(&state, bearer("/api/annotations", &body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{field}");
        assert!(
            json(response).await["error"]
                .as_str()
                .expect("message")
                .starts_with(field)
        );
    }
    let response = send(
        &state,
        bearer("/api/annotations", "{\"text\":\"ok\",\"experiment\":999}"),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    // A note about another experiment is not tied to the running run.
    let created = send(&state, bearer("/api/experiments", RUNNABLE_SPEC)).await;
    let other = json(created).await["id"].as_i64().expect("id");
    let response = send(
        &state,
        bearer(
            "/api/annotations",
            &format!("{{\"text\":\"about the other one\",\"experiment\":{other}}}"),
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    let stored = json(response).await;
    assert_eq!(
        (&stored["experiment_id"], &stored["run_id"]),
        (&serde_json::json!(other), &serde_json::Value::Null)
    );

    state.hub.flush();
    let live: Vec<String> = state
        .hub
        .state()
        .annotations
        .iter()
        .map(|note| note.text.clone())
        .collect();
    assert_eq!(
        live,
        [
            "18:02 cut payment DB",
            "18:05 rollback",
            "about the other one"
        ]
    );
    drop(state);
    store.close().await;

    // A restarted dashboard over the same database.
    let (state, store) = stored_app(&database.location()).await;
    let listed = json(
        send(
            &state,
            get(&format!("/api/annotations?experiment={experiment}")),
        )
        .await,
    )
    .await;
    let listed = listed.as_array().expect("a list");
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(listed[0]["text"], "18:02 cut payment DB");
    assert_eq!(listed[0]["author"], "alice");
    assert_eq!(listed[0]["run_id"], run.0);
    assert_eq!(listed[1]["author"], serde_json::Value::Null);
    let latest = json(send(&state, get("/api/annotations?limit=2")).await).await;
    let latest: Vec<&str> = latest
        .as_array()
        .expect("a list")
        .iter()
        .map(|note| note["text"].as_str().expect("text"))
        .collect();
    assert_eq!(latest, ["18:05 rollback", "about the other one"]);
    // The live snapshot starts with them.
    let subscription = state.hub.subscribe();
    let snapshot = subscription.snapshot.text.as_str();
    assert!(snapshot.contains("18:02 cut payment DB"), "{snapshot}");
    assert!(snapshot.contains("18:05 rollback"), "{snapshot}");
    drop(subscription);
    // The game day page lists them, newest first.
    let page = text(send(&state, get("/gameday")).await).await;
    let first = page.find("about the other one").expect("listed");
    assert!(first < page.find("18:05 rollback").expect("listed"));
    let first = page.find("18:05 rollback").expect("listed");
    let second = page.find("18:02 cut payment DB").expect("listed");
    assert!(first < second);

    // The results export and page carry them.
    let export = json(
        send(
            &state,
            get(&format!("/api/experiments/{experiment}/results.json")),
        )
        .await,
    )
    .await;
    let exported: Vec<&str> = export["annotations"]
        .as_array()
        .expect("annotations in the export")
        .iter()
        .map(|note| note["text"].as_str().expect("text"))
        .collect();
    assert_eq!(exported, ["18:02 cut payment DB", "18:05 rollback"]);
    let results = json(
        send(
            &state,
            get(&format!("/api/experiments/{experiment}/results")),
        )
        .await,
    )
    .await;
    assert_eq!(results["annotations"].as_array().map(Vec::len), Some(2));
    let page = text(send(&state, get(&format!("/experiments/{experiment}/results"))).await).await;
    assert!(page.contains("id=\"annotations\""));
    assert!(page.contains("18:02 cut payment DB"));
    assert!(page.contains("— alice"));
    assert!(page.contains(&format!("run {}", run.0)));
    drop(state);
    store.close().await;
}

#[tokio::test]
async fn annotation_listings_refuse_bad_queries_naming_the_field() {
    let (state, _) = app();
    for (uri, field) in [
        ("/api/annotations?experiment=abc", "experiment:"),
        ("/api/annotations?limit=0", "limit:"),
        ("/api/annotations?limit=100000", "limit:"),
    ] {
        let response = send(&state, get(uri)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{uri}");
        assert!(
            json(response).await["error"]
                .as_str()
                .expect("message")
                .starts_with(field),
            "{uri}"
        );
    }
    assert_eq!(
        send(&state, get("/api/annotations?experiment=7"))
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        json(send(&state, get("/api/annotations")).await).await,
        serde_json::json!([])
    );
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

#[tokio::test]
async fn a_refused_or_empty_spec_is_shown_in_the_page_with_the_spec_kept() {
    let (state, control) = app();
    let (cookie, csrf) = log_in(&state).await;
    let empty = send(
        &state,
        form(
            "/ui/experiments",
            &format!("csrf={csrf}&spec=++"),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(empty.status(), StatusCode::BAD_REQUEST);
    assert!(
        empty.headers()[CONTENT_TYPE]
            .to_str()
            .expect("ascii")
            .starts_with("text/html")
    );
    let page = text(empty).await;
    assert!(page.contains("id=\"create-error\""), "{page}");
    assert!(page.contains("spec: empty"), "{page}");
    assert!(control.calls().is_empty(), "an empty spec reaches nothing");

    let refused = send(
        &state,
        form(
            "/ui/experiments",
            &format!("csrf={csrf}&spec=rounds+%3D+1"),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    let page = text(refused).await;
    assert!(page.contains("Not created: name: missing"), "{page}");
    assert!(
        page.contains(">rounds = 1</textarea>"),
        "the spec is kept: {page}"
    );
}

#[tokio::test]
async fn the_spec_box_starts_empty_and_the_example_is_not_its_placeholder() {
    let (state, _) = app();
    let page = text(send(&state, get("/experiments")).await).await;
    assert!(
        page.contains("spellcheck=\"false\" placeholder=\"Empty."),
        "{page}"
    );
    let placeholder = page
        .split("placeholder=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a placeholder");
    assert!(!placeholder.contains("[load]"), "{placeholder}");
    assert!(page.contains("<template id=\"example-spec\">"));
    assert!(
        page.contains("id=\"shop-link\""),
        "the header links the shop"
    );
}

#[tokio::test]
async fn errors_of_form_posts_and_unknown_pages_are_html_pages() {
    let (state, control) = app();
    let refused = send(&state, form("/ui/halt", "", None)).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    let page = text(refused).await;
    assert!(page.contains("id=\"error-message\""), "{page}");
    assert!(page.contains("needs the token"), "{page}");
    assert!(page.contains("href=\"/login\""), "{page}");

    let (cookie, csrf) = log_in(&state).await;
    let bad_mode = send(
        &state,
        form(
            "/ui/breakers",
            &format!("csrf={csrf}&mode=sideways"),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(bad_mode.status(), StatusCode::BAD_REQUEST);
    assert!(text(bad_mode).await.contains("mode: `sideways`"));
    assert!(control.calls().is_empty());

    let missing = send(&state, get("/no/such/page")).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(text(missing).await.contains("no such page"));
}

#[tokio::test]
async fn game_day_actions_say_what_they_did_once() {
    let (state, control) = app();
    let (cookie, csrf) = log_in(&state).await;
    state
        .hub
        .publish(crate::hub::LiveEvent::Fault(crate::hub::FaultChange {
            at_ms: 1,
            event: "applied".into(),
            fault_id: "gameday".into(),
            target: "payment".into(),
            kind: "error".into(),
            rate: 0.5,
            ..crate::hub::FaultChange::default()
        }));
    state.hub.flush();
    let halted = send(
        &state,
        form(
            "/ui/halt",
            &format!("csrf={csrf}&enforce=on"),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(halted.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        control.calls(),
        vec![Call::Halt, Call::BreakerMode(None, breaker::Mode::Enforce)]
    );
    let notice = notice_cookie(&halted);
    let page_request = Request::get("/gameday")
        .header(COOKIE, format!("{cookie}; {notice}"))
        .body(Body::empty())
        .expect("request");
    let page = send(&state, page_request).await;
    let clears = page.headers().get_all(SET_COOKIE).iter().any(|value| {
        value
            .to_str()
            .is_ok_and(|v| v.starts_with("tolerant_notice=;"))
    });
    assert!(clears, "a notice is shown once");
    let page = text(page).await;
    assert!(
        page.contains("Halted: cleared 1 fault: gameday (error at 50 % on payment)."),
        "{page}"
    );
    assert!(page.contains("Every breaker is back to enforce"), "{page}");

    let fault = format!("csrf={csrf}&target=payment&kind=delay&rate=25&lease=30s&delay=800ms");
    let applied = send(&state, form("/ui/fault", &fault, Some(&cookie))).await;
    let notice = notice_cookie(&applied);
    let page_request = Request::get("/gameday")
        .header(COOKIE, notice)
        .body(Body::empty())
        .expect("request");
    let page = text(send(&state, page_request).await).await;
    assert!(
        page.contains("Applied fault gameday on payment: delay 800ms at 25 %, lease 30s"),
        "{page}"
    );
}

#[tokio::test]
async fn the_game_day_load_form_checks_its_bounds_and_says_what_it_did() {
    let (state, control) = app();
    let (cookie, csrf) = log_in(&state).await;
    for (body, field) in [
        ("users=0&think_min_ms=100&think_max_ms=200", "users: 0"),
        (
            "users=5000&think_min_ms=100&think_max_ms=200",
            "users: 5000",
        ),
        (
            "users=10&think_min_ms=900&think_max_ms=200",
            "think_min: 900",
        ),
        (
            "users=10&think_min_ms=100&think_max_ms=999999",
            "think_max:",
        ),
        (
            "users=ten&think_min_ms=100&think_max_ms=200",
            "users: expected a whole number",
        ),
    ] {
        let response = send(
            &state,
            form(
                "/ui/load",
                &format!("csrf={csrf}&action=start&{body}"),
                Some(&cookie),
            ),
        )
        .await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        assert!(text(response).await.contains(field), "{body}");
    }
    assert!(control.calls().is_empty(), "{:?}", control.calls());
    let started = send(
        &state,
        form(
            "/ui/load",
            &format!("csrf={csrf}&action=start&users=12&think_min_ms=100&think_max_ms=400"),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(started.status(), StatusCode::SEE_OTHER);
    let stopped = send(
        &state,
        form(
            "/ui/load",
            &format!("csrf={csrf}&action=stop"),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(stopped.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        control.calls(),
        vec![
            Call::Load(Some(crate::operations::LoadRequest {
                users: 12,
                think_min_ms: 100,
                think_max_ms: 400
            })),
            Call::Load(None)
        ]
    );
}

#[tokio::test]
async fn pushed_breaker_events_reach_the_timeline_checked_and_rate_bounded() {
    let (state, _) = app();
    let push = |body: &str| bearer("/api/breaker-events", body);
    let response = send(
        &state,
        push(r#"{"service":"shop","breaker":"upstream","from":"closed","to":"open","source":"pybreaker"}"#),
    )
    .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let answer = json(response).await;
    assert_eq!(
        (answer["accepted"].as_u64(), answer["unchanged"].as_u64()),
        (Some(1), Some(0))
    );
    state.hub.flush();
    let live = state.hub.state();
    let latest = live
        .breakers
        .get("upstream")
        .expect("the pushed breaker is on the timeline");
    assert_eq!(
        (latest.service.as_str(), latest.state),
        ("shop", breaker::State::Open)
    );
    assert_eq!(live.opens, 1);
    assert_eq!(
        live.transitions.back().and_then(|t| t.source.as_deref()),
        Some("push:pybreaker")
    );

    let response = send(&state, push(r#"[{"breaker":"upstream","service":"shop","to":"closed"},{"breaker":"x","to":"ajar"}]"#)).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("events[1].to"));
    state.hub.flush();
    assert_eq!(
        state.hub.state().breakers["upstream"].state,
        breaker::State::Open,
        "nothing of a refused body is taken"
    );

    // The test inbox takes 10 at once and one was taken: ten more are refused with 429.
    let burst = format!("[{}]", [r#"{"breaker":"b","to":"open"}"#; 10].join(","));
    assert_eq!(
        send(&state, push(&burst)).await.status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

/// `next` after a login or an annotation is followed only when it is a same-site path: `/\evil.example/`
/// (a browser reads `\` as `/`) and a leading tab or newline (browsers drop them) are not.
#[tokio::test]
async fn login_and_annotate_follow_only_same_site_paths() {
    let (state, _) = app();
    let (cookie, csrf) = log_in(&state).await;
    for (next, expected) in [
        ("/live", "/live"),
        ("/results/3?x=1", "/results/3?x=1"),
        ("%2F%5Cevil.example%2F", "/"),
        ("%2F%2Fevil.example%2F", "/"),
        ("%09%2F%2Fevil.example%2F", "/"),
        ("%2F%09%2Fevil.example%2F", "/"),
        ("%2F%0A%2Fevil.example%2F", "/"),
        ("https%3A%2F%2Fevil.example%2F", "/"),
        ("%5C%5Cevil.example", "/"),
    ] {
        let response = send(
            &state,
            form("/login", &format!("token={TOKEN}&next={next}"), None),
        )
        .await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{next}");
        assert_eq!(response.headers()["location"], expected, "login {next}");
        let note = format!("csrf={csrf}&text=note&next={next}");
        let response = send(&state, form("/ui/annotate", &note, Some(&cookie))).await;
        assert_eq!(response.headers()["location"], expected, "annotate {next}");
    }
}

/// After five wrong tokens in a row every login is refused unread (429) for a lockout that doubles; a right
/// token after the lockout logs in again.
#[tokio::test(start_paused = true)]
async fn repeated_wrong_logins_are_throttled() {
    let (state, _) = app();
    for _ in 0..5 {
        let response = send(&state, form("/login", "token=guess&next=/", None)).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    // Locked for 1 s: even the right token is refused without being looked at.
    let right = format!("token={TOKEN}&next=/");
    let response = send(&state, form("/login", &right, None)).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(response.headers().get(SET_COOKIE).is_none());
    assert!(text(response).await.contains("Too many wrong tokens"));
    tokio::time::advance(std::time::Duration::from_millis(1_100)).await;
    // A sixth wrong one locks for 2 s.
    let response = send(&state, form("/login", "token=guess&next=/", None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    tokio::time::advance(std::time::Duration::from_millis(1_500)).await;
    let response = send(&state, form("/login", &right, None)).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    tokio::time::advance(std::time::Duration::from_millis(600)).await;
    let response = send(&state, form("/login", &right, None)).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    // The count starts again from zero.
    let response = send(&state, form("/login", "token=guess&next=/", None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}
