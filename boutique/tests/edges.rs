//! The services' edges against hostile or careless clients: a browser page elsewhere cannot open the read-only
//! streams (`/_breakers/stream`, Payment's `/_agent/stream`).

mod common;

use boutique::ServiceName;
use common::start;
use http::StatusCode;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// Opens `url` with `origin`; `Ok(())` on a 101, else the refusal's status.
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
async fn a_browser_elsewhere_cannot_open_the_streams_a_loopback_page_and_the_controller_can() {
    let stack = start(common::config()).await;
    let streams = [
        format!(
            "ws://{}/_breakers/stream",
            stack.addrs()[&ServiceName::Checkout]
        ),
        format!(
            "ws://{}/_agent/stream",
            stack.addrs()[&ServiceName::Payment]
        ),
    ];
    for url in &streams {
        for origin in [
            "https://evil.example",
            "http://localhost.evil.example",
            "null",
        ] {
            assert_eq!(
                open_with_origin(url, Some(origin)).await,
                Err(StatusCode::FORBIDDEN),
                "{url} from {origin}"
            );
        }
        // The controller (no Origin), the dashboard's page on loopback, the service's own origin.
        let own = url.replace("ws://", "http://");
        let own = own.split('/').take(3).collect::<Vec<_>>().join("/");
        for origin in [None, Some("http://127.0.0.1:8080"), Some(own.as_str())] {
            assert_eq!(
                open_with_origin(url, origin).await,
                Ok(()),
                "{url} from {origin:?}"
            );
        }
    }
    stack.shutdown().await;
}
