//! Loopback helpers shared by the socket tests: a small upstream server and a client.

#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// Upper bound on any single wait in the socket tests.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Size of the `/big` answer.
pub const BIG_BODY_BYTES: usize = 6 * 1024 * 1024 + 123;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type TestBody = UnsyncBoxBody<Bytes, BoxError>;

/// What the upstream saw and can be told.
#[derive(Debug, Default)]
pub struct UpstreamProbe {
    pub requests: AtomicUsize,
    /// TCP connections the upstream accepted.
    pub connections: AtomicUsize,
    /// `/stream` sends its first chunk, then waits for this before the rest.
    pub release_stream: Notify,
}

/// The byte at `index` of the `/big` body (a pattern that catches reordering and truncation).
pub fn big_byte(index: usize) -> u8 {
    (index % 251) as u8
}

/// Starts the upstream on an ephemeral loopback port:
/// - `/echo`: streams the request body back; reports what it saw in `x-saw-*` headers;
/// - `/status/{code}`: answers `code` with `x-upstream: yes` and body `status {code}`;
/// - `/big`: [`BIG_BODY_BYTES`] bytes with a content length;
/// - `/stream`: chunked; `first` at once, then `second` and `third` after `release_stream`;
/// - `/close`: 200 `bye` with `Connection: close` (the upstream ends the connection);
/// - anything else: 200 `hello`.
pub async fn start_upstream() -> (SocketAddr, Arc<UpstreamProbe>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let probe = Arc::new(UpstreamProbe::default());
    let server_probe = probe.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let probe = server_probe.clone();
            probe.connections.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    upstream_answer(request, probe.clone())
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (address, probe)
}

async fn upstream_answer(
    request: Request<Incoming>,
    probe: Arc<UpstreamProbe>,
) -> Result<Response<TestBody>, Infallible> {
    probe.requests.fetch_add(1, Ordering::SeqCst);
    let path = request.uri().path().to_owned();
    if path == "/echo" {
        let saw = |name: &str| {
            request.headers().get(name).map_or_else(
                || "-".to_owned(),
                |value| value.to_str().unwrap_or("?").to_owned(),
            )
        };
        let builder = Response::builder()
            .header("x-saw-host", saw("host"))
            .header("x-saw-forwarded-for", saw("x-forwarded-for"))
            .header("x-saw-connection", saw("connection"))
            .header("x-saw-hop", saw("x-hop"))
            .header("x-saw-custom", saw("x-custom"))
            .header("x-saw-transfer-encoding", saw("transfer-encoding"))
            .header("x-saw-content-length", saw("content-length"))
            .header("x-saw-query", request.uri().query().unwrap_or("-"));
        let echoed = request.into_body().map_err(BoxError::from).boxed_unsync();
        return Ok(builder.body(echoed).unwrap());
    }
    if let Some(code) = path.strip_prefix("/status/") {
        let status = StatusCode::from_u16(code.parse().unwrap_or(500))
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        return Ok(Response::builder()
            .status(status)
            .header("x-upstream", "yes")
            .body(full(format!("status {code}")))
            .unwrap());
    }
    if path == "/big" {
        let bytes: Vec<u8> = (0..BIG_BODY_BYTES).map(big_byte).collect();
        return Ok(Response::new(full(bytes)));
    }
    if path == "/stream" {
        let (sender, receiver) = futures::channel::mpsc::unbounded::<Bytes>();
        sender
            .unbounded_send(Bytes::from_static(b"first;"))
            .unwrap();
        tokio::spawn(async move {
            probe.release_stream.notified().await;
            let _ = sender.unbounded_send(Bytes::from_static(b"second;"));
            let _ = sender.unbounded_send(Bytes::from_static(b"third"));
        });
        let body = StreamBody::new(receiver.map(|chunk| Ok::<_, BoxError>(Frame::data(chunk))));
        return Ok(Response::new(body.boxed_unsync()));
    }
    if path == "/close" {
        return Ok(Response::builder()
            .header("connection", "close")
            .body(full("bye"))
            .unwrap());
    }
    Ok(Response::new(full("hello")))
}

pub fn full(bytes: impl Into<Bytes>) -> TestBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// A keep-alive HTTP/1.1 client for the tests.
pub fn client() -> Client<HttpConnector, TestBody> {
    Client::builder(TokioExecutor::new()).build(HttpConnector::new())
}

/// Collects a response body, bounded by [`PATIENCE`].
pub async fn read_all(response: Response<Incoming>) -> Bytes {
    tokio::time::timeout(PATIENCE, response.into_body().collect())
        .await
        .expect("body took too long")
        .expect("body failed")
        .to_bytes()
}
