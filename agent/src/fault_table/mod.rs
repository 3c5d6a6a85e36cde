//! The fault table: the active faults by id, their leases and what each injected, and the per-request decision
//! over them ([`decision`]). Pure like the breaker core: no clock is read here, every operation that depends on
//! time takes `now` (time since the agent started) as an argument; the [`crate::Agent`] shell reads its clock and
//! passes it in.
//!
//! # A fault's effects end with the fault
//!
//! Every fault carries a release signal, fired when it leaves the table — expiry, delete, replacement or halt.
//! A request a `hang` fault holds is closed at once (as at the hold cap), and a request a `delay` fault holds is
//! sent on to the service at once: no held request outlives its fault. The table holds at most [`MAX_FAULTS`].

pub(crate) mod decision;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use crate::api::{FaultKind, FaultSpec, FaultView};
use crate::refusal::AgentError;

/// Most faults an agent holds at once; a put of a new id beyond it is refused naming `id`.
pub const MAX_FAULTS: usize = 256;

/// One fault in the table. Its lease and counter are atomics: a renew moves the deadline and a request counts
/// an injection without the table's lock, while the request path reads a snapshot.
#[derive(Debug)]
pub(crate) struct ActiveFault {
    pub(crate) id: String,
    pub(crate) spec: FaultSpec,
    /// The `error` body, ready to send without copying.
    pub(crate) error_body: Bytes,
    /// Current lease length in nanoseconds (what a renew without a lease extends by).
    lease_nanos: AtomicU64,
    /// Deadline in nanoseconds since the agent's start.
    expires_at_nanos: AtomicU64,
    /// Requests this fault fired on.
    pub(crate) injected: AtomicU64,
    /// Fired when the fault leaves the table: releases every request it holds.
    pub(crate) released: CancellationToken,
}

impl ActiveFault {
    /// Fault `id` put at `now` for `lease`.
    pub(crate) fn new(id: &str, spec: FaultSpec, lease: Duration, now: Duration) -> Self {
        let error_body = match spec.kind() {
            FaultKind::Error {
                body: Some(body), ..
            } => Bytes::from(body.clone()),
            _ => Bytes::new(),
        };
        ActiveFault {
            id: id.to_owned(),
            spec,
            error_body,
            lease_nanos: AtomicU64::new(duration_nanos(lease)),
            expires_at_nanos: AtomicU64::new(duration_nanos(now.saturating_add(lease))),
            injected: AtomicU64::new(0),
            released: CancellationToken::new(),
        }
    }

    /// Whether the lease still runs at `now`.
    pub(crate) fn is_live(&self, now: Duration) -> bool {
        duration_nanos(now) < self.expires_at_nanos.load(Ordering::Relaxed)
    }

    /// When the lease runs out (time since the agent's start).
    fn expires_at(&self) -> Duration {
        Duration::from_nanos(self.expires_at_nanos.load(Ordering::Relaxed))
    }

    /// The fault as listed at `now`.
    pub(crate) fn view(&self, now: Duration) -> FaultView {
        FaultView {
            id: self.id.clone(),
            fault: self.spec.clone(),
            lease_ms: self.lease_nanos.load(Ordering::Relaxed) / 1_000_000,
            expires_in_ms: self
                .expires_at_nanos
                .load(Ordering::Relaxed)
                .saturating_sub(duration_nanos(now))
                / 1_000_000,
            injected: self.injected.load(Ordering::Relaxed),
        }
    }
}

/// The active faults by id (byte-wise ascending: the order they are checked in).
#[derive(Debug, Default)]
pub(crate) struct FaultTable {
    faults: BTreeMap<String, Arc<ActiveFault>>,
}

impl FaultTable {
    /// Puts `fault` under its id; returns whether one with that id was replaced (and released). A new id beyond
    /// [`MAX_FAULTS`] is refused and nothing changes.
    pub(crate) fn put(&mut self, fault: ActiveFault) -> Result<bool, AgentError> {
        if self.faults.len() >= MAX_FAULTS && !self.faults.contains_key(&fault.id) {
            return Err(AgentError::TooManyFaults { max: MAX_FAULTS });
        }
        let old = self.faults.insert(fault.id.clone(), Arc::new(fault));
        if let Some(old) = &old {
            old.released.cancel();
        }
        Ok(old.is_some())
    }

    /// Extends fault `id`'s lease from `now`, by `lease` or (when `None`) by its current lease length; a fault
    /// whose lease already ran out is not found.
    pub(crate) fn renew(
        &self,
        id: &str,
        lease: Option<Duration>,
        now: Duration,
    ) -> Result<Arc<ActiveFault>, AgentError> {
        let fault = self
            .faults
            .get(id)
            .filter(|fault| fault.is_live(now))
            .ok_or_else(|| AgentError::NotFound { id: id.to_owned() })?;
        if let Some(lease) = lease {
            fault
                .lease_nanos
                .store(duration_nanos(lease), Ordering::Relaxed);
        }
        let lease_nanos = fault.lease_nanos.load(Ordering::Relaxed);
        fault.expires_at_nanos.store(
            duration_nanos(now).saturating_add(lease_nanos),
            Ordering::Relaxed,
        );
        Ok(Arc::clone(fault))
    }

    /// Removes and releases fault `id`.
    pub(crate) fn remove(&mut self, id: &str) -> Result<(), AgentError> {
        let removed = self
            .faults
            .remove(id)
            .ok_or_else(|| AgentError::NotFound { id: id.to_owned() })?;
        removed.released.cancel();
        Ok(())
    }

    /// Removes and releases every fault; returns their ids, in order.
    pub(crate) fn clear(&mut self) -> Vec<String> {
        let removed = std::mem::take(&mut self.faults);
        for fault in removed.values() {
            fault.released.cancel();
        }
        removed.into_keys().collect()
    }

    /// Removes and releases the faults whose lease ran out by `now`; returns their ids, in order.
    pub(crate) fn reap(&mut self, now: Duration) -> Vec<String> {
        let expired: Vec<String> = self
            .faults
            .values()
            .filter(|fault| !fault.is_live(now))
            .map(|fault| fault.id.clone())
            .collect();
        for id in &expired {
            if let Some(fault) = self.faults.remove(id) {
                fault.released.cancel();
            }
        }
        expired
    }

    /// The earliest deadline of a fault in the table.
    pub(crate) fn next_deadline(&self) -> Option<Duration> {
        self.faults.values().map(|fault| fault.expires_at()).min()
    }

    /// The faults in the order they are checked in: what the request path reads.
    pub(crate) fn snapshot(&self) -> Vec<Arc<ActiveFault>> {
        self.faults.values().cloned().collect()
    }
}

fn duration_nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
