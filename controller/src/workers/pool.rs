//! Where the controller waits for its load workers: a listener at `[load] workers_listen` that takes a WebSocket
//! at `/workers` with the token, the worker's hello within [`HELLO_TIMEOUT`], and keeps it as one of the
//! `[load] workers` it wants — refusing, with the reason as its last message, a worker of another version, a
//! second worker of the same name (duplicate) and one more than it wants (late). Each connection's task routes
//! what its worker sends to the run in progress, and says so when the worker is gone.

mod connection;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use super::wire::{FromWorker, ToWorker, WORKERS_PATH};
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
                            connections.spawn(inner.serve(stream, peer.ip()));
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
