//! `/ws` over a real socket: a browser page on another origin is refused (403) as the forms refuse it; the
//! dashboard's own page and clients that send no `Origin` are served. Anonymous readers are capped (503 with
//! `Retry-After`); a token holder is served past the cap.

use std::sync::Arc;

use http::StatusCode;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use controller::sources::{PushInbox, RateLimit};

use crate::app::router;
use crate::auth::Auth;
use crate::hub::{Hub, HubConfig};
use crate::operations::memory::MemoryOperations;
use crate::state::AppState;

async fn open_with_origin(url: &str, origin: Option<&str>) -> Result<(), StatusCode> {
    let mut request = url.into_client_request().expect("request");
    if let Some(origin) = origin {
        request
            .headers_mut()
            .insert(http::header::ORIGIN, origin.parse().expect("header"));
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok(_) => Ok(()),
        Err(WsError::Http(response)) => Err(response.status()),
        Err(other) => panic!("{url}: {other}"),
    }
}

#[tokio::test]
async fn a_cross_origin_websocket_is_refused_and_the_dashboards_own_page_is_served() {
    let state = AppState {
        hub: Hub::new(HubConfig::default()),
        operations: Arc::new(MemoryOperations::new()),
        auth: Arc::new(Auth::new("ws-token")),
        shop_url: None,
        breaker_inbox: PushInbox::new(RateLimit::new(0.01, 10.0)),
        simulations: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, router(state)).await;
    });
    let url = format!("ws://{addr}/ws");
    for origin in [
        "https://evil.example",
        "http://localhost:1",
        "http://127.0.0.1:1",
        "null",
    ] {
        assert_eq!(
            open_with_origin(&url, Some(origin)).await,
            Err(StatusCode::FORBIDDEN),
            "{origin}"
        );
    }
    let own = format!("http://{addr}");
    for origin in [Some(own.as_str()), None] {
        assert_eq!(open_with_origin(&url, origin).await, Ok(()), "{origin:?}");
    }
    served.abort();
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens `/ws` (with `authorization` if given): the socket, or the refusal's status and `Retry-After`.
async fn open_as(
    url: &str,
    authorization: Option<&str>,
) -> Result<Socket, (StatusCode, Option<String>)> {
    let mut request = url.into_client_request().expect("request");
    if let Some(value) = authorization {
        request
            .headers_mut()
            .insert(http::header::AUTHORIZATION, value.parse().expect("header"));
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((socket, _)) => Ok(socket),
        Err(WsError::Http(response)) => Err((
            response.status(),
            response
                .headers()
                .get(http::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned),
        )),
        Err(other) => panic!("{url}: {other}"),
    }
}

#[tokio::test]
async fn anonymous_readers_beyond_the_cap_get_503_and_a_leaving_one_frees_its_place() {
    let hub = Hub::new(HubConfig {
        anonymous_readers: 2,
        ..HubConfig::default()
    });
    let state = AppState {
        hub: hub.clone(),
        operations: Arc::new(MemoryOperations::new()),
        auth: Arc::new(Auth::new("ws-token")),
        shop_url: None,
        breaker_inbox: PushInbox::new(RateLimit::new(0.01, 10.0)),
        simulations: Default::default(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let served = tokio::spawn(async move {
        let _ = axum::serve(listener, router(state)).await;
    });
    let url = format!("ws://{addr}/ws");
    let first = open_as(&url, None).await.expect("first anonymous reader");
    let _second = open_as(&url, None).await.expect("second anonymous reader");
    let (status, retry_after) = open_as(&url, None).await.expect_err("a third is refused");
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(retry_after.is_some(), "503 says when to try again");
    let _holder = open_as(&url, Some("Bearer ws-token"))
        .await
        .expect("the token's holder is served past the cap");
    let (status, _) = open_as(&url, Some("Bearer wrong"))
        .await
        .expect_err("a wrong token is refused, not served as anonymous");
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    drop(first);
    while hub.anonymous_readers() > 1 {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let _third = open_as(&url, None)
        .await
        .expect("a place freed by a leaving reader is taken");
    served.abort();
}
