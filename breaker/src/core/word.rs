//! The breaker's whole mutable state machine in one `u64`, so that every transition is one compare-exchange.
//!
//! ```text
//! bits  0..2   state        0 closed, 1 open, 2 half-open
//! bits  2..4   mode         0 enforce, 1 shadow, 2 forced-open, 3 disabled
//! bit   4      timed        a slow-call detector is configured: acquiring reads the clock
//! bit   5      windowed     a window detector is configured: recording reads the clock
//! bits  6..18  generation   +1 per transition (mod 4096): outcomes of permits from an earlier state are stale
//! bits 18..64  payload, by state:
//!   closed     18..50 consecutive failures
//!   open       18..58 open until (milliseconds since the clock's origin, 34 years)   58..64 trips since close
//!   half-open  18..38 probes in flight   38..58 probe successes                     58..64 trips since close
//! ```
//! The generation is what lets a late outcome be recognised as stale without a lock: a permit remembers the
//! generation it was issued in and its outcome only moves the machine if the word still carries it. It wraps after
//! 4096 transitions; a permit held across exactly that many transitions would be mistaken as current (one outcome
//! misattributed), which needs thousands of open windows to elapse during a single call.

use crate::config::Mode;
use crate::state::State;

const STATE_MASK: u64 = 0b11;
const MODE_SHIFT: u32 = 2;
const TIMED_BIT: u64 = 1 << 4;
const WINDOWED_BIT: u64 = 1 << 5;
const GEN_SHIFT: u32 = 6;
pub(crate) const GEN_BITS: u32 = 12;
pub(crate) const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const PAYLOAD_SHIFT: u32 = 18;

const CONSECUTIVE_MASK: u64 = (1 << 32) - 1;
const UNTIL_MASK: u64 = (1 << 40) - 1;
/// Largest representable "open until", used as "never" (forced open).
pub(crate) const UNTIL_NEVER_MS: u64 = UNTIL_MASK;
const COUNT_MASK: u64 = (1 << 20) - 1;
/// Largest number of probes in flight the word can count.
pub(crate) const MAX_IN_FLIGHT: u32 = COUNT_MASK as u32;
const TRIPS_SHIFT: u32 = 58;
const TRIPS_MAX: u64 = 63;

/// The packed state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Word(pub(crate) u64);

/// The state-dependent part of the word, unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Closed {
        consecutive_failures: u32,
    },
    Open {
        until_ms: u64,
        trips: u32,
    },
    HalfOpen {
        in_flight: u32,
        successes: u32,
        trips: u32,
    },
}

impl Phase {
    /// Closed with no failures counted.
    pub(crate) const CLOSED: Phase = Phase::Closed {
        consecutive_failures: 0,
    };

    /// Where a breaker in `mode` starts: open until told otherwise when forced open, otherwise closed with
    /// nothing counted.
    pub(crate) fn start_in(mode: Mode) -> Phase {
        if mode == Mode::ForcedOpen {
            Phase::Open {
                until_ms: UNTIL_NEVER_MS,
                trips: 0,
            }
        } else {
            Phase::CLOSED
        }
    }

    pub(crate) fn state(self) -> State {
        match self {
            Phase::Closed { .. } => State::Closed,
            Phase::Open { .. } => State::Open,
            Phase::HalfOpen { .. } => State::HalfOpen,
        }
    }
}

fn mode_bits(mode: Mode) -> u64 {
    match mode {
        Mode::Enforce => 0,
        Mode::Shadow => 1,
        Mode::ForcedOpen => 2,
        Mode::Disabled => 3,
    }
}

impl Word {
    /// A closed word with no failures, generation 0.
    pub(crate) fn initial(mode: Mode, timed: bool, windowed: bool) -> Word {
        Word(0)
            .with_flags(mode, timed, windowed)
            .with_phase(Phase::start_in(mode))
    }

    /// The phase an outcome of a call admitted in `generation` acts on: `None` when it no longer counts (the state
    /// changed since, or the mode does not detect — only enforce and shadow do).
    pub(crate) fn phase_for_outcome_of(self, generation: u16) -> Option<Phase> {
        (self.generation() == generation && matches!(self.mode(), Mode::Enforce | Mode::Shadow))
            .then(|| self.phase())
    }

    #[inline]
    pub(crate) fn is_closed(self) -> bool {
        self.0 & STATE_MASK == 0
    }

    #[inline]
    pub(crate) fn state(self) -> State {
        match self.0 & STATE_MASK {
            0 => State::Closed,
            1 => State::Open,
            _ => State::HalfOpen,
        }
    }

    #[inline]
    pub(crate) fn mode(self) -> Mode {
        match (self.0 >> MODE_SHIFT) & 0b11 {
            0 => Mode::Enforce,
            1 => Mode::Shadow,
            2 => Mode::ForcedOpen,
            _ => Mode::Disabled,
        }
    }

    /// Closed, enforce or shadow, no slow-call timing: the admission fast path (one mask test).
    #[inline]
    pub(crate) fn admits_untimed_closed(self) -> bool {
        self.0 & (STATE_MASK | (0b10 << MODE_SHIFT) | TIMED_BIT) == 0
    }

    /// Enforce or shadow: the machine is watching outcomes.
    #[inline]
    pub(crate) fn watching(self) -> bool {
        (self.0 >> MODE_SHIFT) & 0b10 == 0
    }

    #[inline]
    pub(crate) fn timed(self) -> bool {
        self.0 & TIMED_BIT != 0
    }

    #[inline]
    pub(crate) fn windowed(self) -> bool {
        self.0 & WINDOWED_BIT != 0
    }

    #[inline]
    pub(crate) fn generation(self) -> u16 {
        ((self.0 >> GEN_SHIFT) & GEN_MASK) as u16
    }

    /// Consecutive failures if closed, else 0 (the success path reads only this).
    #[inline]
    pub(crate) fn closed_consecutive_failures(self) -> u32 {
        if self.is_closed() {
            ((self.0 >> PAYLOAD_SHIFT) & CONSECUTIVE_MASK) as u32
        } else {
            0
        }
    }

    pub(crate) fn phase(self) -> Phase {
        let payload = self.0 >> PAYLOAD_SHIFT;
        let trips = ((self.0 >> TRIPS_SHIFT) & TRIPS_MAX) as u32;
        match self.state() {
            State::Closed => Phase::Closed {
                consecutive_failures: (payload & CONSECUTIVE_MASK) as u32,
            },
            State::Open => Phase::Open {
                until_ms: payload & UNTIL_MASK,
                trips,
            },
            State::HalfOpen => Phase::HalfOpen {
                in_flight: (payload & COUNT_MASK) as u32,
                successes: ((payload >> 20) & COUNT_MASK) as u32,
                trips,
            },
        }
    }

    /// Same generation and flags, another phase (no transition: e.g. a failure counted).
    pub(crate) fn with_phase(self, phase: Phase) -> Word {
        let head = self.0 & ((1 << PAYLOAD_SHIFT) - 1) & !STATE_MASK;
        let (state, payload) = match phase {
            Phase::Closed {
                consecutive_failures,
            } => (0, u64::from(consecutive_failures) & CONSECUTIVE_MASK),
            Phase::Open { until_ms, trips } => (
                1,
                (until_ms.min(UNTIL_MASK))
                    | (u64::from(trips).min(TRIPS_MAX) << (TRIPS_SHIFT - PAYLOAD_SHIFT)),
            ),
            Phase::HalfOpen {
                in_flight,
                successes,
                trips,
            } => (
                2,
                (u64::from(in_flight) & COUNT_MASK)
                    | ((u64::from(successes) & COUNT_MASK) << 20)
                    | (u64::from(trips).min(TRIPS_MAX) << (TRIPS_SHIFT - PAYLOAD_SHIFT)),
            ),
        };
        Word(head | state | (payload << PAYLOAD_SHIFT))
    }

    /// A transition: the next generation, in `phase`.
    pub(crate) fn transition_to(self, phase: Phase) -> Word {
        let next_gen = (u64::from(self.generation()) + 1) & GEN_MASK;
        Word((self.0 & !(GEN_MASK << GEN_SHIFT)) | (next_gen << GEN_SHIFT)).with_phase(phase)
    }

    /// Same state, other mode and detector flags.
    pub(crate) fn with_flags(self, mode: Mode, timed: bool, windowed: bool) -> Word {
        let cleared = self.0 & !((0b11 << MODE_SHIFT) | TIMED_BIT | WINDOWED_BIT);
        let mut bits = cleared | (mode_bits(mode) << MODE_SHIFT);
        if timed {
            bits |= TIMED_BIT;
        }
        if windowed {
            bits |= WINDOWED_BIT;
        }
        Word(bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_round_trip() {
        let w = Word::initial(Mode::Shadow, true, false);
        assert_eq!(w.state(), State::Closed);
        assert_eq!(w.mode(), Mode::Shadow);
        assert!(w.timed() && !w.windowed());
        for phase in [
            Phase::Closed {
                consecutive_failures: u32::MAX,
            },
            Phase::Open {
                until_ms: UNTIL_NEVER_MS,
                trips: 63,
            },
            Phase::Open {
                until_ms: 30_000,
                trips: 1,
            },
            Phase::HalfOpen {
                in_flight: MAX_IN_FLIGHT,
                successes: 17,
                trips: 5,
            },
        ] {
            let next = w.transition_to(phase);
            assert_eq!(next.phase(), phase);
            assert_eq!(next.generation(), 1);
            assert_eq!(next.mode(), Mode::Shadow);
            assert!(next.timed() && !next.windowed());
        }
    }

    #[test]
    fn fast_admission_mask() {
        for (mode, timed, fast) in [
            (Mode::Enforce, false, true),
            (Mode::Shadow, false, true),
            (Mode::Enforce, true, false),
            (Mode::ForcedOpen, false, false),
            (Mode::Disabled, false, false),
        ] {
            let word = Word::initial(mode, timed, true);
            assert_eq!(word.admits_untimed_closed(), fast, "{mode:?} timed={timed}");
        }
        let open = Word::initial(Mode::Enforce, false, false).transition_to(Phase::Open {
            until_ms: 1,
            trips: 1,
        });
        assert!(!open.admits_untimed_closed());
    }

    #[test]
    fn generation_wraps() {
        let mut w = Word::initial(Mode::Enforce, false, true);
        for _ in 0..(GEN_MASK + 1) {
            w = w.transition_to(Phase::Closed {
                consecutive_failures: 0,
            });
        }
        assert_eq!(w.generation(), 0);
        assert!(w.windowed());
    }

    #[test]
    fn consecutive_failures_only_read_when_closed() {
        let w = Word::initial(Mode::Enforce, false, false).with_phase(Phase::Closed {
            consecutive_failures: 3,
        });
        assert_eq!(w.closed_consecutive_failures(), 3);
        let open = w.transition_to(Phase::Open {
            until_ms: 3,
            trips: 1,
        });
        assert_eq!(open.closed_consecutive_failures(), 0);
    }
}
