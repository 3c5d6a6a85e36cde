//! Bad input in forms and the spec box: errors name the field, a refused spec is shown with the spec kept,
//! and errors of form posts and unknown pages are HTML pages.

use super::*;

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

    let response = send(
        &state,
        authorized(
            "/api/breakers",
            "{\"service\":\"check out\",\"mode\":\"enforce\"}",
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(
        text(response)
            .await
            .contains("service: service name `check out` has ` `")
    );
    // One breaker needs its service; the service's own answer on an unknown breaker is the embedded stack's.
    for (body, error) in [
        (
            r#"{"breaker":"checkout->payment","mode":"enforce"}"#,
            "service: needed with `breaker`",
        ),
        (
            r#"{"service":"checkout","breaker":3,"mode":"enforce"}"#,
            "body: invalid type: integer `3`",
        ),
    ] {
        let response = send(&state, authorized("/api/breakers", body)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{body}");
        let message = text(response).await;
        assert!(message.contains(error), "{body}: {message}");
    }
    let response = send(
        &state,
        authorized(
            "/api/breakers",
            &format!(
                r#"{{"service":"checkout","breaker":"{}","mode":"enforce"}}"#,
                "x".repeat(300)
            ),
        ),
    )
    .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(
        text(response)
            .await
            .contains("breaker: longer than 256 bytes")
    );
    let clear = Request::delete("/api/faults/gameday?target=pay%2Fment")
        .header(AUTHORIZATION, format!("Bearer {TOKEN}"))
        .body(Body::empty())
        .expect("request");
    let response = send(&state, clear).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert!(
        text(response)
            .await
            .contains("target: service name `pay/ment` has `/`")
    );
    assert!(
        !operations
            .calls()
            .iter()
            .any(|call| matches!(call, Call::ClearFault(..)))
    );
    assert!(
        !operations
            .calls()
            .iter()
            .any(|call| matches!(call, Call::BreakerMode(..)))
    );
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
    // A game-day action's bad field is said on the game day page, as a problem.
    assert_eq!(bad_mode.status(), StatusCode::SEE_OTHER);
    let page = page_after(&state, &bad_mode, Some(&cookie)).await;
    assert!(
        page.contains("class=\"notice problem\"") && page.contains("mode: `sideways`"),
        "{page}"
    );
    assert!(control.calls().is_empty());

    let missing = send(&state, get("/no/such/page")).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    assert!(text(missing).await.contains("no such page"));
}
