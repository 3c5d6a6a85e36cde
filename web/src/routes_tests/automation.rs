//! The API scripts drive a game day with: the breaker board, the agent's faults, the load switch and the
//! `[[validate]]` verdict — each a JSON answer, each refusal naming the field.

use super::*;
use controller::test_support::TempStore;

fn with_token(method: http::Method, uri: &str, body: &str) -> Request<Body> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(HOST, "127.0.0.1:8080")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::from(body.to_owned()))
        .expect("request")
}

fn tile(name: &str, state: breaker::State, opens: u64) -> crate::hub::BreakerTile {
    crate::hub::BreakerTile {
        name: name.into(),
        service: name.split("->").next().unwrap_or_default().into(),
        state,
        mode: breaker::Mode::Enforce,
        config: None,
        calls: 40,
        failures: 12,
        rejected: 3,
        opens,
        window: crate::hub::TileWindow::default(),
        open_until_ms: None,
    }
}

#[tokio::test]
async fn the_breaker_board_is_empty_before_the_first_read_then_the_latest_one() {
    let (state, _) = app();
    let response = send(&state, get("/api/breakers")).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    assert_eq!(body["at_ms"], serde_json::Value::Null);
    assert_eq!(body["breakers"], serde_json::json!([]));

    for (at_ms, payment) in [
        (1_000, breaker::State::Closed),
        (2_000, breaker::State::Open),
    ] {
        state
            .hub
            .publish(crate::hub::LiveEvent::Breakers(crate::hub::BreakerBoard {
                at_ms,
                breakers: vec![
                    tile("checkout->payment", payment, 1),
                    tile("frontend->cart", breaker::State::Closed, 0),
                ],
            }));
        state.hub.flush();
    }
    let body = json(send(&state, get("/api/breakers")).await).await;
    assert_eq!(body["at_ms"], 2_000);
    assert_eq!(body["breakers"][0]["name"], "checkout->payment");
    assert_eq!(body["breakers"][0]["state"], "open");
    assert_eq!(body["breakers"][0]["opens"], 1);
    assert_eq!(body["breakers"][0]["rejected"], 3);
    assert_eq!(body["breakers"][1]["state"], "closed");
}

#[tokio::test]
async fn the_faults_listed_are_those_set_and_not_cleared() {
    let (state, _) = app();
    let listed = |body: serde_json::Value| -> Vec<String> {
        assert_eq!(body["target"], "payment");
        body["faults"]
            .as_array()
            .expect("faults")
            .iter()
            .map(|fault| fault["id"].as_str().expect("id").to_owned())
            .collect()
    };
    assert!(listed(json(send(&state, get("/api/faults")).await).await).is_empty());
    for id in ["outage", "slow"] {
        let response = send(
            &state,
            with_token(
                http::Method::PUT,
                &format!("/api/faults/{id}"),
                r#"{"kind":"error","status":503,"rate":1.0,"lease":"30s"}"#,
            ),
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
    }
    let body = json(send(&state, get("/api/faults")).await).await;
    assert_eq!(listed(body.clone()), ["outage", "slow"]);
    assert_eq!(body["faults"][0]["fault"]["kind"], "error");
    assert_eq!(body["faults"][0]["lease_ms"], 30_000);
    send(
        &state,
        with_token(http::Method::DELETE, "/api/faults/outage", ""),
    )
    .await;
    assert_eq!(
        listed(json(send(&state, get("/api/faults")).await).await),
        ["slow"]
    );
    send(&state, bearer("/api/halt", "")).await;
    assert!(listed(json(send(&state, get("/api/faults")).await).await).is_empty());
}

#[tokio::test]
async fn the_load_switch_needs_the_token_checks_its_bounds_and_reaches_the_controller() {
    let (state, operations) = app();
    let body = r#"{"users":20,"think_min_ms":100,"think_max_ms":500}"#;
    let anonymous = Request::put("/api/load")
        .body(Body::from(body))
        .expect("request");
    assert_eq!(
        send(&state, anonymous).await.status(),
        StatusCode::UNAUTHORIZED
    );
    for (bad, field) in [
        (r#"{"users":0,"think_min_ms":0,"think_max_ms":0}"#, "users:"),
        (
            r#"{"users":99999999999,"think_min_ms":0,"think_max_ms":0}"#,
            "users:",
        ),
        (
            r#"{"users":5,"think_min_ms":900,"think_max_ms":100}"#,
            "think_min:",
        ),
        (
            r#"{"users":5,"think_min_ms":0,"think_max_ms":61000}"#,
            "think_max:",
        ),
        (
            r#"{"users":5,"think_min_ms":0,"think_max_ms":1,"rate":3}"#,
            "body:",
        ),
    ] {
        let response = send(&state, with_token(http::Method::PUT, "/api/load", bad)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{bad}");
        let error = json(response).await["error"]
            .as_str()
            .expect("message")
            .to_owned();
        assert!(error.starts_with(field), "{bad}: {error}");
    }
    assert!(
        operations.calls().is_empty(),
        "a refused load reaches nothing"
    );

    let response = send(&state, with_token(http::Method::PUT, "/api/load", body)).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(json(response).await["load"]["users"], 20);
    let response = send(&state, with_token(http::Method::DELETE, "/api/load", "")).await;
    assert_eq!(json(response).await["load"], serde_json::Value::Null);
    assert_eq!(
        operations.calls(),
        [
            Call::Load(Some(
                crate::operations::LoadRequest::checked(20, 100, 500).expect("in bounds")
            )),
            Call::Load(None)
        ]
    );
}

#[tokio::test]
async fn a_finished_runs_figures_and_a_run_that_is_not_there() {
    let (state, _) = app();
    let created = send(&state, bearer("/api/experiments", SPEC)).await;
    let id = json(created).await["id"].as_i64().expect("id");
    let response = send(
        &state,
        get(&format!("/api/experiments/{id}/runs/1/figures")),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    assert_eq!(
        (body["run_id"].as_i64(), body["round"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(body["figures"]["availability"], 0.5);
    let response = send(
        &state,
        get(&format!("/api/experiments/{id}/runs/2/figures")),
    )
    .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let error = json(response).await["error"]
        .as_str()
        .expect("message")
        .to_owned();
    assert_eq!(error, format!("run: experiment {id} has no finished run 2"));
    let response = send(&state, get("/api/experiments/999/runs/1/figures")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

/// The runnable spec with one `[[validate]]` criterion.
fn gated_spec() -> String {
    format!(
        "{RUNNABLE_SPEC}\n[[validate]]\nname = \"checkout failure stays below 5 %\"\n\
         metric = \"checkout_failure\"\nfault_rate = 1.0\nbreaker = \"enforce\"\n\
         comparison = \"<\"\nthreshold = 0.05\n"
    )
}

#[tokio::test]
async fn the_gate_is_judged_on_the_stored_experiment_and_a_spec_without_criteria_is_a_conflict() {
    let database = TempStore::new("automation-gate");
    let (state, _store) = stored_app(&database.location()).await;
    let created = send(&state, bearer("/api/experiments", &gated_spec())).await;
    assert_eq!(created.status(), StatusCode::CREATED);
    let gated = json(created).await["id"].as_i64().expect("id");
    let response = send(&state, get(&format!("/api/experiments/{gated}/validate"))).await;
    assert_eq!(response.status(), StatusCode::OK);
    let body = json(response).await;
    assert_eq!(body["experiment_id"], gated);
    // Nothing has run: the criterion cannot be judged, and that is not a pass.
    assert_eq!(body["passed"], false);
    assert_eq!(body["results"][0]["outcome"], "unevaluable");
    assert_eq!(
        body["results"][0]["criterion"]["name"],
        "checkout failure stays below 5 %"
    );

    let created = send(&state, bearer("/api/experiments", RUNNABLE_SPEC)).await;
    let ungated = json(created).await["id"].as_i64().expect("id");
    let response = send(&state, get(&format!("/api/experiments/{ungated}/validate"))).await;
    assert_eq!(response.status(), StatusCode::CONFLICT);
    let error = json(response).await["error"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(error.starts_with("validate: "), "{error}");

    let response = send(&state, get("/api/experiments/999/validate")).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}
