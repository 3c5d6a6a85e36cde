//! Where the controller waits for its load workers: a listener at `[load] workers_listen` that takes a WebSocket
//! at `/workers` with the token, the worker's hello within [`HELLO_TIMEOUT`], and keeps it as one of the
//! `[load] workers` it wants — refusing, with the reason as its last message, a worker of another version, a
//! second worker of the same name (duplicate) and one more than it wants (late). Each connection's task routes
//! what its worker sends to the run in progress, and says so when the worker is gone.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, http};

use super::wire::{
    FromWorker, MAX_CAPACITY, MAX_MESSAGE_BYTES, MAX_NAME_BYTES, ToWorker, VERSION, WORKERS_PATH,
};
use crate::task::OwnedTask;

/// How long a connection may take to upgrade and say hello.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// What a worker's connection brings the run in progress.
#[derive(Debug)]
pub(super) enum Arrived {
    Message(FromWorker),
    /// It sent something that is not a message of the protocol (the connection is closed).
    Invalid(String),
    /// The connection ended.
    Gone,
}

/// One worker as the dashboard shows it: connected, or lost from the run in progress (or the last one).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerStatus {
    pub name: String,
    /// Users it said it can hold.
    pub capacity: u32,
    /// Users of the run in progress it drives (0 between runs).
    pub users: u32,
    /// Requests in the last second it sent.
    pub requests_per_second: u64,
    /// Seconds its last record is behind the controller's clock of the run (0 between runs).
    pub lag_seconds: u64,
    /// Lost mid-run: the first second of the run its `users` are missing from (`None`: connected).
    pub lost_from_second: Option<u64>,
}

/// The pool as the dashboard shows it: where it waits, how many workers it wants, and every worker — the
/// connected ones by name, then the ones lost from the run in progress (kept until the next run begins, also
/// when a worker of the same name connects again: its users of this run stay missing).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkersView {
    /// The URL workers connect to ([`WorkerPool::url`]).
    pub url: String,
    pub wanted: usize,
    pub connected: usize,
    pub workers: Vec<WorkerStatus>,
}

struct Connected {
    id: u64,
    to_worker: mpsc::UnboundedSender<ToWorker>,
    status: WorkerStatus,
}

#[derive(Default)]
struct PoolState {
    connected: BTreeMap<String, Connected>,
    next_id: u64,
    /// Workers lost from the run in progress (or the last one), by name.
    lost: BTreeMap<String, WorkerStatus>,
    /// Where what workers send goes while a run drives them.
    run: Option<mpsc::UnboundedSender<(String, Arrived)>>,
}

struct Inner {
    wanted: usize,
    token: String,
    /// Wrong tokens per client address (`docs/wire.md`, *Wrong tokens*).
    throttle: serving::throttle::TokenThrottle,
    address: SocketAddr,
    state: Mutex<PoolState>,
    /// The number of connected workers, for whoever waits for them.
    count: watch::Sender<usize>,
}

/// The controller's load workers; cheap to clone. Dropping the last clone stops listening (the connections end
/// with their tasks).
#[derive(Clone)]
pub struct WorkerPool {
    inner: Arc<Inner>,
    _listener: Arc<OwnedTask<()>>,
}

impl std::fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerPool")
            .field("address", &self.inner.address)
            .field("wanted", &self.inner.wanted)
            .finish()
    }
}

/// A snapshot of one connected worker for a run.
#[derive(Debug, Clone)]
pub(super) struct Member {
    pub name: String,
    pub capacity: u32,
    pub to_worker: mpsc::UnboundedSender<ToWorker>,
}

impl WorkerPool {
    /// Listens at `listen` for `wanted` workers that present `token`.
    pub async fn listen(listen: SocketAddr, wanted: usize, token: String) -> std::io::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let address = listener.local_addr()?;
        let inner = Arc::new(Inner {
            wanted,
            token,
            throttle: serving::throttle::TokenThrottle::default(),
            address,
            state: Mutex::new(PoolState::default()),
            count: watch::channel(0).0,
        });
        let accepting = {
            let inner = Arc::downgrade(&inner);
            OwnedTask::spawn(async move {
                let mut connections = tokio::task::JoinSet::new();
                loop {
                    tokio::select! {
                        accepted = listener.accept() => {
                            let Ok((stream, peer)) = accepted else { continue };
                            let Some(inner) = inner.upgrade() else { return };
                            connections.spawn(serve(inner, stream, peer.ip()));
                        }
                        Some(_) = connections.join_next() => {}
                    }
                }
            })
        };
        Ok(WorkerPool {
            inner,
            _listener: Arc::new(accepting),
        })
    }

    /// The address it listens at.
    pub fn address(&self) -> SocketAddr {
        self.inner.address
    }

    /// The URL workers connect to (`ws://ADDR:PORT/workers`; an unspecified address is given as this host's
    /// loopback, which workers elsewhere replace with an address they reach it at).
    pub fn url(&self) -> String {
        let mut address = self.inner.address;
        if address.ip().is_unspecified() {
            address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        format!("ws://{address}{WORKERS_PATH}")
    }

    /// How many workers a run needs.
    pub fn wanted(&self) -> usize {
        self.inner.wanted
    }

    /// The connected workers, by name.
    pub fn statuses(&self) -> Vec<WorkerStatus> {
        let state = self.inner.state.lock();
        state.connected.values().map(|c| c.status.clone()).collect()
    }

    /// Every worker as the dashboard shows it (see [`WorkersView`]).
    pub fn view(&self) -> WorkersView {
        let state = self.inner.state.lock();
        WorkersView {
            url: self.url(),
            wanted: self.inner.wanted,
            connected: state.connected.len(),
            workers: (state.connected.values().map(|c| c.status.clone()))
                .chain(state.lost.values().cloned())
                .collect(),
        }
    }

    /// Waits at most `bound` until every wanted worker is connected. The error names how many are missing and
    /// which are there.
    pub async fn wait_for_all(&self, bound: Duration) -> Result<(), MissingWorkers> {
        let mut count = self.inner.count.subscribe();
        let wanted = self.inner.wanted;
        let all = tokio::time::timeout(bound, count.wait_for(|count| *count >= wanted)).await;
        if matches!(all, Ok(Ok(_))) {
            return Ok(());
        }
        let connected: Vec<String> = self.statuses().into_iter().map(|s| s.name).collect();
        Err(MissingWorkers {
            url: self.url(),
            wanted,
            waited: bound,
            missing: (connected.len() + 1..=wanted)
                .map(|slot| format!("worker {slot} of {wanted}"))
                .collect(),
            connected,
        })
    }

    /// The connected workers, by name, and where what they send goes from now until [`WorkerPool::end_run`].
    pub(super) fn begin_run(&self) -> (Vec<Member>, mpsc::UnboundedReceiver<(String, Arrived)>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut state = self.inner.state.lock();
        state.run = Some(sender);
        state.lost.clear();
        let members = (state.connected.iter())
            .map(|(name, connected)| Member {
                name: name.clone(),
                capacity: connected.status.capacity,
                to_worker: connected.to_worker.clone(),
            })
            .collect();
        (members, receiver)
    }

    /// What workers send goes nowhere again; every status back to between runs.
    pub(super) fn end_run(&self) {
        let mut state = self.inner.state.lock();
        state.run = None;
        for connected in state.connected.values_mut() {
            connected.status.users = 0;
            connected.status.requests_per_second = 0;
            connected.status.lag_seconds = 0;
        }
    }

    /// Changes worker `name`'s status, if it is still connected.
    pub(super) fn update(&self, name: &str, change: impl FnOnce(&mut WorkerStatus)) {
        if let Some(connected) = self.inner.state.lock().connected.get_mut(name) {
            change(&mut connected.status);
        }
    }

    /// Worker `name` (of `capacity`) was lost from the run in progress: its `users` missing from `from_second`.
    pub(super) fn mark_lost(&self, name: &str, capacity: u32, users: u32, from_second: u64) {
        self.inner.state.lock().lost.insert(
            name.to_owned(),
            WorkerStatus {
                name: name.to_owned(),
                capacity,
                users,
                requests_per_second: 0,
                lag_seconds: 0,
                lost_from_second: Some(from_second),
            },
        );
    }

    /// Tells every connected worker the experiment is over.
    pub fn finish(&self) {
        for connected in self.inner.state.lock().connected.values() {
            let _ = connected.to_worker.send(ToWorker::Finished);
        }
    }

    /// [`WorkerPool::finish`], then waits at most `bound` until every connection has closed: dropping the pool
    /// right after would cut the connections before each worker heard it (and it would exit with an error).
    pub async fn finish_and_wait(&self, bound: Duration) {
        self.finish();
        let mut count = self.inner.count.subscribe();
        let _ = tokio::time::timeout(bound, count.wait_for(|count| *count == 0)).await;
    }
}

/// Not every wanted worker connected in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "load.workers: {} of {wanted} workers connected to {url} within {waited:?} (connected: {}); missing: {}",
    connected.len(),
    if connected.is_empty() { "none".to_owned() } else { connected.join(", ") },
    missing.join(", ")
)]
pub struct MissingWorkers {
    pub url: String,
    pub wanted: usize,
    pub waited: Duration,
    pub connected: Vec<String>,
    pub missing: Vec<String>,
}

type Socket = tokio_tungstenite::WebSocketStream<TcpStream>;

/// Serves one connection: handshake, hello, then its messages until it ends.
async fn serve(inner: Arc<Inner>, stream: TcpStream, peer: std::net::IpAddr) {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let checker = Arc::clone(&inner);
    // tungstenite's upgrade callback returns its `ErrorResponse` unboxed.
    #[allow(clippy::result_large_err)]
    let check = move |request: &Request, response: Response| {
        check_request(request, &checker, peer).map(|()| response)
    };
    let upgrade = tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config));
    let Ok(Ok(mut socket)) = tokio::time::timeout(HELLO_TIMEOUT, upgrade).await else {
        return;
    };
    let hello = match tokio::time::timeout(HELLO_TIMEOUT, next_message(&mut socket)).await {
        Ok(Some(Ok(FromWorker::Hello {
            name,
            version,
            capacity,
        }))) => (name, version, capacity),
        Ok(Some(Ok(_))) => {
            return refuse(&mut socket, "the first message must be `hello`".to_owned()).await;
        }
        Ok(Some(Err(reason))) => return refuse(&mut socket, reason).await,
        Ok(None) => return,
        Err(_) => return refuse(&mut socket, format!("no hello within {HELLO_TIMEOUT:?}")).await,
    };
    let (name, version, capacity) = hello;
    let (to_worker, mut outgoing) = mpsc::unbounded_channel();
    let id = match admit(&inner, &name, &version, capacity, to_worker) {
        Ok(id) => id,
        Err(reason) => return refuse(&mut socket, reason).await,
    };
    tracing::info!(worker = %name, capacity, "load worker connected");
    let ended = relay(&inner, &name, &mut socket, &mut outgoing).await;
    {
        let mut state = inner.state.lock();
        if state.connected.get(&name).is_some_and(|c| c.id == id) {
            state.connected.remove(&name);
        }
        if let Some(run) = &state.run {
            let _ = run.send((name.clone(), Arrived::Gone));
        }
        inner.count.send_replace(state.connected.len());
    }
    tracing::warn!(worker = %name, "load worker disconnected: {ended}");
    let _ = socket.close(None).await;
}

/// The upgrade request's path and token (the refusal in tungstenite's own, unboxed, response type). A wrong token
/// is counted against `peer`; past the allowance the answer is 429 with `Retry-After`, the right token always
/// passes.
#[allow(clippy::result_large_err)]
fn check_request(
    request: &Request,
    inner: &Inner,
    peer: std::net::IpAddr,
) -> Result<(), ErrorResponse> {
    let refuse = |status: http::StatusCode, why: &str| {
        let mut response = ErrorResponse::new(Some(why.to_owned()));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != WORKERS_PATH {
        return Err(refuse(
            http::StatusCode::NOT_FOUND,
            "load workers connect to /workers",
        ));
    }
    let given = (request.headers().get(http::header::AUTHORIZATION))
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    let token = inner.token.as_bytes();
    match given {
        Some(given) => {
            let right = constant_time_eq(given.as_bytes(), token);
            match (inner.throttle).bearer(peer, right, tokio::time::Instant::now()) {
                Ok(()) => Ok(()),
                Err(serving::throttle::Refused::Wrong) => {
                    Err(refuse(http::StatusCode::UNAUTHORIZED, "wrong token"))
                }
                Err(serving::throttle::Refused::Throttled { retry_after }) => {
                    let seconds = serving::throttle::retry_after_seconds(retry_after);
                    let mut response = refuse(
                        http::StatusCode::TOO_MANY_REQUESTS,
                        &format!(
                            "too many wrong tokens from this address: try again in {seconds} s"
                        ),
                    );
                    response
                        .headers_mut()
                        .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
                    Err(response)
                }
            }
        }
        None => Err(refuse(
            http::StatusCode::UNAUTHORIZED,
            "the token is required (Authorization: Bearer …)",
        )),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Takes the worker as one of the wanted, or says why not.
fn admit(
    inner: &Inner,
    name: &str,
    version: &str,
    capacity: u32,
    to_worker: mpsc::UnboundedSender<ToWorker>,
) -> Result<u64, String> {
    if version != VERSION {
        return Err(format!(
            "version {version} differs from the controller's {VERSION}"
        ));
    }
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(format!(
            "name: must be 1 to {MAX_NAME_BYTES} bytes without control characters"
        ));
    }
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(format!(
            "capacity: {capacity} is not between 1 and {MAX_CAPACITY}"
        ));
    }
    let mut state = inner.state.lock();
    if state.connected.contains_key(name) {
        return Err(format!("duplicate: a worker named `{name}` is connected"));
    }
    if state.connected.len() >= inner.wanted {
        return Err(format!(
            "late: the controller has the {} worker(s) it waits for",
            inner.wanted
        ));
    }
    let _ = to_worker.send(ToWorker::Welcome);
    state.next_id += 1;
    let id = state.next_id;
    state.connected.insert(
        name.to_owned(),
        Connected {
            id,
            to_worker,
            status: WorkerStatus {
                name: name.to_owned(),
                capacity,
                users: 0,
                requests_per_second: 0,
                lag_seconds: 0,
                lost_from_second: None,
            },
        },
    );
    inner.count.send_replace(state.connected.len());
    Ok(id)
}

/// Sends the refusal as the last message and closes.
async fn refuse(socket: &mut Socket, reason: String) {
    tracing::warn!("load worker refused: {reason}");
    if let Ok(text) = serde_json::to_string(&ToWorker::Refused { reason }) {
        let _ = tokio::time::timeout(HELLO_TIMEOUT, socket.send(Message::text(text))).await;
    }
    let _ = tokio::time::timeout(HELLO_TIMEOUT, socket.close(None)).await;
}

/// The next protocol message (`None`: the connection ended).
async fn next_message(socket: &mut Socket) -> Option<Result<FromWorker, String>> {
    loop {
        match socket.next().await? {
            Ok(Message::Text(text)) => {
                return Some(
                    serde_json::from_str(&text)
                        .map_err(|error| format!("not a worker message: {error}")),
                );
            }
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => continue,
            Ok(Message::Binary(_)) => {
                return Some(Err(
                    "binary messages are not part of the protocol".to_owned()
                ));
            }
            Ok(Message::Close(_)) | Err(_) => return None,
        }
    }
}

/// Relays between the worker and the run in progress until the connection ends; returns why it ended.
async fn relay(
    inner: &Inner,
    name: &str,
    socket: &mut Socket,
    outgoing: &mut mpsc::UnboundedReceiver<ToWorker>,
) -> String {
    let mut last_finish = None::<Instant>;
    loop {
        tokio::select! {
            message = outgoing.recv() => {
                let Some(message) = message else { return "the pool closed".to_owned() };
                let finished = matches!(message, ToWorker::Finished);
                let Ok(text) = serde_json::to_string(&message) else { continue };
                if socket.send(Message::text(text)).await.is_err() {
                    return "sending failed".to_owned();
                }
                if finished {
                    last_finish = Some(Instant::now());
                    let _ = socket.close(None).await;
                }
            }
            arrived = next_message(socket) => {
                let arrived = match arrived {
                    None => return match last_finish {
                        Some(_) => "the experiment is over".to_owned(),
                        None => "the connection closed".to_owned(),
                    },
                    Some(Ok(FromWorker::Hello { .. })) => Arrived::Invalid("a second hello".to_owned()),
                    Some(Ok(message)) => Arrived::Message(message),
                    Some(Err(reason)) => Arrived::Invalid(reason),
                };
                let invalid = match &arrived {
                    Arrived::Invalid(reason) => Some(reason.clone()),
                    _ => None,
                };
                if let Some(run) = &inner.state.lock().run {
                    let _ = run.send((name.to_owned(), arrived));
                }
                if let Some(reason) = invalid {
                    return reason;
                }
            }
        }
    }
}
