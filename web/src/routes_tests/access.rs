//! Who may do what: open viewing, token-gated mutations, the bearer token, the login cookie with its CSRF
//! token and Origin check, same-site `next` redirects and throttled wrong logins.

use super::*;

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
        (
            "/api/containers",
            "{\"container\":\"payment\",\"kind\":\"pause\",\"lease\":\"5s\"}",
        ),
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
    let delete = Request::delete("/api/containers/faults/1")
        .body(Body::empty())
        .expect("request");
    assert_eq!(
        send(&state, delete).await.status(),
        StatusCode::UNAUTHORIZED
    );
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
        (
            "/ui/container-fault",
            "container=payment&kind=pause&lease=5s",
        ),
        ("/ui/container-fault/clear", "id=1"),
        ("/ui/breakers", "mode=enforce"),
        ("/ui/annotate", "text=hello"),
        ("/ui/load", "action=stop"),
        ("/logout", ""),
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
async fn a_post_that_is_not_its_form_is_refused_as_such_before_the_token_is_checked() {
    let (state, operations) = app();
    let (cookie, csrf) = log_in(&state).await;
    // Not the form: a bad field answers the form's error, with or without the session.
    for cookie in [None, Some(cookie.as_str())] {
        let bad_rate = form(
            "/ui/fault",
            &format!("csrf={csrf}&target=payment&kind=hang&rate=lots&lease=5s"),
            cookie,
        );
        assert_eq!(
            send(&state, bad_rate).await.status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }
    let not_a_form = post("/ui/halt")
        .header(COOKIE, &cookie)
        .body(Body::from(format!("csrf={csrf}")))
        .expect("request");
    assert_eq!(
        send(&state, not_a_form).await.status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert!(operations.calls().is_empty(), "{:?}", operations.calls());
    // The form, with the session's token: taken.
    let halt = form("/ui/halt", &format!("csrf={csrf}"), Some(&cookie));
    assert_eq!(send(&state, halt).await.status(), StatusCode::SEE_OTHER);
    assert_eq!(operations.calls().len(), 1, "{:?}", operations.calls());
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

/// After 10 wrong tokens from an address within the window, the 11th login is refused (429, `Retry-After`) and
/// so is every login from that address for the rest of the window, the right token unread; a fresh window after.
#[tokio::test(start_paused = true)]
async fn repeated_wrong_logins_are_throttled() {
    let (state, _) = app();
    for _ in 0..serving::throttle::WRONG_TOKENS_PER_WINDOW {
        let response = send(&state, form("/login", "token=guess&next=/", None)).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    }
    let response = send(&state, form("/login", "token=guess&next=/", None)).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()["retry-after"], "10");
    // Locked: even the right token is refused without being looked at.
    tokio::time::advance(std::time::Duration::from_millis(9_500)).await;
    let right = format!("token={TOKEN}&next=/");
    let response = send(&state, form("/login", &right, None)).await;
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(response.headers()["retry-after"], "1");
    assert!(response.headers().get(SET_COOKIE).is_none());
    assert!(text(response).await.contains("Too many wrong tokens"));
    tokio::time::advance(std::time::Duration::from_millis(600)).await;
    let response = send(&state, form("/login", &right, None)).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    // A fresh window: wrong ones are 401 again.
    let response = send(&state, form("/login", "token=guess&next=/", None)).await;
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

/// `request` as if it came from `address` (what `serving::serve` records of each connection).
fn from(address: &str, mut request: Request<Body>) -> Request<Body> {
    let peer: std::net::SocketAddr = format!("{address}:40000").parse().expect("address");
    request
        .extensions_mut()
        .insert(axum::extract::ConnectInfo(peer));
    request
}

fn bearer_from(
    address: &str,
    method: http::Method,
    uri: &str,
    token: &str,
    body: &str,
) -> Request<Body> {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::from(body.to_owned()))
        .expect("request");
    from(address, request)
}

/// Every bearer-token route of the dashboard's API (its own and the automation API's): the 11th wrong token from
/// an address is 429 with `Retry-After`; the right one still goes through from it; another address is not
/// affected; wrong logins and wrong bearer tokens count together.
#[tokio::test(start_paused = true)]
async fn wrong_bearer_tokens_are_throttled_per_address_and_a_right_one_never_is() {
    use http::Method;
    let load = r#"{"users": 2, "think_min_ms": 100, "think_max_ms": 200}"#;
    for (method, uri, body, right_status) in [
        (Method::POST, "/api/halt", "", StatusCode::OK),
        (Method::PUT, "/api/load", load, StatusCode::OK),
    ] {
        let (state, _) = app();
        for guess in 0..serving::throttle::WRONG_TOKENS_PER_WINDOW {
            let response = send(
                &state,
                bearer_from("10.0.0.9", method.clone(), uri, "guess", body),
            )
            .await;
            assert_eq!(
                response.status(),
                StatusCode::UNAUTHORIZED,
                "{uri}: guess {guess}"
            );
        }
        let response = send(
            &state,
            bearer_from("10.0.0.9", method.clone(), uri, "guess", body),
        )
        .await;
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS, "{uri}");
        assert_eq!(response.headers()["retry-after"], "10", "{uri}");
        assert!(
            text(response).await.contains("too many wrong tokens"),
            "{uri}"
        );
        let response = send(
            &state,
            bearer_from("10.0.0.9", method.clone(), uri, TOKEN, body),
        )
        .await;
        assert_eq!(response.status(), right_status, "{uri}: the right token");
        let response = send(
            &state,
            bearer_from("10.0.0.10", method.clone(), uri, "guess", body),
        )
        .await;
        assert_eq!(
            response.status(),
            StatusCode::UNAUTHORIZED,
            "{uri}: another address"
        );
        // The login form from the locked address is refused too: one count for both ways in.
        let login = from(
            "10.0.0.9",
            form("/login", &format!("token={TOKEN}&next=/"), None),
        );
        assert_eq!(
            send(&state, login).await.status(),
            StatusCode::TOO_MANY_REQUESTS
        );
    }
}
