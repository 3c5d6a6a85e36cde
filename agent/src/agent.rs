//! The agent: the shell around the pure fault table (`fault_table/`). It reads the clock and passes it in, keeps
//! the snapshot the request path reads, publishes events and counters, and starts the lease reaper (`reaper.rs`).
//! It knows neither the fault layer (`inject/`) nor the fault API (`fault_api.rs`): both are built from outside,
//! each given an [`Agent`] (`FaultLayer::new(agent)`, `fault_api::router(agent)`).
//!
//! # Leases
//!
//! Every fault carries a deadline. The request path ignores a fault whose deadline has passed, so a fault never
//! fires after its lease even if the reaper is late; the reaper task (spawned on the tokio runtime that creates
//! the agent, or lazily at the first put) removes expired faults and emits `expired`. The reaper holds only a weak
//! reference and ends when the last [`Agent`] clone is dropped. A new agent starts with no faults: nothing is
//! persisted. A delay is capped by the hold cap like a hang (`max_hold`, [`crate::refusal`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use arc_swap::ArcSwap;
use http::Method;
use parking_lot::Mutex;
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;

use crate::api::{AgentEvent, FaultSpec, FaultView, RemovalReason, validate_fault_id};
use crate::config::AgentConfig;
use crate::fault_table::decision::{self, DecisionRules, Injection, Request};
use crate::fault_table::{ActiveFault, FaultTable};
use crate::metrics::Counters;
use crate::probes::{ProbeBuckets, ProbeLog};
use crate::reaper::{Reap, deadline_after, reap_leases};
use crate::refusal::{AgentError, check_delay, checked_lease};

/// Path prefix of the fault API (`fault_api.rs`); requests under it are never faulted nor counted.
pub const FAULT_API_PREFIX: &str = "/_agent/";

/// How many events a slow websocket subscriber may fall behind before it misses some.
const EVENT_BUFFER: usize = 1024;

/// What [`Agent::put`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct PutOutcome {
    pub view: FaultView,
    /// Whether a fault with the same id was replaced.
    pub replaced: bool,
}

struct Shared {
    config: AgentConfig,
    /// Zero of the agent's monotonic clock (tokio's, so paused time in tests moves it).
    epoch: Instant,
    /// What the request path reads: the table's faults in order. Replaced wholesale after each change of `table`.
    snapshot: ArcSwap<Vec<Arc<ActiveFault>>>,
    /// The authoritative table; held only by mutations, never by the request path.
    table: Mutex<FaultTable>,
    events: broadcast::Sender<AgentEvent>,
    event_seq: AtomicU64,
    counters: Counters,
    /// Each probe's arrival in its 10 ms bucket (the last ten minutes); locked by probes only.
    probes: Mutex<ProbeLog>,
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
                table: Mutex::new(FaultTable::default()),
                events,
                event_seq: AtomicU64::new(0),
                counters: Counters::default(),
                probes: Mutex::new(ProbeLog::default()),
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

    /// Counts a request marked as a caller's half-open probe ([`crate::PROBE_HEADER`]), in the total and in the
    /// 10 ms bucket of the wall clock now ([`crate::probes`]).
    pub fn record_probe(&self) {
        self.record_probe_at(unix_millis());
    }

    /// [`Agent::record_probe`] for a probe that arrived at `at_ms` (ms since the Unix epoch).
    pub fn record_probe_at(&self, at_ms: u64) {
        self.shared
            .counters
            .probes_seen
            .fetch_add(1, Ordering::Relaxed);
        self.shared.probes.lock().record(at_ms);
    }

    /// The non-empty 10 ms buckets of probes starting in `[since_ms, until_ms)` (of the last ten minutes).
    pub fn probe_buckets(&self, since_ms: u64, until_ms: u64) -> ProbeBuckets {
        self.shared.probes.lock().window(since_ms, until_ms)
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
        self.shared.reap_expired();
        let now = self.shared.now();
        self.shared
            .snapshot
            .load()
            .iter()
            .map(|fault| fault.view(now))
            .collect()
    }

    /// Puts (adds or replaces) fault `id`. A lease over the cap, a delay over the hold cap or a new id beyond
    /// [`crate::MAX_FAULTS`] is refused and nothing changes.
    pub fn put(&self, id: &str, spec: FaultSpec) -> Result<PutOutcome, AgentError> {
        validate_fault_id(id)?;
        let lease = checked_lease(self.config(), spec.lease())?;
        check_delay(self.config(), spec.kind())?;
        self.ensure_reaper();
        let now = self.shared.now();
        let fault = ActiveFault::new(id, spec.clone(), lease, now);
        let view = fault.view(now);
        let replaced = {
            let mut table = self.shared.table.lock();
            let replaced = table.put(fault)?;
            self.shared.publish(&table);
            if replaced {
                self.shared.emit(|at_ms, seq| AgentEvent::Removed {
                    id: id.to_owned(),
                    reason: RemovalReason::Replaced,
                    at_ms,
                    seq,
                });
            }
            self.shared.emit(|at_ms, seq| AgentEvent::Applied {
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
            Some(lease) => Some(checked_lease(self.config(), Some(lease))?),
            None => None,
        };
        let now = self.shared.now();
        let view = {
            let table = self.shared.table.lock();
            let fault = table.renew(id, lease, now)?;
            let view = fault.view(now);
            self.shared.emit(|at_ms, seq| AgentEvent::Applied {
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
        table.remove(id)?;
        self.shared.publish(&table);
        self.shared.emit(|at_ms, seq| AgentEvent::Removed {
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
        let removed = table.clear();
        self.shared.publish(&table);
        for id in &removed {
            self.shared.emit(|at_ms, seq| AgentEvent::Removed {
                id: id.clone(),
                reason: RemovalReason::Halt,
                at_ms,
                seq,
            });
        }
        removed.len()
    }

    /// Decides what to do to one request ([`decision::decide`] at the clock's `now`) and counts it. Requests
    /// under [`FAULT_API_PREFIX`] are neither faulted nor counted.
    pub(crate) fn decide(&self, method: &Method, path: &str) -> Option<Injection> {
        if path.starts_with(FAULT_API_PREFIX) {
            return None;
        }
        let counters = &self.shared.counters;
        let index = counters.requests_seen.fetch_add(1, Ordering::Relaxed);
        let snapshot = self.shared.snapshot.load();
        if snapshot.is_empty() {
            return None;
        }
        let request = Request {
            method: method.as_str(),
            path,
            index,
        };
        let rules = DecisionRules {
            seed: self.config().seed(),
            max_hold: self.config().max_hold(),
        };
        let (fault, injection) = decision::decide(&snapshot, &request, self.shared.now(), rules)?;
        fault.injected.fetch_add(1, Ordering::Relaxed);
        counters.record_injection(fault.spec.kind());
        Some(injection)
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
        let target = Arc::downgrade(&self.shared);
        runtime.spawn(reap_leases(target, self.shared.reaper_wake.clone()));
    }
}

impl Shared {
    /// Time since the agent started, on tokio's clock.
    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    /// Rebuilds the request path's snapshot from the table (the caller holds the table lock).
    fn publish(&self, table: &FaultTable) {
        self.snapshot.store(Arc::new(table.snapshot()));
    }

    fn emit(&self, make: impl FnOnce(u64, u64) -> AgentEvent) {
        let seq = self.event_seq.fetch_add(1, Ordering::Relaxed) + 1;
        // No subscriber is not an error.
        let _ = self.events.send(make(unix_millis(), seq));
    }
}

impl Reap for Shared {
    /// Removes faults whose lease ran out, emitting `expired`; returns the earliest remaining deadline.
    fn reap_expired(&self) -> Option<Instant> {
        let mut table = self.table.lock();
        let expired = table.reap(self.now());
        if !expired.is_empty() {
            self.publish(&table);
            for id in expired {
                self.counters.leases_expired.fetch_add(1, Ordering::Relaxed);
                self.emit(|at_ms, seq| AgentEvent::Expired { id, at_ms, seq });
            }
        }
        table
            .next_deadline()
            .map(|deadline| deadline_after(self.epoch, deadline))
    }
}

// The agent's wall clock (its events' `at_ms`), read here only: the agent does not depend on `breaker::clock`,
// and the fault table takes its time as an argument.
#[allow(clippy::disallowed_methods)]
fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        })
}
