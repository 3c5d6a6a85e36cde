//! The game-day page's forms: they reach the controller, check their bounds, say what they did once; pushed
//! breaker events reach the timeline checked and rate-bounded.

use super::*;
use crate::operations::ModeRequest;

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
    // A tile's switch: one breaker of the service.
    let one = format!("csrf={csrf}&service=checkout&breaker=checkout-%3Epayment&mode=disabled");
    let switched = send(&state, form("/ui/breakers", &one, Some(&cookie))).await;
    assert_eq!(switched.status(), StatusCode::SEE_OTHER);
    let page = page_after(&state, &switched, Some(&cookie)).await;
    assert!(
        page.contains("Breaker checkout-&#62;payment of checkout is now disabled")
            && page.contains("lease renewed while the dashboard runs"),
        "the notice names the breaker and the lease: {}",
        page.split("id=\"notice\"")
            .nth(1)
            .unwrap_or(&page)
            .chars()
            .take(400)
            .collect::<String>()
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
        agent::api::FaultSpec::try_new(
            agent::api::FaultKind::Error {
                status: agent::api::ErrorStatus::new(503).unwrap(),
                body: None
            },
            1.0,
            agent::api::MatchRule::default(),
            Some(std::time::Duration::from_secs(45))
        )
        .expect("a valid fault")
    );
    assert_eq!(
        calls[1],
        Call::BreakerMode(ModeRequest::every(
            Some(boutique::ServiceName::Checkout.into()),
            breaker::Mode::ForcedOpen
        ))
    );
    assert_eq!(
        calls[2],
        Call::BreakerMode(ModeRequest {
            service: Some(boutique::ServiceName::Checkout.into()),
            breaker: Some("checkout->payment".into()),
            mode: breaker::Mode::Disabled,
        })
    );
    let Call::Annotate(request) = &calls[3] else {
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
async fn game_day_actions_say_what_they_did_once() {
    let (state, control) = app();
    let (cookie, csrf) = log_in(&state).await;
    state
        .hub
        .publish(crate::hub::LiveEvent::Fault(crate::hub::FaultChange {
            at_ms: 1,
            event: crate::hub::FaultChangeEvent::Applied,
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
        vec![
            Call::Halt,
            Call::BreakerMode(ModeRequest::every(None, breaker::Mode::Enforce))
        ]
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
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{body}");
        let page = page_after(&state, &response, Some(&cookie)).await;
        assert!(
            page.contains("class=\"notice problem\"") && page.contains(field),
            "{body}: {page}"
        );
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

/// A bad lease answers on the game day page itself (not an error page), naming the field, and nothing is
/// applied; the page a logged-out viewer sees has its action buttons disabled.
#[tokio::test]
async fn a_bad_lease_is_said_on_the_game_day_page_and_a_viewer_sees_disabled_buttons() {
    let (state, control) = app();
    let (cookie, csrf) = log_in(&state).await;
    let fault = format!("csrf={csrf}&target=payment&kind=error&status=500&rate=50&lease=forever");
    let refused = send(&state, form("/ui/fault", &fault, Some(&cookie))).await;
    assert_eq!(refused.status(), StatusCode::SEE_OTHER);
    let page = page_after(&state, &refused, Some(&cookie)).await;
    assert!(page.contains("class=\"notice problem\""), "{page}");
    assert!(page.contains("Not done: lease"), "{page}");
    assert!(control.calls().is_empty(), "{:?}", control.calls());

    let viewing = text(send(&state, get("/gameday")).await).await;
    assert!(
        viewing.contains("id=\"halt\"") && viewing.contains("disabled title=\"Log in to act\""),
        "{viewing}"
    );
    let logged_in = text(
        send(
            &state,
            Request::get("/gameday")
                .header(COOKIE, cookie)
                .body(Body::empty())
                .expect("request"),
        )
        .await,
    )
    .await;
    assert!(!logged_in.contains("Log in to act"), "{logged_in}");
}
