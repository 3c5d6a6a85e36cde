//! Upstream connections of the sidecar: opened on demand, driven inside the task of the client connection that
//! uses them, and parked in a small per-thread idle pool between client connections.
//!
//! Why not hyper-util's pooled client: it drives every upstream connection in a task of its own and checks a
//! connection out of a locked map for every request. On this path that bookkeeping cost more CPU than the proxying
//! itself (see `agent/BENCHMARKS.md`). Here a client connection keeps the upstream connection it got for its whole
//! life (HTTP/1.1 carries one request at a time per connection anyway), so a keep-alive client costs no pool
//! operation per request, and the upstream socket is polled by the same task that waits for its answers.
//!
//! When the client connection ends, an upstream connection that is idle and healthy is parked in the thread's pool
//! (at most [`MAX_IDLE_PER_THREAD`], dropped after [`IDLE_TIMEOUT`]) for the next client connection. Parked
//! connections are not polled; one the upstream closed meanwhile is noticed at checkout and replaced, and a request
//! that could not be written on a reused connection is retried once on a fresh one.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Context;
use std::time::{Duration, Instant};

use futures::task::noop_waker_ref;
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use tokio::net::TcpStream;

/// Most idle upstream connections one thread keeps.
pub const MAX_IDLE_PER_THREAD: usize = 256;
/// How long an idle upstream connection is kept.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The task half of an upstream connection: reads and writes its socket. Boxed: hyper's connection state is large
/// and moves between the slot, the task and the pool.
pub(crate) type Driver = Box<http1::Connection<TokioIo<TcpStream>, Incoming>>;

struct Parked {
    sender: SendRequest<Incoming>,
    driver: Driver,
    since: Instant,
}

thread_local! {
    static IDLE: RefCell<Vec<Parked>> = const { RefCell::new(Vec::new()) };
}

/// A connection the upstream closed, or one idle for too long, is not worth reusing.
fn still_usable(parked: &mut Parked, now: Instant) -> bool {
    if now.duration_since(parked.since) > IDLE_TIMEOUT || parked.sender.is_closed() {
        return false;
    }
    // Poll the driver once without a waker: a closed socket makes it finish now.
    let mut context = Context::from_waker(noop_waker_ref());
    Pin::new(&mut *parked.driver)
        .poll(&mut context)
        .is_pending()
        && !parked.sender.is_closed()
}

fn take_parked() -> Option<(SendRequest<Incoming>, Driver)> {
    let now = Instant::now();
    IDLE.with_borrow_mut(|idle| {
        while let Some(mut parked) = idle.pop() {
            if still_usable(&mut parked, now) {
                return Some((parked.sender, parked.driver));
            }
        }
        None
    })
}

fn park(sender: SendRequest<Incoming>, driver: Driver) {
    let now = Instant::now();
    IDLE.with_borrow_mut(|idle| {
        idle.retain(|parked| now.duration_since(parked.since) <= IDLE_TIMEOUT);
        if idle.len() < MAX_IDLE_PER_THREAD {
            idle.push(Parked {
                sender,
                driver,
                since: now,
            });
        }
    });
}

#[derive(Default)]
struct SlotState {
    /// The request half of the client connection's upstream connection, between requests.
    sender: Option<SendRequest<Incoming>>,
    /// A driver installed by the request path, not yet adopted by the connection task.
    new_driver: Option<Driver>,
}

/// The upstream connection of one client connection, shared by its request path (which opens and uses it) and its
/// task (which drives it).
#[derive(Clone, Default)]
pub(crate) struct UpstreamSlot(Arc<Mutex<SlotState>>);

impl UpstreamSlot {
    /// The connection for the next request: this client connection's own, a parked one, or a new one to
    /// `authority`. `fresh` skips reuse. Returns the sender, ready, and whether the connection was reused.
    pub(crate) async fn checkout(
        &self,
        authority: &str,
        fresh: bool,
    ) -> io::Result<(SendRequest<Incoming>, bool)> {
        loop {
            let own = if fresh {
                None
            } else {
                self.0.lock().sender.take()
            };
            let reused = match own {
                Some(sender) => Some(sender),
                None if !fresh => take_parked().map(|(sender, driver)| {
                    self.install(driver);
                    sender
                }),
                None => None,
            };
            match reused {
                Some(mut sender) => {
                    if sender.ready().await.is_ok() {
                        return Ok((sender, true));
                    }
                    // Closed under us: try the next one (every pass consumes a connection, the last pass connects).
                }
                None => {
                    // Boxed so the rare connect path does not bloat every request's future.
                    let (mut sender, driver) = Box::pin(connect(authority)).await?;
                    self.install(driver);
                    sender.ready().await.map_err(io::Error::other)?;
                    return Ok((sender, false));
                }
            }
        }
    }

    /// Gives the sender back after a request, for the next request of the same client connection.
    pub(crate) fn checkin(&self, sender: SendRequest<Incoming>) {
        self.0.lock().sender = Some(sender);
    }

    fn install(&self, driver: Driver) {
        self.0.lock().new_driver = Some(driver);
    }
}

async fn connect(authority: &str) -> io::Result<(SendRequest<Incoming>, Driver)> {
    let stream = TcpStream::connect(authority).await?;
    stream.set_nodelay(true)?;
    let (sender, driver) = http1::Builder::new()
        .handshake(TokioIo::new(stream))
        .await
        .map_err(io::Error::other)?;
    Ok((sender, Box::new(driver)))
}

/// Drives a client connection future together with the upstream connections its requests open, then parks the
/// upstream connection if it is idle.
pub(crate) async fn drive_with_upstream<F: Future>(
    client_connection: F,
    slot: UpstreamSlot,
) -> F::Output {
    let mut client_connection = std::pin::pin!(client_connection);
    let mut current: Option<Driver> = None;
    let mut retiring: Vec<Driver> = Vec::new();
    let output = std::future::poll_fn(|context| {
        let polled = client_connection.as_mut().poll(context);
        let adopted = {
            let mut state = slot.0.lock();
            if state.new_driver.is_some() {
                state.new_driver.take()
            } else {
                None
            }
        };
        if let Some(driver) = adopted {
            if let Some(previous) = current.replace(driver) {
                retiring.push(previous);
            }
        }
        if let Some(driver) = current.as_mut() {
            if Pin::new(&mut **driver).poll(context).is_ready() {
                current = None;
            }
        }
        retiring.retain_mut(|driver| Pin::new(&mut **driver).poll(context).is_pending());
        polled
    })
    .await;
    let sender = slot.0.lock().sender.take();
    if let (Some(sender), Some(driver)) = (sender, current) {
        if sender.is_ready() {
            park(sender, driver);
        }
    }
    output
}
