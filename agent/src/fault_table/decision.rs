//! The per-request decision: what, if anything, to do to one request. Pure: the faults, the request and `now`
//! come in, the injection goes out; the shell counts it.
//!
//! # Order in which faults are checked
//!
//! Active faults are kept sorted by id (byte-wise, ascending). For each request the walk goes in that order; for
//! every fault whose lease is still running at `now` and whose match rule covers the request it makes one draw
//! from the request's random stream ([`RequestRng`]); the first fault whose draw fires is injected and the walk
//! stops. So with two faults on the same route, `a` at 0.5 and `b` at 0.5, `a` fires on 50 % of requests and `b`
//! on 25 %. Name faults so that the one that must win sorts first (`10-…`, `20-…`).
//!
//! # Reproducibility
//!
//! Request number `n` (counted from the agent's start, over every request the layer sees) draws from a stream
//! fixed by `(seed, n)`, so the same seed, the same faults and the same request sequence give the same decisions.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::ActiveFault;
use crate::api::FaultKind;
use crate::rng::RequestRng;

/// One request as the decision sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    pub(crate) method: &'a str,
    pub(crate) path: &'a str,
    /// The request's number since the agent started: which random stream it draws from.
    pub(crate) index: u64,
}

/// What the decision needs of the agent's settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecisionRules {
    /// Seed of every request's random stream.
    pub(crate) seed: u64,
    /// Longest a `hang` or `delay` holds a request.
    pub(crate) max_hold: Duration,
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

/// The fault that fires on `request` at `now`, if any, and what it does (see the module docs for the order and
/// the draws).
pub(crate) fn decide<'f>(
    faults: &'f [Arc<ActiveFault>],
    request: &Request<'_>,
    now: Duration,
    rules: DecisionRules,
) -> Option<(&'f ActiveFault, Injection)> {
    let mut rng = RequestRng::new(rules.seed, request.index);
    let fault = faults.iter().find(|fault| {
        fault.is_live(now)
            && fault.spec.matcher().matches(request.method, request.path)
            && rng.fires(fault.spec.rate())
    })?;
    let injection = match fault.spec.kind() {
        FaultKind::Error { status, .. } => Injection::Error {
            status: status.get(),
            body: fault.error_body.clone(),
        },
        FaultKind::Hang => Injection::Hang {
            hold: rules.max_hold,
            released: fault.released.clone(),
        },
        FaultKind::Delay { delay, jitter } => Injection::Delay {
            wait: delay_with_jitter(*delay, *jitter, rng.next_unit()).min(rules.max_hold),
            released: fault.released.clone(),
        },
        FaultKind::Reset => Injection::Reset,
    };
    Some((fault, injection))
}

/// `delay + jitter × unit` (`unit` in [0, 1)), saturating instead of panicking.
fn delay_with_jitter(delay: Duration, jitter: Duration, unit: f64) -> Duration {
    let extra = Duration::try_from_secs_f64(jitter.as_secs_f64() * unit).unwrap_or(jitter);
    delay.saturating_add(extra)
}
