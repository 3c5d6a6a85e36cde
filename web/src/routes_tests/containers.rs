//! Game-day container faults through the router over the in-memory operations: the form and the JSON API
//! reach the controller with the action they describe, bad input is a 400 naming the field before anything is
//! asked of the controller, and the page lists the compose project's replicas.

use std::time::Duration;

use axum::body::Body;
use controller::docker::ContainerAction;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{Request, StatusCode};

use super::{TOKEN, app, form, get, json, log_in, post, send, text};
use crate::operations::ContainerFaultRequest;
use crate::operations::memory::Call;

fn json_post(uri: &str, body: &str) -> Request<Body> {
    post(uri)
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .header(CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_owned()))
        .expect("request")
}

fn container_faults(calls: &[Call]) -> Vec<ContainerFaultRequest> {
    calls
        .iter()
        .filter_map(|call| match call {
            Call::ContainerFault(request) => Some(request.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_game_day_page_offers_each_replica_and_its_form_reaches_the_controller() {
    let (state, operations) = app();
    let (cookie, csrf) = log_in(&state).await;
    let page = text(send(&state, get("/gameday")).await).await;
    assert!(page.contains(r#"<option value="checkout#2">"#), "{page}");
    assert!(page.contains(r#"value="net_delay""#));

    for (fields, expected) in [
        (
            "container=checkout%232&kind=pause&lease=30s",
            ContainerAction::Pause,
        ),
        (
            "container=payment&kind=kill&signal=term&lease=5s",
            ContainerAction::Kill {
                signal: "SIGTERM".into(),
            },
        ),
        (
            "container=payment&kind=net_delay&net_delay=250ms&lease=1m",
            ContainerAction::NetDelay { delay_ms: 250 },
        ),
        (
            "container=payment&kind=net_loss&loss=12.5&lease=10s",
            ContainerAction::NetLoss { percent: 12.5 },
        ),
    ] {
        let response = send(
            &state,
            form(
                "/ui/container-fault",
                &format!("csrf={csrf}&{fields}"),
                Some(&cookie),
            ),
        )
        .await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{fields}");
        let applied = container_faults(&operations.calls());
        assert_eq!(
            applied.last().map(|r| &r.action),
            Some(&expected),
            "{fields}"
        );
    }
    let applied = container_faults(&operations.calls());
    assert_eq!(applied[0].replica, "checkout#2");
    assert_eq!(applied[0].lease, Duration::from_secs(30));
    assert_eq!(applied[2].lease, Duration::from_secs(60));

    let undo = format!("csrf={csrf}&id=3");
    let response = send(
        &state,
        form("/ui/container-fault/clear", &undo, Some(&cookie)),
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        operations.calls().last(),
        Some(&Call::ClearContainerFault(3))
    );
}

#[tokio::test]
async fn bad_container_faults_are_refused_naming_the_field_before_the_controller_is_asked() {
    let (state, operations) = app();
    for (body, field) in [
        (
            r#"{"container":"payment","kind":"pause","lease":"0s"}"#,
            "lease:",
        ),
        (
            r#"{"container":"payment","kind":"pause","lease":"11m"}"#,
            "lease:",
        ),
        (
            r#"{"container":"payment","kind":"pause","lease":"soon"}"#,
            "lease:",
        ),
        (
            r#"{"container":"payment","kind":"freeze","lease":"5s"}"#,
            "kind:",
        ),
        (
            r#"{"container":"","kind":"pause","lease":"5s"}"#,
            "container:",
        ),
        (
            r#"{"container":"payment","kind":"kill","signal":"SIGSEGV","lease":"5s"}"#,
            "signal:",
        ),
        (
            r#"{"container":"payment","kind":"net_delay","net_delay":"61s","lease":"5s"}"#,
            "net_delay:",
        ),
        (
            r#"{"container":"payment","kind":"net_delay","net_delay":"0ms","lease":"5s"}"#,
            "net_delay:",
        ),
        (
            r#"{"container":"payment","kind":"net_loss","loss":"0","lease":"5s"}"#,
            "loss:",
        ),
        (
            r#"{"container":"payment","kind":"net_loss","loss":"100.5","lease":"5s"}"#,
            "loss:",
        ),
        (
            r#"{"container":"payment","kind":"net_loss","loss":"lots","lease":"5s"}"#,
            "loss:",
        ),
        // A misspelt field is named, not ignored (here the lease would have been the default's).
        (
            r#"{"container":"payment","kind":"pause","lease":"5s","leese":"1h"}"#,
            "unknown field `leese`",
        ),
        (
            r#"{"container":"payment","kind":"pause","lease":"5s","csrf":"x"}"#,
            "unknown field `csrf`",
        ),
    ] {
        let response = send(&state, json_post("/api/containers", body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let message = text(response).await;
        assert!(message.contains(field), "{body}: {message}");
    }
    assert!(container_faults(&operations.calls()).is_empty());

    let response = send(
        &state,
        json_post(
            "/api/containers",
            r#"{"container":"payment","kind":"net_loss","loss":"100","lease":"10m"}"#,
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(json(response).await["fault_id"], "container-1");
    let listing = json(send(&state, get("/api/containers")).await).await;
    assert_eq!(listing["containers"][1]["replica"], "checkout#2");
}
