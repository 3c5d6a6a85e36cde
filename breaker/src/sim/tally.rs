//! What a pass counts, per second of the window and over the whole of it, and a breaker's time per state per second.

use crate::event::TransitionEvent;
use crate::state::State;

/// Nanoseconds in a second: a tally's seconds are this long.
pub(super) const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// Counts over one second, or over the whole window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Tally {
    pub(crate) requests: u64,
    pub(crate) dependency_calls: u64,
    pub(crate) reached: u64,
    pub(crate) never_made: u64,
    pub(crate) successful: u64,
    pub(crate) slow_failures: u64,
    pub(crate) fast_failures: u64,
    pub(crate) refused: u64,
    pub(crate) probes: u64,
    pub(crate) dependency_failures: u64,
    pub(crate) rejected_after_recovery: u64,
    /// Rejected requests whose call the dependency would have answered (the same draw, not made).
    pub(crate) rejected_would_succeed: u64,
    pub(crate) caller_ns: u64,
    pub(crate) busy_peak: u32,
}

impl Tally {
    pub(crate) fn failed(&self) -> u64 {
        self.slow_failures + self.fast_failures
    }

    pub(super) fn add(&mut self, other: &Tally) {
        self.requests += other.requests;
        self.dependency_calls += other.dependency_calls;
        self.reached += other.reached;
        self.never_made += other.never_made;
        self.successful += other.successful;
        self.slow_failures += other.slow_failures;
        self.fast_failures += other.fast_failures;
        self.refused += other.refused;
        self.probes += other.probes;
        self.dependency_failures += other.dependency_failures;
        self.rejected_after_recovery += other.rejected_after_recovery;
        self.rejected_would_succeed += other.rejected_would_succeed;
        self.caller_ns += other.caller_ns;
        self.busy_peak = self.busy_peak.max(other.busy_peak);
    }
}

/// Walk one breaker's transitions over `[0, window_ns)`: `each(second, state, ns)` for the time it spent in each
/// state within each second (closed from the start), `opened(at)` for each transition into open inside the window.
pub(crate) fn timeline(
    events: &[TransitionEvent],
    window_ns: u64,
    mut each: impl FnMut(usize, State, u64),
    mut opened: impl FnMut(u64),
) {
    let mut since = 0u64;
    let mut state = State::Closed;
    let ends = events
        .iter()
        .map(|e| (e.at_ms.saturating_mul(1_000_000).min(window_ns), e.to))
        .chain(std::iter::once((window_ns, State::Closed)));
    for (at, next) in ends {
        spread(since, at, |second, ns| each(second, state, ns));
        if next == State::Open && at < window_ns {
            opened(at);
        }
        since = at.max(since);
        state = next;
    }
}

/// Call `f(second, nanoseconds)` for every whole second that `[from, to)` overlaps.
fn spread(from: u64, to: u64, mut f: impl FnMut(usize, u64)) {
    let mut at = from;
    while at < to {
        let second = at / NANOS_PER_SECOND;
        let second_end = ((second + 1) * NANOS_PER_SECOND).min(to);
        f(second as usize, second_end - at);
        at = second_end;
    }
}
