//! `/ws` over a real socket: a browser page on another origin is refused (403) as the forms refuse it; the
//! dashboard's own page and clients that send no `Origin` are served.

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
