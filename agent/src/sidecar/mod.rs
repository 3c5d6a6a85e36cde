//! The sidecar: a reverse proxy in front of one HTTP/1.1 service, with the agent's fault layer in front of it and
//! the control API on a separate (loopback by default) listener.
//!
//! Each accepted connection is served by hyper's HTTP/1.1 server (keep-alive on) with
//! `FaultService<ProxyService>`; the proxy forwards over keep-alive upstream connections from a per-thread pool,
//! each driven by the task of the client connection using it ([`upstream`]). Bodies stream both ways. See
//! [`proxy`] for header handling.
//!
//! Faults on the wire:
//!
//! - `error`: the status and body go to the client; the upstream never sees the request.
//! - `delay`: the request reaches the upstream after the wait.
//! - `hang`: nothing is written. hyper notices when the client closes its side and drops the request; otherwise
//!   after the hold cap the connection is closed (FIN) without a response.
//! - `reset`: no response; the connection is aborted with a TCP RST (`SO_LINGER` 0), so the client reads
//!   "connection reset by peer".

pub mod proxy;
pub mod stream;
pub mod upstream;

use std::io;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use futures::future::poll_fn;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tower_layer::Layer;
use tower_service::Service;

use crate::Agent;
use crate::inject::AbortReason;
use proxy::{ProxyFactory, Upstream};
use stream::{ResetSwitch, ResettableStream};

/// How long a client may take to send a request head.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The error a request path returns to make hyper drop the client connection without a response.
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by the fault agent ({0:?})")]
pub struct ConnectionDropped(pub AbortReason);

/// Failure to start the sidecar.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error(transparent)]
    Upstream(#[from] proxy::InvalidUpstream),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: io::Error,
    },
}

/// A bound sidecar: the proxy listener and the control listener.
#[derive(Debug)]
pub struct Sidecar {
    agent: Agent,
    proxy_listener: TcpListener,
    control_listener: TcpListener,
    proxies: ProxyFactory,
}

impl Sidecar {
    /// Binds the proxy on `listen` and the control API on `control`, forwarding to `upstream` (`http://host:port`).
    pub async fn bind(
        agent: Agent,
        listen: SocketAddr,
        upstream: &str,
        control: SocketAddr,
    ) -> Result<Self, SidecarError> {
        let upstream = Upstream::parse(upstream)?;
        let proxy_listener = bind(listen).await?;
        let control_listener = bind(control).await?;
        Ok(Sidecar {
            agent,
            proxy_listener,
            control_listener,
            proxies: ProxyFactory::new(upstream),
        })
    }

    /// Where the proxy listens.
    pub fn proxy_address(&self) -> io::Result<SocketAddr> {
        self.proxy_listener.local_addr()
    }

    /// Where the control API listens.
    pub fn control_address(&self) -> io::Result<SocketAddr> {
        self.control_listener.local_addr()
    }

    /// Serves the proxy on `threads` OS threads, each running its own single-threaded tokio runtime with its own
    /// idle upstream pool, and the control API on the calling runtime. A request never changes thread on its way
    /// through (thread-per-core, as Envoy and nginx do), which saves the cross-thread wake-ups a work-stealing
    /// runtime pays between the client connection and the upstream connection.
    /// Returns when a proxy thread or the control server fails.
    pub async fn serve_threaded(self, threads: NonZeroUsize) -> io::Result<()> {
        let proxy_listener = self.proxy_listener.into_std()?;
        let (failed_sender, mut failed) = tokio::sync::mpsc::unbounded_channel::<io::Error>();
        for index in 0..threads.get() {
            let listener = proxy_listener.try_clone()?;
            let agent = self.agent.clone();
            let proxies = self.proxies.clone();
            let failed_sender = failed_sender.clone();
            std::thread::Builder::new()
                .name(format!("sidecar-proxy-{index}"))
                .spawn(move || {
                    let served = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .and_then(|runtime| {
                            runtime.block_on(async move {
                                serve_proxy(TcpListener::from_std(listener)?, agent, proxies).await
                            })
                        });
                    if let Err(error) = served {
                        let _ = failed_sender.send(error);
                    }
                })?;
        }
        drop(failed_sender);
        let control = axum::serve(self.control_listener, control_router(&self.agent));
        tokio::select! {
            served = control => served,
            error = failed.recv() => Err(error.unwrap_or_else(|| io::Error::other("every proxy thread ended"))),
        }
    }

    /// Serves both listeners on the current runtime until an accept loop fails for good.
    pub async fn serve(self) -> io::Result<()> {
        let control = axum::serve(self.control_listener, control_router(&self.agent));
        tokio::try_join!(
            async { control.await },
            serve_proxy(self.proxy_listener, self.agent, self.proxies)
        )?;
        Ok(())
    }
}

async fn bind(address: SocketAddr) -> Result<TcpListener, SidecarError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| SidecarError::Bind { address, source })
}

/// The control router of the sidecar: the agent's `/_agent/...` plus `/metrics`.
pub fn control_router(agent: &Agent) -> Router {
    let metrics_agent = agent.clone();
    agent.control_router().route(
        "/metrics",
        get(move || {
            let agent = metrics_agent.clone();
            async move {
                (
                    [(http::header::CONTENT_TYPE, crate::PROMETHEUS_CONTENT_TYPE)],
                    agent.render_metrics(),
                )
            }
        }),
    )
}

async fn serve_proxy(listener: TcpListener, agent: Agent, proxies: ProxyFactory) -> io::Result<()> {
    let layer = agent.layer();
    loop {
        let (stream, client_address) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let reset = ResetSwitch::default();
        let io = TokioIo::new(ResettableStream::new(stream, reset.clone()));
        let (proxy, upstream_slot) = proxies.for_client(client_address.ip());
        let service = layer.layer(proxy);
        let connection_service = hyper::service::service_fn(move |request| {
            let mut service = service.clone();
            let reset = reset.clone();
            async move {
                poll_fn(|context| service.poll_ready(context))
                    .await
                    .map_err(|never| match never {})?;
                let response = service
                    .call(request)
                    .await
                    .map_err(|never| match never {})?;
                match response.body().abort_reason() {
                    None => Ok(response),
                    Some(reason) => {
                        if reason == AbortReason::Reset {
                            reset.trip();
                        }
                        Err(ConnectionDropped(reason))
                    }
                }
            }
        });
        tokio::spawn(async move {
            let connection = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .keep_alive(true)
                .serve_connection(io, connection_service);
            let served = upstream::drive_with_upstream(connection, upstream_slot).await;
            if let Err(error) = served {
                tracing::debug!(%error, %client_address, "client connection ended with an error");
            }
        });
    }
}
