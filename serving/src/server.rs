//! Serving an axum router with a bound on slow clients: a connection that has not sent a whole request head
//! within the head-read timeout is closed (hyper's `header_read_timeout`), so a client trickling a header byte
//! every few seconds cannot hold a connection — and its task and descriptor — for minutes. The dashboard, every
//! service and the agent's control port serve through [`serve`] with [`HEADER_READ_TIMEOUT`], the sidecar's own
//! forwarder applies the same constant (answering 408). `axum::serve` sets no timer, so hyper enforced none there.
//!
//! Every request carries its client's address as axum's `ConnectInfo<SocketAddr>` extension (what
//! [`crate::throttle`] counts wrong tokens by).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::response::Response;
use axum::routing::future::RouteFuture;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// How long a client may take to send a request head (every server of the stack). hyper arms it whenever it
/// waits for a head, so an idle keep-alive connection is closed after it too.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the stack's own pooled clients keep an idle connection: shorter than [`HEADER_READ_TIMEOUT`], so
/// they drop it before the server closes it under a request being sent.
pub const CLIENT_IDLE_TIMEOUT: Duration = Duration::from_secs(20);

/// Bounds of a configured head-read timeout.
pub const HEADER_READ_TIMEOUT_RANGE: (Duration, Duration) =
    (Duration::from_millis(10), Duration::from_secs(600));

/// A configured head-read timeout outside [`HEADER_READ_TIMEOUT_RANGE`]; `Display` says the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{timeout:?} is outside {min:?}..={max:?}", min = HEADER_READ_TIMEOUT_RANGE.0, max = HEADER_READ_TIMEOUT_RANGE.1)]
pub struct HeadReadTimeoutOutOfRange {
    /// The refused timeout.
    pub timeout: Duration,
}

/// Checks a configured head-read timeout; the error says the bounds.
pub fn check_header_read_timeout(timeout: Duration) -> Result<(), HeadReadTimeoutOutOfRange> {
    let (min, max) = HEADER_READ_TIMEOUT_RANGE;
    if (min..=max).contains(&timeout) {
        Ok(())
    } else {
        Err(HeadReadTimeoutOutOfRange { timeout })
    }
}

/// Serves `router` on `listener` (HTTP/1.1 and HTTP/2, websocket upgrades) until `shutdown` completes, then
/// waits for the connections in flight to finish (callers bound that wait). Every connection must send each
/// request head within `head_timeout`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    head_timeout: Duration,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let graceful = GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(head_timeout);
    builder.http2().enable_connect_protocol();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) if is_connection_error(&error) => continue,
            Err(error) => {
                // Out of descriptors, most likely: wait a little instead of spinning (axum::serve does the same).
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(WithPeer {
            router: router.clone(),
            peer,
        });
        let connection = builder
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::trace!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The router of one connection, putting the client's address into each request's extensions.
#[derive(Clone)]
struct WithPeer {
    router: Router,
    peer: SocketAddr,
}

impl<B> tower_service::Service<http::Request<B>> for WithPeer
where
    Router: tower_service::Service<
            http::Request<B>,
            Response = Response,
            Error = Infallible,
            Future = RouteFuture<Infallible>,
        >,
{
    type Response = Response;
    type Error = Infallible;
    type Future = RouteFuture<Infallible>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        tower_service::Service::<http::Request<B>>::poll_ready(&mut self.router, cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        request.extensions_mut().insert(ConnectInfo(self.peer));
        self.router.call(request)
    }
}

fn is_connection_error(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
