//! The advisor page and `POST /api/tune`: the page shows the form and the example, the API answers the same
//! keys as `tolerant tune --json` plus the chart's points, the downloads and the verification's spec, a bad
//! input is a 400 naming its field, and the verify button creates and starts the experiment.

use super::*;

/// A small search: one hanging outage, a thinned grid.
const INPUT: &str = "name = \"payment\"\n[traffic]\nrate = 5.0\ntimeout = \"1s\"\n\
    [[profiles]]\nname = \"outage\"\nkind = \"hang\"\nlength = \"20s\"\n\
    [[profiles]]\nname = \"partial\"\nkind = \"partial\"\nrate = 0.5\nfault = \"hang\"\nwindow = \"30s\"\n\
    [search]\nmax_candidates = 40\n";

fn tune(body: serde_json::Value) -> Request<Body> {
    post("/api/tune")
        .header(CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("request")
}

#[tokio::test]
async fn the_page_shows_the_form_with_the_shipped_example() {
    let (state, _) = app();
    let response = send(&state, get("/advisor")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let html = text(response).await;
    assert!(html.contains("id=\"tune-form\""), "the form");
    assert!(
        html.contains("partial-25") && html.contains("detect_within"),
        "the example TOML"
    );
    assert!(html.contains("/static/advisor.js"));
    assert!(
        html.contains("consecutive_failures = 5"),
        "the study's breaker as the current config"
    );
}

#[tokio::test]
async fn the_api_answers_the_cli_keys_the_points_the_downloads_and_the_spec() {
    let (state, _) = app();
    let response = send(
        &state,
        tune(serde_json::json!({
            "input": INPUT,
            "current": "db_breaker = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=60)",
            "library": "pybreaker",
        })),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    for key in [
        "recommended",
        "why",
        "front",
        "current",
        "points",
        "exports",
        "spec",
    ] {
        assert!(body.get(key).is_some(), "{key}");
    }
    assert_eq!(body["current"]["source"], "pybreaker");
    assert!(body["front"].as_array().is_some_and(|f| !f.is_empty()));
    assert!(body["points"].as_array().is_some_and(|p| !p.is_empty()));
    // Every library answers: its file, or why it cannot express the recommendation.
    for library in ["resilience4j", "polly", "gobreaker", "pybreaker", "opossum"] {
        let export = &body["exports"][library];
        assert!(
            export.get("text").is_some() || export.get("error").is_some(),
            "{library}"
        );
    }
    let spec = body["spec"]["toml"].as_str().expect("a verification spec");
    controller::spec::ExperimentSpec::parse(spec).expect("it validates");
}

#[tokio::test]
async fn a_bad_input_is_a_400_naming_the_field() {
    let (state, _) = app();
    let bad = INPUT.replace("rate = 5.0", "rate = -1.0");
    let response = send(&state, tune(serde_json::json!({ "input": bad }))).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = text(response).await;
    assert!(
        body.contains("traffic.rate") && body.contains("line 3"),
        "{body}"
    );
    let response = send(
        &state,
        tune(serde_json::json!({ "input": INPUT, "current": "{\"BreakDurationGenerator\": 1}", "library": "polly" })),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(text(response).await.contains("BreakDurationGenerator"));
}

#[tokio::test]
async fn the_verify_button_creates_and_starts_the_experiment() {
    let (state, operations) = app();
    let (cookie, csrf) = log_in(&state).await;
    let spec = "name = \"tune-verify\"\nduration = \"60s\"\n[load]\nusers = 1\n";
    let body = format!("csrf={csrf}&spec={}", url_encode(spec));
    let response = send(&state, form("/ui/advisor/verify", &body, Some(&cookie))).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()["location"], "/live");
    let calls = operations.calls();
    assert!(
        matches!(calls.as_slice(), [.., Call::Create(s), Call::Start(_, None)] if s == spec),
        "{calls:?}"
    );
    // Without the session's CSRF token nothing is created.
    let refused = send(
        &state,
        form(
            "/ui/advisor/verify",
            &format!("csrf=x&spec={}", url_encode(spec)),
            Some(&cookie),
        ),
    )
    .await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
