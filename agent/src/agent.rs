//! The agent: the fault table, the per-request decision, leases and their reaper, events and counters.
//!
//! # Order in which faults are checked
//!
//! Active faults are kept sorted by id (byte-wise, ascending). For each request the agent walks them in that order;
//! for every fault whose lease is still running and whose match rule covers the request it makes one draw from the
//! request's random stream ([`crate::rng::RequestRng`]); the first fault whose draw fires is injected and the walk
//! stops. So with two faults on the same route, `a` at 0.5 and `b` at 0.5, `a` fires on 50 % of requests and `b` on
//! 25 %. Name faults so that the one that must win sorts first (`10-…`, `20-…`).
//!
//! # Reproducibility
//!
//! Request number `n` (counted from the agent's start, over every request the layer sees) draws from a stream fixed
//! by `(seed, n)`, so the same seed, the same faults and the same request sequence give the same decisions.
//!
//! # Leases
//!
//! Every fault carries a deadline. The hot path ignores a fault whose deadline has passed, so a fault never fires
//! after its lease even if the reaper is late; the reaper task (spawned on the tokio runtime that creates the agent,
//! or lazily at the first put) removes expired faults and emits `expired`. The reaper holds only a weak reference and
//! ends when the last [`Agent`] clone is dropped. A new agent starts with no faults: nothing is persisted.
//!
//! # A fault's effects end with the fault
//!
//! Every fault carries a release signal, fired when it leaves the table — expiry, delete, replacement or halt.
//! A request a `hang` fault holds is closed at once (as at the hold cap), and a request a `delay` fault holds is
//! sent on to the service at once: no held request outlives its fault. A delay is capped by the hold cap like a
//! hang (`max_hold`), and the table holds at most [`MAX_FAULTS`] faults.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use bytes::Bytes;
use http::Method;
use parking_lot::Mutex;
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::api::{
    AgentEvent, FaultKind, FaultSpec, FaultView, InvalidFault, RemovalReason, validate_fault_id,
};
use crate::config::AgentConfig;
use crate::metrics::Counters;
use crate::rng::RequestRng;

/// Path prefix of the fault API (`fault_api.rs`); requests under it are never faulted nor counted.
pub const FAULT_API_PREFIX: &str = "/_agent/";

/// Most faults an agent holds at once; a put of a new id beyond it is refused naming `id`.
pub const MAX_FAULTS: usize = 256;

/// How many events a slow websocket subscriber may fall behind before it misses some.
const EVENT_BUFFER: usize = 1024;

/// Why a mutation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    InvalidSpec(#[from] InvalidFault),
    #[error("lease: {requested:?} is over the agent's cap of {max:?}")]
    LeaseOverCap { requested: Duration, max: Duration },
    #[error("no active fault with id `{id}`")]
    NotFound { id: String },
    #[error("id: the agent holds {max} faults already; delete one or halt first")]
    TooManyFaults { max: usize },
}

impl AgentError {
    /// The field the error is about, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            AgentError::InvalidSpec(error) => Some(&error.field),
            AgentError::LeaseOverCap { .. } => Some("lease"),
            AgentError::NotFound { .. } | AgentError::TooManyFaults { .. } => Some("id"),
        }
    }
}

/// What [`Agent::put`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct PutOutcome {
    pub view: FaultView,
    /// Whether a fault with the same id was replaced.
    pub replaced: bool,
}

/// What the layer must do to one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Injection {
    Error {
        status: u16,
        body: Bytes,
    },
    /// Held for `hold` at most, and released when `released` fires (the fault ended).
    Hang {
        hold: Duration,
        released: CancellationToken,
    },
    /// Waits `wait` at most, and goes on at once when `released` fires (the fault ended).
    Delay {
        wait: Duration,
        released: CancellationToken,
    },
    Reset,
}

/// One fault in the table.
#[derive(Debug)]
struct ActiveFault {
    id: String,
    spec: FaultSpec,
    /// The `error` body, ready to send without copying.
    error_body: Bytes,
    /// Current lease length in nanoseconds (what a renew without a lease extends by).
    lease_nanos: AtomicU64,
    /// Deadline in nanoseconds since the agent's epoch.
    expires_at_nanos: AtomicU64,
    /// Requests this fault fired on.
    injected: AtomicU64,
    /// Fired when the fault leaves the table: releases every request it holds.
    released: CancellationToken,
}

impl ActiveFault {
    fn is_live(&self, now_nanos: u64) -> bool {
        now_nanos < self.expires_at_nanos.load(Ordering::Relaxed)
    }

    fn view(&self, now_nanos: u64) -> FaultView {
        FaultView {
            id: self.id.clone(),
            fault: self.spec.clone(),
            lease_ms: self.lease_nanos.load(Ordering::Relaxed) / 1_000_000,
            expires_in_ms: self
                .expires_at_nanos
                .load(Ordering::Relaxed)
                .saturating_sub(now_nanos)
                / 1_000_000,
            injected: self.injected.load(Ordering::Relaxed),
        }
    }
}

struct Shared {
    config: AgentConfig,
    /// Zero of the agent's monotonic clock (tokio's, so paused time in tests moves it).
    epoch: Instant,
    /// What the hot path reads: live faults sorted by id. Replaced wholesale after each change of `table`.
    snapshot: ArcSwap<Vec<Arc<ActiveFault>>>,
    /// The authoritative table; held only by mutations, never by the request path.
    table: Mutex<BTreeMap<String, Arc<ActiveFault>>>,
    events: broadcast::Sender<AgentEvent>,
    event_seq: AtomicU64,
    counters: Counters,
    reaper_wake: Arc<Notify>,
    reaper_started: AtomicBool,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Wake the reaper so it sees the agent is gone and ends.
        self.reaper_wake.notify_one();
    }
}

/// The injection agent. Cheap to clone: every clone shares one fault table, reaper, event stream and counters.
#[derive(Clone)]
pub struct Agent {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Agent")
            .field("active_faults", &self.shared.snapshot.load().len())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A new agent with no faults. Inside a tokio runtime the lease reaper starts at once; otherwise at the first
    /// put made inside one.
    pub fn new(config: AgentConfig) -> Self {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let agent = Agent {
            shared: Arc::new(Shared {
                config,
                epoch: Instant::now(),
                snapshot: ArcSwap::from_pointee(Vec::new()),
                table: Mutex::new(BTreeMap::new()),
                events,
                event_seq: AtomicU64::new(0),
                counters: Counters::default(),
                reaper_wake: Arc::new(Notify::new()),
                reaper_started: AtomicBool::new(false),
            }),
        };
        agent.ensure_reaper();
        agent
    }

    /// The settings this agent runs with.
    pub fn config(&self) -> &AgentConfig {
        &self.shared.config
    }

    /// A tower layer that applies this agent's faults to a service.
    pub fn layer(&self) -> crate::inject::FaultLayer {
        crate::inject::FaultLayer::new(self.clone())
    }

    /// The fault API (`/_agent/...`) as an axum router.
    pub fn fault_api_router(&self) -> axum::Router {
        crate::fault_api::router(self.clone())
    }

    /// The counters in Prometheus text format.
    pub fn render_metrics(&self) -> String {
        self.shared
            .counters
            .render(self.shared.snapshot.load().len())
    }

    /// Events (applied, expired, removed) from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<AgentEvent> {
        self.shared.events.subscribe()
    }

    /// Requests a `hang` fault holds right now.
    pub fn requests_held(&self) -> u64 {
        self.shared.counters.requests_held.load(Ordering::Relaxed)
    }

    pub(crate) fn held_gauge(&self) -> Arc<AtomicU64> {
        self.shared.counters.requests_held.clone()
    }

    /// Counts a request marked as a caller's half-open probe ([`crate::PROBE_HEADER`]).
    pub fn record_probe(&self) {
        self.shared
            .counters
            .probes_seen
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Requests marked as a caller's half-open probe so far.
    pub fn probes_seen(&self) -> u64 {
        self.shared.counters.probes_seen.load(Ordering::Relaxed)
    }

    /// Requests seen by the fault layer so far.
    pub fn requests_seen(&self) -> u64 {
        self.shared.counters.requests_seen.load(Ordering::Relaxed)
    }

    /// The active faults, sorted by id (the order they are checked in).
    pub fn faults(&self) -> Vec<FaultView> {
        self.reap_expired();
        let now = self.now_nanos();
        self.shared
            .snapshot
            .load()
            .iter()
            .map(|fault| fault.view(now))
            .collect()
    }

    /// Puts (adds or replaces) fault `id`. A lease over the cap, a delay over the hold cap or a new id beyond
    /// [`MAX_FAULTS`] is refused and nothing changes.
    pub fn put(&self, id: &str, spec: FaultSpec) -> Result<PutOutcome, AgentError> {
        validate_fault_id(id)?;
        let lease = self.checked_lease(spec.lease())?;
        self.check_delay(spec.kind())?;
        self.ensure_reaper();
        let now = self.now_nanos();
        let error_body = match spec.kind() {
            FaultKind::Error {
                body: Some(body), ..
            } => Bytes::from(body.clone()),
            _ => Bytes::new(),
        };
        let fault = Arc::new(ActiveFault {
            id: id.to_owned(),
            spec: spec.clone(),
            error_body,
            lease_nanos: AtomicU64::new(duration_nanos(lease)),
            expires_at_nanos: AtomicU64::new(now.saturating_add(duration_nanos(lease))),
            injected: AtomicU64::new(0),
            released: CancellationToken::new(),
        });
        let view = fault.view(now);
        let replaced = {
            let mut table = self.shared.table.lock();
            if table.len() >= MAX_FAULTS && !table.contains_key(id) {
                return Err(AgentError::TooManyFaults { max: MAX_FAULTS });
            }
            let old = table.insert(id.to_owned(), fault);
            self.publish(&table);
            let replaced = old.is_some();
            if let Some(old) = old {
                old.released.cancel();
            }
            if replaced {
                self.emit(|at_ms, seq| AgentEvent::Removed {
                    id: id.to_owned(),
                    reason: RemovalReason::Replaced,
                    at_ms,
                    seq,
                });
            }
            self.emit(|at_ms, seq| AgentEvent::Applied {
                id: id.to_owned(),
                fault: spec,
                lease_ms: view.lease_ms,
                renewed: false,
                at_ms,
                seq,
            });
            replaced
        };
        self.shared.reaper_wake.notify_one();
        Ok(PutOutcome { view, replaced })
    }

    /// Extends fault `id`'s lease from now, by `lease` or (when `None`) by its current lease length.
    pub fn renew(&self, id: &str, lease: Option<Duration>) -> Result<FaultView, AgentError> {
        let lease = match lease {
            Some(lease) => Some(self.checked_lease(Some(lease))?),
            None => None,
        };
        let now = self.now_nanos();
        let view = {
            let table = self.shared.table.lock();
            let fault = table
                .get(id)
                .filter(|fault| fault.is_live(now))
                .ok_or_else(|| AgentError::NotFound { id: id.to_owned() })?;
            if let Some(lease) = lease {
                fault
                    .lease_nanos
                    .store(duration_nanos(lease), Ordering::Relaxed);
            }
            let lease_nanos = fault.lease_nanos.load(Ordering::Relaxed);
            fault
                .expires_at_nanos
                .store(now.saturating_add(lease_nanos), Ordering::Relaxed);
            let view = fault.view(now);
            self.emit(|at_ms, seq| AgentEvent::Applied {
                id: id.to_owned(),
                fault: fault.spec.clone(),
                lease_ms: view.lease_ms,
                renewed: true,
                at_ms,
                seq,
            });
            view
        };
        self.shared.reaper_wake.notify_one();
        Ok(view)
    }

    /// Removes fault `id`.
    pub fn remove(&self, id: &str) -> Result<(), AgentError> {
        let mut table = self.shared.table.lock();
        let Some(removed) = table.remove(id) else {
            return Err(AgentError::NotFound { id: id.to_owned() });
        };
        self.publish(&table);
        removed.released.cancel();
        self.emit(|at_ms, seq| AgentEvent::Removed {
            id: id.to_owned(),
            reason: RemovalReason::Deleted,
            at_ms,
            seq,
        });
        Ok(())
    }

    /// Clears every fault; returns how many were active.
    pub fn halt(&self) -> usize {
        let mut table = self.shared.table.lock();
        let removed = std::mem::take(&mut *table);
        self.publish(&table);
        for fault in removed.values() {
            fault.released.cancel();
        }
        for id in removed.keys() {
            self.emit(|at_ms, seq| AgentEvent::Removed {
                id: id.clone(),
                reason: RemovalReason::Halt,
                at_ms,
                seq,
            });
        }
        removed.len()
    }

    /// Decides what to do to one request (see the module docs for the order and the draws).
    pub(crate) fn decide(&self, method: &Method, path: &str) -> Option<Injection> {
        if path.starts_with(FAULT_API_PREFIX) {
            return None;
        }
        let request_index = self
            .shared
            .counters
            .requests_seen
            .fetch_add(1, Ordering::Relaxed);
        let snapshot = self.shared.snapshot.load();
        if snapshot.is_empty() {
            return None;
        }
        let now = self.now_nanos();
        let mut rng = RequestRng::new(self.shared.config.seed(), request_index);
        let fault = snapshot.iter().find(|fault| {
            fault.is_live(now)
                && fault.spec.matcher().matches(method.as_str(), path)
                && rng.fires(fault.spec.rate())
        })?;
        fault.injected.fetch_add(1, Ordering::Relaxed);
        self.shared.counters.record_injection(fault.spec.kind());
        Some(match fault.spec.kind() {
            FaultKind::Error { status, .. } => Injection::Error {
                status: status.get(),
                body: fault.error_body.clone(),
            },
            FaultKind::Hang => Injection::Hang {
                hold: self.shared.config.max_hold(),
                released: fault.released.clone(),
            },
            FaultKind::Delay { delay, jitter } => Injection::Delay {
                wait: delay_with_jitter(*delay, *jitter, rng.next_unit())
                    .min(self.shared.config.max_hold()),
                released: fault.released.clone(),
            },
            FaultKind::Reset => Injection::Reset,
        })
    }

    fn checked_lease(&self, requested: Option<Duration>) -> Result<Duration, AgentError> {
        let max = self.shared.config.max_lease();
        match requested {
            None => Ok(self.shared.config.default_lease()),
            Some(requested) if requested > max => Err(AgentError::LeaseOverCap { requested, max }),
            Some(requested) if requested < crate::api::MIN_LEASE => {
                Err(InvalidFault::new("lease", "must be at least 1ms").into())
            }
            Some(requested) => Ok(requested),
        }
    }

    /// A delay (with its whole jitter) longer than the hold cap is refused: it is capped like a hang.
    fn check_delay(&self, kind: &FaultKind) -> Result<(), AgentError> {
        let FaultKind::Delay { delay, jitter } = kind else {
            return Ok(());
        };
        let max = self.shared.config.max_hold();
        let over = |field: &str, what: Duration| {
            InvalidFault::new(
                field,
                format!(
                    "{} is over the agent's hold cap of {}",
                    crate::api::format_duration(what),
                    crate::api::format_duration(max)
                ),
            )
        };
        if *delay > max {
            return Err(over("delay", *delay).into());
        }
        if delay.saturating_add(*jitter) > max {
            return Err(over("jitter", delay.saturating_add(*jitter)).into());
        }
        Ok(())
    }

    fn now_nanos(&self) -> u64 {
        duration_nanos(Instant::now().saturating_duration_since(self.shared.epoch))
    }

    /// Rebuilds the hot path's snapshot from the table (caller holds the table lock).
    fn publish(&self, table: &BTreeMap<String, Arc<ActiveFault>>) {
        self.shared
            .snapshot
            .store(Arc::new(table.values().cloned().collect()));
    }

    fn emit(&self, make: impl FnOnce(u64, u64) -> AgentEvent) {
        let seq = self.shared.event_seq.fetch_add(1, Ordering::Relaxed) + 1;
        // No subscriber is not an error.
        let _ = self.shared.events.send(make(unix_millis(), seq));
    }

    /// Removes faults whose lease ran out, emitting `expired`; returns the earliest remaining deadline.
    fn reap_expired(&self) -> Option<u64> {
        let now = self.now_nanos();
        let mut table = self.shared.table.lock();
        let expired: Vec<String> = table
            .values()
            .filter(|fault| !fault.is_live(now))
            .map(|fault| fault.id.clone())
            .collect();
        if !expired.is_empty() {
            for id in &expired {
                if let Some(fault) = table.remove(id) {
                    fault.released.cancel();
                }
            }
            self.publish(&table);
            for id in expired {
                self.shared
                    .counters
                    .leases_expired
                    .fetch_add(1, Ordering::Relaxed);
                self.emit(|at_ms, seq| AgentEvent::Expired { id, at_ms, seq });
            }
        }
        table
            .values()
            .map(|fault| fault.expires_at_nanos.load(Ordering::Relaxed))
            .min()
    }

    fn ensure_reaper(&self) {
        if self.shared.reaper_started.load(Ordering::Acquire) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if self.shared.reaper_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(&self.shared);
        let wake = self.shared.reaper_wake.clone();
        runtime.spawn(reap_leases(weak, wake));
    }
}

/// The lease reaper: sleeps until the earliest deadline (or a change to the table), then removes expired faults.
async fn reap_leases(shared: Weak<Shared>, wake: Arc<Notify>) {
    loop {
        let (epoch, next_deadline) = {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let agent = Agent { shared };
            (agent.shared.epoch, agent.reap_expired())
        };
        match next_deadline {
            Some(deadline_nanos) => {
                let deadline = epoch
                    .checked_add(Duration::from_nanos(deadline_nanos))
                    .unwrap_or_else(|| Instant::now() + Duration::from_secs(24 * 3600));
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

/// `delay + jitter × unit` (`unit` in [0, 1)), saturating instead of panicking.
fn delay_with_jitter(delay: Duration, jitter: Duration, unit: f64) -> Duration {
    let extra = Duration::try_from_secs_f64(jitter.as_secs_f64() * unit).unwrap_or(jitter);
    delay.saturating_add(extra)
}

fn duration_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}
