//! `/api/simulate`, `/api/simulate/spec` and the simulator page through the router.

use http::StatusCode;

use super::{app, get, send, text};

#[tokio::test]
async fn the_routes_answer_json_specs_and_errors_naming_the_setting() {
    let (state, _) = app();
    let response = send(&state, get("/api/simulate?open_window=20&rate=10")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let run: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(run["seconds"].as_array().map(Vec::len), Some(60));
    assert!(run["totals"]["never_made"].as_u64().unwrap() > 0, "{run}");

    let response = send(&state, get("/api/simulate?jitter=1.5")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
    assert!(
        body["error"].as_str().unwrap().starts_with("jitter:"),
        "{body}"
    );

    let response = send(&state, get("/api/simulate/spec?outage=20&open_window=15")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let spec = controller::test_support::spec(&text(response).await);
    assert_eq!(
        spec.breaker.config.open().base(),
        std::time::Duration::from_secs(15)
    );

    // An outage that leaves only 100 ms inside the window cannot be scheduled: said, not mangled.
    let response = send(&state, get("/api/simulate/spec?outage_start=59.9")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let body = text(response).await;
    assert!(body.contains("fault.schedule.length"), "{body}");

    let page = text(send(&state, get("/simulate")).await).await;
    assert!(
        page.contains("id=\"sim-form\"") && page.contains("href=\"/simulate\""),
        "{page}"
    );
}

/// The page offers the published model with the published defaults on its option; those settings, sent back as
/// the page sends them, draw the published model and its totals.
#[tokio::test]
async fn the_page_offers_the_published_model_and_its_defaults_give_its_totals() {
    let (state, _) = app();
    let page = text(send(&state, get("/simulate")).await).await;
    let option = page
        .split("<option value=\"published\" data-defaults=\"")
        .nth(1)
        .expect("the published model is offered");
    let defaults = option.split('"').next().unwrap().replace("&#38;", "&");
    let response = send(
        &state,
        get(&format!("/api/simulate?model=published&{defaults}")),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let run: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(run["model"], "published", "{run}");
    let t = &run["totals"];
    let totals: Vec<u64> = ["reached", "never_made", "slow_failures", "fast_failures"]
        .iter()
        .map(|key| t[key].as_u64().unwrap())
        .collect();
    assert_eq!(totals, [802, 398, 6, 398], "{t}");
    assert_eq!(t["successful"], 796, "{t}");

    let response = send(&state, get("/api/simulate")).await;
    let run: serde_json::Value = serde_json::from_str(&text(response).await).unwrap();
    assert_eq!(run["model"], "at-timeout", "{run}");
    let response = send(&state, get("/api/simulate?model=instant")).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulations_beyond_the_pool_and_its_queue_are_answered_429() {
    let (mut state, _) = app();
    state.simulations = crate::simulation_pool::SimulationPool::new(1, 1);
    // One simulation's place held by a job that waits for the test, one queued behind it.
    let (release, held) = std::sync::mpsc::channel::<()>();
    let (started, running) = tokio::sync::oneshot::channel();
    let pool = state.simulations.clone();
    let holder = tokio::spawn(async move {
        pool.run(move || {
            let _ = started.send(());
            let _ = held.recv();
        })
        .await
    });
    running.await.expect("the holder runs");
    let queued = {
        let state = state.clone();
        tokio::spawn(async move { send(&state, get("/api/simulate?rate=10")).await.status() })
    };
    // Until the queued request holds its place (bounded: without a pool it never does, and the 429 below fails).
    for _ in 0..2_000 {
        if state.simulations.admitted.available_permits() == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let response = send(&state, get("/api/simulate?rate=10")).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let body = text(response).await;
    assert!(
        body.contains("2 simulations are running or waiting"),
        "{body}"
    );
    release.send(()).expect("the holder waits");
    holder.await.expect("joins").expect("the holder ran");
    assert_eq!(
        queued.await.expect("joins"),
        StatusCode::OK,
        "the queued one ran after"
    );
    let response = send(&state, get("/api/simulate?rate=10")).await;
    assert_eq!(response.status(), StatusCode::OK, "places come back");
}
