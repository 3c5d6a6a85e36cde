//! Permits: what a caller holds between admission and outcome. A [`Permit`] borrows its breaker, an
//! [`OwnedPermit`] shares it; both carry a one-word [`Ticket`] of how the call was admitted, and a permit dropped
//! without an outcome is recorded as abandoned.
//!
//! In a circle with `breaker.rs` because a permit and its breaker are one type pair: the breaker hands out
//! permits, and a permit records its call's outcome on the breaker it was admitted by.

use std::sync::Arc;
use std::time::Duration;

use super::CircuitBreaker;
use crate::clock::Instant;
use crate::core::word::GEN_MASK;
use crate::state::Outcome;

/// What a permit remembers about its admission, packed into one word so that a permit is two words (breaker
/// reference + ticket) the compiler keeps in registers: generation (bits 0..12), kind (12..14), windowed (14),
/// timed (15), and when timed the start in microseconds since the clock's origin, modulo 2^48 (8.9 years; elapsed
/// time is computed modulo the same, so only a single call lasting that long would be mistimed). Byte-sized fields
/// made the compiler copy the permit piecewise through the stack, which cost store-forwarding stalls.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ticket(u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TicketKind {
    Closed = 0,
    Probe = 1,
    Unwatched = 2,
}

const TICKET_GEN_MASK: u64 = GEN_MASK;
const TICKET_KIND_SHIFT: u32 = 12;
const TICKET_KIND_MASK: u64 = 0b11 << TICKET_KIND_SHIFT;
const TICKET_WINDOWED: u64 = 1 << 14;
const TICKET_TIMED: u64 = 1 << 15;
const TICKET_START_SHIFT: u32 = 16;
const TICKET_START_MASK: u64 = (1 << 48) - 1;

impl Ticket {
    #[inline]
    pub(super) fn new(
        generation: u16,
        kind: TicketKind,
        started: Option<Instant>,
        windowed: bool,
    ) -> Ticket {
        let mut bits =
            (u64::from(generation) & TICKET_GEN_MASK) | ((kind as u64) << TICKET_KIND_SHIFT);
        if windowed {
            bits |= TICKET_WINDOWED;
        }
        if let Some(started) = started {
            let micros = (started.as_nanos() / 1_000) & TICKET_START_MASK;
            bits |= TICKET_TIMED | (micros << TICKET_START_SHIFT);
        }
        Ticket(bits)
    }

    #[inline]
    pub(super) fn generation(self) -> u16 {
        (self.0 & TICKET_GEN_MASK) as u16
    }

    #[inline]
    pub(super) fn kind(self) -> TicketKind {
        match (self.0 & TICKET_KIND_MASK) >> TICKET_KIND_SHIFT {
            0 => TicketKind::Closed,
            1 => TicketKind::Probe,
            _ => TicketKind::Unwatched,
        }
    }

    /// Time since the permit was issued, if it was timed.
    #[inline]
    pub(super) fn elapsed(self, now: Instant) -> Option<Duration> {
        if self.0 & TICKET_TIMED == 0 {
            return None;
        }
        let started = self.0 >> TICKET_START_SHIFT;
        let now_micros = (now.as_nanos() / 1_000) & TICKET_START_MASK;
        Some(Duration::from_micros(
            now_micros.wrapping_sub(started) & TICKET_START_MASK,
        ))
    }

    /// Closed, no window, not timed: a success only needs the failure count checked.
    #[inline]
    pub(super) fn is_plain_closed(self) -> bool {
        self.0 & (TICKET_KIND_MASK | TICKET_WINDOWED | TICKET_TIMED) == 0
    }
}

/// Leave to make one call. Record its outcome after the call. No lock is held while it lives.
///
/// # A dropped permit
///
/// Dropping a permit without an outcome — typically because the caller's own caller gave up and its future was
/// cancelled mid-call — frees its half-open probe slot and counts as follows:
///
/// - when a slow-call detector is configured and the call had already waited at least `trip.slow_call.duration`,
///   it counts as a **failure** (and a slow call): a call abandoned after waiting that long is evidence that the
///   dependency is slow or hung, and recording nothing would leave the breaker blind to hangs whenever the
///   caller's caller times out before the call does;
/// - otherwise it counts as **ignored** (nothing is known about the dependency yet).
///
/// Callers that know their call timeout can do better than either: let the call run to its own end (the
/// boutique's client does, so a hang is recorded as the timeout it is).
#[must_use = "a permit records nothing unless its outcome is recorded; dropping it counts the call as ignored, or as a failure once it waited past the slow-call threshold"]
#[derive(Debug)]
pub struct Permit<'a> {
    pub(super) breaker: &'a CircuitBreaker,
    pub(super) ticket: Ticket,
}

impl Permit<'_> {
    /// Record the call's outcome (elapsed time measured by the breaker's clock when a slow-call detector needs it).
    #[inline]
    pub fn record(self, outcome: Outcome) {
        self.breaker.finish(self.ticket, outcome, None);
        std::mem::forget(self);
    }

    /// Record the call's outcome and how long it took.
    #[inline]
    pub fn record_timed(self, outcome: Outcome, elapsed: Duration) {
        self.breaker.finish(self.ticket, outcome, Some(elapsed));
        std::mem::forget(self);
    }

    /// Whether this permit holds a half-open probe slot.
    pub fn is_probe(&self) -> bool {
        self.ticket.kind() == TicketKind::Probe
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.breaker.abandon(self.ticket);
    }
}

/// A [`Permit`] that owns a reference to its breaker (for futures and tower services). Dropped without an
/// outcome it counts as a [`Permit`] does (see "A dropped permit" there).
#[must_use = "dropping it counts the call as ignored, or as a failure once it waited past the slow-call threshold"]
#[derive(Debug)]
pub struct OwnedPermit {
    pub(super) breaker: Arc<CircuitBreaker>,
    pub(super) ticket: Option<Ticket>,
}

impl OwnedPermit {
    /// Record the call's outcome.
    pub fn record(mut self, outcome: Outcome) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.finish(ticket, outcome, None);
        }
    }

    /// Record the call's outcome and how long it took.
    pub fn record_timed(mut self, outcome: Outcome, elapsed: Duration) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.finish(ticket, outcome, Some(elapsed));
        }
    }

    /// Whether this permit holds a half-open probe slot.
    pub fn is_probe(&self) -> bool {
        self.ticket
            .is_some_and(|ticket| ticket.kind() == TicketKind::Probe)
    }

    /// The breaker this permit belongs to.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.breaker.abandon(ticket);
        }
    }
}
