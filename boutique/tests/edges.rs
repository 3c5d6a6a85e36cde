//! The services' edges against hostile or careless clients: a browser page elsewhere cannot open the read-only
//! streams (`/_breakers/stream`, Payment's `/_agent/stream`); a client trickling its request head is closed
//! after the head-read timeout (shortened here).

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use boutique::ServiceName;
use common::start;
use http::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// Sends a request head one byte every 100 ms; returns how long the server kept the connection open, or `None`
/// if it was still open when the whole head (and `patience`) had gone by.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn trickle_head(addr: SocketAddr, patience: Duration) -> Option<Duration> {
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = b"GET /_healthz HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let started = Instant::now();
    for byte in head.iter() {
        if socket.write_all(&[*byte]).await.is_err() {
            return Some(started.elapsed());
        }
        let mut buffer = [0u8; 256];
        match tokio::time::timeout(Duration::from_millis(100), socket.read(&mut buffer)).await {
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            // An answer (a 408) before the connection closes.
            Ok(Ok(_)) => {}
            Err(_) => {}
        }
        if started.elapsed() > patience {
            return None;
        }
    }
    None
}

#[tokio::test]
async fn a_client_trickling_its_request_head_is_closed_after_the_head_read_timeout() {
    let mut config = common::raw_config();
    config.head_read_timeout = Duration::from_millis(500);
    let stack = start(config.build().expect("a valid stack config")).await;
    for service in [
        ServiceName::Frontend,
        ServiceName::Checkout,
        ServiceName::Payment,
    ] {
        let addr = stack.addrs()[&service];
        let open_for = trickle_head(addr, Duration::from_secs(5)).await;
        assert!(
            open_for.is_some_and(|open_for| open_for >= Duration::from_millis(500)),
            "{service}: kept open {open_for:?}"
        );
        // A client that sends its head at once is served as before.
        let answer = reqwest::get(format!("http://{addr}/_healthz"))
            .await
            .expect("GET");
        assert!(answer.status().is_success(), "{service}");
    }
    stack.shutdown().await;
}

#[test]
fn a_head_read_timeout_out_of_bounds_is_refused_naming_the_field() {
    for timeout in [Duration::ZERO, Duration::from_secs(3600)] {
        let mut config = common::raw_config();
        config.head_read_timeout = timeout;
        let error = config.build().unwrap_err();
        assert_eq!(error.field, "head_read_timeout", "{error}");
    }
}
