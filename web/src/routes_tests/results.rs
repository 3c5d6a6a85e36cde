//! The results page: downloads, a one-round experiment saying intervals need two rounds, replaying a stored run.

use super::*;

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
    let (state, operations) = app();
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
    assert!(
        page.contains("58 [56, 60]"),
        "whole figures read whole: {page}"
    );
    assert!(page.contains("≤ 62 (estimate ≈ 57.98)"), "{page}");
    // Per breaker: the predicted one by name with its bound, the one the model leaves out said so.
    assert!(
        page.contains("breaker_opens [checkout-&#62;payment]"),
        "{page}"
    );
    assert!(
        page.contains("opens bound [checkout-&#62;payment]"),
        "{page}"
    );
    assert!(
        page.contains("breaker_opens [frontend-&#62;checkout]"),
        "{page}"
    );
    assert!(page.contains("of 40 simulations"), "{page}");
    // The load the bands assume, first, with what it means while nothing was measured.
    assert!(page.contains("load: checkout_rate"), "{page}");
    assert!(
        page.contains("the rate the prediction made before the run assumes"),
        "{page}"
    );
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
    let json = send(&state, get("/api/experiments/1/results.json")).await;
    assert_eq!(text(json).await, "{}");
    // Each download asks for its own format and nothing else: no markdown, no other format.
    let reports: Vec<Call> = operations
        .calls()
        .into_iter()
        .filter(|call| matches!(call, Call::Report(..)))
        .collect();
    assert_eq!(
        reports,
        [
            Call::Report(1, controller::report::Format::Csv),
            Call::Report(1, controller::report::Format::Json)
        ]
    );
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
