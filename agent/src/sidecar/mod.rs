//! The sidecar: a reverse proxy in front of one HTTP/1.1 service, with the agent deciding each request's fate, and
//! the control API on a separate (loopback by default) listener.
//!
//! The proxy path is the sidecar's own lean HTTP/1.1 forwarder ([`connection`]): heads are parsed in place and
//! rewritten ([`head`]), bodies are forwarded byte for byte with their end tracked ([`framing`]), and each client
//! connection drives its own keep-alive upstream connection, parked per thread between client connections
//! ([`upstream`]). A general HTTP library would decode and re-encode every message on both sides; on this path
//! that cost more than everything else together (see `agent/BENCHMARKS.md`). How each fault kind looks on the
//! wire is described in [`connection`].

mod connection;
pub mod framing;
pub mod head;
mod relay;
pub mod upstream;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroUsize;
use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::routing::get;
use tokio::net::{TcpListener, TcpStream};

use crate::agent::Agent;
use connection::Shared;
pub use connection::{HEADER_READ_TIMEOUT, KEEP_ALIVE_TIMEOUT};
use upstream::Upstream;

/// Failure to start the sidecar.
#[derive(Debug, thiserror::Error)]
pub enum SidecarError {
    #[error(transparent)]
    Upstream(#[from] upstream::InvalidUpstream),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: io::Error,
    },
}

/// A bound sidecar: the proxy listener and the control listener.
#[derive(Debug)]
pub struct Sidecar {
    shared: Arc<Shared>,
    proxy_listener: TcpListener,
    control_listener: TcpListener,
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
            shared: Arc::new(Shared { agent, upstream }),
            proxy_listener,
            control_listener,
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
    ///
    /// One acceptor on the calling runtime hands each new connection to the thread serving the fewest. (Threads
    /// accepting on a shared listener do not spread: the first one awake takes a whole burst of connections, and
    /// the sidecar ends up on one core.)
    /// Returns when a proxy thread or the control server fails.
    pub async fn serve_threaded(self, threads: NonZeroUsize) -> io::Result<()> {
        let (failed_sender, mut failed) = tokio::sync::mpsc::unbounded_channel::<io::Error>();
        let mut workers = Vec::with_capacity(threads.get());
        for index in 0..threads.get() {
            let (handoff, mut accepted) = tokio::sync::mpsc::unbounded_channel::<Accepted>();
            let live = Arc::new(AtomicUsize::new(0));
            let shared = self.shared.clone();
            let failed_sender = failed_sender.clone();
            let thread_live = live.clone();
            std::thread::Builder::new()
                .name(format!("sidecar-proxy-{index}"))
                .spawn(move || {
                    // Only the IO and time drivers: `enable_all` would add the signal and process drivers, whose
                    // bookkeeping runs at every park.
                    let served = tokio::runtime::Builder::new_current_thread()
                        .enable_io()
                        .enable_time()
                        .build()
                        .map(|runtime| {
                            runtime.block_on(async move {
                                while let Some(Accepted { stream, client_ip }) =
                                    accepted.recv().await
                                {
                                    let guard = LiveConnection(thread_live.clone());
                                    match TcpStream::from_std(stream) {
                                        Ok(stream) => {
                                            let shared = shared.clone();
                                            tokio::spawn(async move {
                                                connection::serve(stream, client_ip, shared).await;
                                                drop(guard);
                                            });
                                        }
                                        Err(error) => {
                                            tracing::warn!(%error, "cannot adopt a connection")
                                        }
                                    }
                                }
                            })
                        });
                    if let Err(error) = served {
                        let _ = failed_sender.send(error);
                    }
                })?;
            workers.push(Worker { handoff, live });
        }
        drop(failed_sender);
        let control = serving::serve(
            self.control_listener,
            control_router(&self.shared.agent),
            HEADER_READ_TIMEOUT,
            std::future::pending(),
        );
        tokio::select! {
            served = control => served,
            error = failed.recv() => Err(error.unwrap_or_else(|| io::Error::other("every proxy thread ended"))),
            error = hand_out(self.proxy_listener, &workers) => Err(error),
        }
    }

    /// Serves both listeners on the current runtime until an accept loop fails for good.
    pub async fn serve(self) -> io::Result<()> {
        let control = serving::serve(
            self.control_listener,
            control_router(&self.shared.agent),
            HEADER_READ_TIMEOUT,
            std::future::pending(),
        );
        tokio::try_join!(control, serve_proxy(self.proxy_listener, self.shared))?;
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
    crate::fault_api::router(agent.clone()).route(
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

/// A connection accepted by [`hand_out`], on its way to a proxy thread.
struct Accepted {
    stream: std::net::TcpStream,
    client_ip: IpAddr,
}

/// A proxy thread as the acceptor sees it.
struct Worker {
    handoff: tokio::sync::mpsc::UnboundedSender<Accepted>,
    /// Connections the thread is serving.
    live: Arc<AtomicUsize>,
}

/// Counts a connection as live on its thread while it exists.
struct LiveConnection(Arc<AtomicUsize>);

impl Drop for LiveConnection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The next connection, with `TCP_NODELAY` set. A failed accept (out of file descriptors and the like) is logged
/// and retried after a pause instead of spinning.
async fn accept(listener: &TcpListener) -> (TcpStream, SocketAddr) {
    loop {
        match listener.accept().await {
            Ok((stream, address)) => {
                let _ = stream.set_nodelay(true);
                return (stream, address);
            }
            Err(error) => {
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Accepts connections and gives each to the worker serving the fewest. Returns only if a worker is gone.
async fn hand_out(listener: TcpListener, workers: &[Worker]) -> io::Error {
    loop {
        let (stream, client_address) = accept(&listener).await;
        let stream = match stream.into_std() {
            Ok(stream) => stream,
            Err(error) => {
                tracing::warn!(%error, "cannot hand a connection over");
                continue;
            }
        };
        let Some(worker) = workers
            .iter()
            .min_by_key(|worker| worker.live.load(Ordering::Relaxed))
        else {
            return io::Error::other("the sidecar has no proxy thread");
        };
        worker.live.fetch_add(1, Ordering::Relaxed);
        let accepted = Accepted {
            stream,
            client_ip: client_address.ip(),
        };
        if worker.handoff.send(accepted).is_err() {
            return io::Error::other("a proxy thread ended");
        }
    }
}

async fn serve_proxy(listener: TcpListener, shared: Arc<Shared>) -> io::Result<()> {
    loop {
        let (stream, client_address) = accept(&listener).await;
        tokio::spawn(connection::serve(
            stream,
            client_address.ip(),
            shared.clone(),
        ));
    }
}
