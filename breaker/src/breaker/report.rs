//! What a breaker tells its callers and observers: a rejection, a call's error ([`CallError`]), and its observable
//! state ([`BreakerSnapshot`] with its [`Counters`]) as served on `/_breakers`.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::Mode;
use crate::state::State;

/// A caller may not pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("circuit breaker {breaker} is open")]
pub struct Rejected {
    /// The breaker's name.
    pub breaker: String,
    /// Its state when it rejected (`open`, or `half_open` with every probe slot taken).
    pub state: State,
}

/// The result of [`CircuitBreaker::call`] when it is not `Ok`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError<E> {
    /// The breaker did not let the call through.
    Rejected(Rejected),
    /// The call ran and returned this error.
    Inner(E),
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rejected(rejected) => rejected.fmt(f),
            CallError::Inner(inner) => inner.fmt(f),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for CallError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Rejected(rejected) => Some(rejected),
            CallError::Inner(inner) => Some(inner),
        }
    }
}

/// Counters since creation or the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Calls let through and finished (successes + failures + ignored; calls in flight are counted when they end).
    /// Includes shadow-mode calls that enforce mode would have rejected.
    pub permitted: u64,
    /// Calls rejected.
    pub rejected: u64,
    /// Shadow mode: calls let through that enforce mode would have rejected.
    pub shadow_rejected: u64,
    /// Outcomes recorded as success.
    pub successes: u64,
    /// Outcomes recorded as failure.
    pub failures: u64,
    /// Outcomes recorded as ignored, and permits dropped without an outcome.
    pub ignored: u64,
    /// Calls at least as slow as the slow-call duration (only counted when that detector is configured).
    pub slow: u64,
    /// Transitions into open.
    pub opens: u64,
    /// Time spent closed.
    pub closed_ms: u64,
    /// Time spent open.
    pub open_ms: u64,
    /// Time spent half-open.
    pub half_open_ms: u64,
}

/// A breaker's observable state, as served on `/_breakers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerSnapshot {
    /// The service the breaker lives in.
    pub service: String,
    /// The breaker's name.
    pub name: String,
    /// Its state now.
    pub state: State,
    /// Its mode.
    pub mode: Mode,
    /// Its counters.
    pub counters: Counters,
    /// Consecutive failures so far (closed).
    pub consecutive_failures: u32,
    /// Probes in flight (half-open).
    pub probes_in_flight: u32,
    /// Probe successes so far (half-open).
    pub probe_successes: u32,
    /// Trips since the last close.
    pub trips: u32,
    /// When the open window ends, Unix ms (open, not forced).
    pub open_until_ms: Option<u64>,
    /// Number of the last transition event.
    pub seq: u64,
}
