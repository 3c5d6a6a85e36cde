//! The state machine as pure functions `Word → Step`, time passed in. The shell runs each inside one CAS loop;
//! a step that changes the state bumps the word's generation and carries the [`Transition`] to emit, so exactly
//! one event is produced per transition — by the thread whose compare-exchange installed it.

use crate::clock::Instant;
use crate::config::Mode;
use crate::core::policy::{Policy, RateRule, until_ms};
use crate::core::word::{MAX_IN_FLIGHT, Phase, UNTIL_NEVER_MS, Word};
use crate::event::{Reason, TransitionDetail};
use crate::state::{Outcome, State};

/// A state change, before it is numbered and timestamped as an event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Transition {
    pub(crate) from: State,
    pub(crate) to: State,
    pub(crate) reason: Reason,
    pub(crate) detail: TransitionDetail,
    pub(crate) at: Instant,
    pub(crate) shadow: bool,
}

/// The next word, and the transition if the state changed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    pub(crate) next: Word,
    pub(crate) transition: Option<Transition>,
}

impl Step {
    fn stay(word: Word) -> Step {
        Step {
            next: word,
            transition: None,
        }
    }

    fn moved(
        word: Word,
        next: Word,
        reason: Reason,
        detail: TransitionDetail,
        at: Instant,
    ) -> Step {
        let transition = Transition {
            from: word.state(),
            to: next.state(),
            reason,
            detail,
            at,
            shadow: next.mode() == Mode::Shadow,
        };
        Step {
            next,
            transition: Some(transition),
        }
    }
}

/// What an acquiring caller gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Closed: the outcome feeds the detectors.
    Closed,
    /// Half-open probe: holds one of the probe slots until its outcome (or drop).
    Probe,
    /// Let through without feeding the machine: disabled mode, or shadow mode where enforce would reject.
    Unwatched { would_reject: bool },
    /// Rejected.
    Rejected,
}

/// Which window rules fired for the outcome being recorded, with their (hits, calls).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) failure_rate: Option<(u64, u64)>,
    pub(crate) last_calls: Option<(u64, u64)>,
    pub(crate) slow_call: Option<(u64, u64)>,
}

/// Open → HalfOpen once the open window has ended; otherwise nothing. The transition is dated at the window's
/// end, not at the moment it was noticed, so the timeline does not depend on when someone looked.
pub(crate) fn observe(word: Word, now: Instant) -> Step {
    if word.mode() == Mode::ForcedOpen {
        return Step::stay(word);
    }
    match word.phase() {
        Phase::Open { until_ms, trips }
            if until_ms != UNTIL_NEVER_MS && now.as_nanos() >= until_ms * 1_000_000 =>
        {
            let next = word.transition_to(Phase::HalfOpen {
                in_flight: 0,
                successes: 0,
                trips,
            });
            let detail = TransitionDetail {
                trips: Some(trips),
                ..TransitionDetail::default()
            };
            Step::moved(
                word,
                next,
                Reason::CooldownElapsed,
                detail,
                Instant::from_nanos(until_ms * 1_000_000),
            )
        }
        _ => Step::stay(word),
    }
}

/// A caller asks to pass.
pub(crate) fn acquire(word: Word, now: Instant, policy: &Policy) -> (Step, Admission) {
    match word.mode() {
        Mode::Disabled => {
            return (
                Step::stay(word),
                Admission::Unwatched {
                    would_reject: false,
                },
            );
        }
        Mode::ForcedOpen => return (Step::stay(word), Admission::Rejected),
        Mode::Enforce | Mode::Shadow => {}
    }
    let observed = observe(word, now);
    let current = observed.next;
    let refuse = |step: Step| {
        let admission = if current.mode() == Mode::Shadow {
            Admission::Unwatched { would_reject: true }
        } else {
            Admission::Rejected
        };
        (step, admission)
    };
    match current.phase() {
        Phase::Closed { .. } => (observed, Admission::Closed),
        Phase::Open { .. } => refuse(observed),
        Phase::HalfOpen {
            in_flight,
            successes,
            trips,
        } => {
            let limit = policy.probes.unwrap_or(MAX_IN_FLIGHT).min(MAX_IN_FLIGHT);
            if in_flight < limit {
                let next = current.with_phase(Phase::HalfOpen {
                    in_flight: in_flight + 1,
                    successes,
                    trips,
                });
                (
                    Step {
                        next,
                        transition: observed.transition,
                    },
                    Admission::Probe,
                )
            } else {
                refuse(observed)
            }
        }
    }
}

fn trip(
    word: Word,
    now: Instant,
    policy: &Policy,
    reason: Reason,
    mut detail: TransitionDetail,
) -> Step {
    let trips = 1;
    let window_ns = policy.open_window_ns(trips, now.as_nanos());
    let next = word.transition_to(Phase::Open {
        until_ms: until_ms(now.as_nanos(), window_ns),
        trips,
    });
    detail.open_ms = Some(window_ns.div_ceil(1_000_000));
    Step::moved(word, next, reason, detail, now)
}

fn rate_detail(rule: &RateRule, hits: u64, calls: u64, slow: bool) -> TransitionDetail {
    TransitionDetail {
        failures: (!slow).then_some(hits),
        slow: slow.then_some(hits),
        calls: Some(calls),
        rate: Some(if calls == 0 {
            0.0
        } else {
            hits as f64 / calls as f64
        }),
        threshold: Some(rule.threshold),
        window_ms: Some(rule.window_ns / 1_000_000),
        ..TransitionDetail::default()
    }
}

/// The outcome of a call admitted while closed in generation `generation`.
pub(crate) fn closed_outcome(
    word: Word,
    generation: u16,
    outcome: Outcome,
    verdict: Verdict,
    now: Instant,
    policy: &Policy,
) -> Step {
    let Some(Phase::Closed {
        consecutive_failures,
    }) = word.phase_for_outcome_of(generation)
    else {
        return Step::stay(word);
    };
    let slow_trip = |word| match (verdict.slow_call, policy.slow_call.as_ref()) {
        (Some((slow, calls)), Some(rule)) => Some(trip(
            word,
            now,
            policy,
            Reason::SlowCallRate,
            rate_detail(rule, slow, calls, true),
        )),
        _ => None,
    };
    match outcome {
        Outcome::Ignored => Step::stay(word),
        Outcome::Success => {
            if let Some(step) = slow_trip(word) {
                step
            } else if consecutive_failures != 0 {
                Step::stay(word.with_phase(Phase::CLOSED))
            } else {
                Step::stay(word)
            }
        }
        Outcome::Failure => {
            let failures = consecutive_failures.saturating_add(1);
            if policy.consecutive_failures.is_some_and(|k| failures >= k) {
                let detail = TransitionDetail {
                    failures: Some(u64::from(failures)),
                    ..TransitionDetail::default()
                };
                return trip(word, now, policy, Reason::ConsecutiveFailures, detail);
            }
            if let (Some((hits, calls)), Some(rule)) =
                (verdict.failure_rate, policy.failure_rate.as_ref())
            {
                return trip(
                    word,
                    now,
                    policy,
                    Reason::FailureRate,
                    rate_detail(rule, hits, calls, false),
                );
            }
            if let (Some((hits, calls)), Some(rule)) =
                (verdict.last_calls, policy.last_calls.as_ref())
            {
                let detail = TransitionDetail {
                    failures: Some(hits),
                    calls: Some(calls),
                    rate: Some(hits as f64 / calls.max(1) as f64),
                    threshold: Some(rule.threshold),
                    window_calls: Some(rule.calls),
                    ..TransitionDetail::default()
                };
                return trip(word, now, policy, Reason::LastCallsFailureRate, detail);
            }
            if let Some(step) = slow_trip(word) {
                return step;
            }
            Step::stay(word.with_phase(Phase::Closed {
                consecutive_failures: failures,
            }))
        }
    }
}

/// The outcome of a half-open probe admitted in generation `generation` (`Ignored` also for a dropped permit).
pub(crate) fn probe_outcome(
    word: Word,
    generation: u16,
    outcome: Outcome,
    now: Instant,
    policy: &Policy,
) -> Step {
    let Some(Phase::HalfOpen {
        in_flight,
        successes,
        trips,
    }) = word.phase_for_outcome_of(generation)
    else {
        return Step::stay(word);
    };
    let in_flight = in_flight.saturating_sub(1);
    match outcome {
        Outcome::Ignored => Step::stay(word.with_phase(Phase::HalfOpen {
            in_flight,
            successes,
            trips,
        })),
        Outcome::Success => {
            let successes = successes.saturating_add(1);
            if successes >= policy.successes_to_close {
                let next = word.transition_to(Phase::CLOSED);
                let detail = TransitionDetail {
                    successes: Some(u64::from(successes)),
                    ..TransitionDetail::default()
                };
                Step::moved(word, next, Reason::ProbesSucceeded, detail, now)
            } else {
                Step::stay(word.with_phase(Phase::HalfOpen {
                    in_flight,
                    successes,
                    trips,
                }))
            }
        }
        Outcome::Failure => {
            let trips = trips.saturating_add(1).min(63);
            let window_ns = policy.open_window_ns(trips, now.as_nanos());
            let next = word.transition_to(Phase::Open {
                until_ms: until_ms(now.as_nanos(), window_ns),
                trips,
            });
            let detail = TransitionDetail {
                successes: Some(u64::from(successes)),
                trips: Some(trips),
                open_ms: Some(window_ns.div_ceil(1_000_000)),
                ..TransitionDetail::default()
            };
            Step::moved(word, next, Reason::ProbeFailed, detail, now)
        }
    }
}

/// A new config: mode and detector flags. Same mode keeps the state; another mode starts over closed (or open
/// for forced-open), as a `forced` / `config_changed` transition when the state differs.
pub(crate) fn reconfigure(
    word: Word,
    mode: Mode,
    timed: bool,
    windowed: bool,
    now: Instant,
) -> Step {
    let flagged = word.with_flags(mode, timed, windowed);
    if mode == word.mode() {
        return Step::stay(flagged);
    }
    let target = Phase::start_in(mode);
    if target.state() == word.state() {
        return Step::stay(flagged.with_phase(target));
    }
    let reason = if mode == Mode::ForcedOpen {
        Reason::Forced
    } else {
        Reason::ConfigChanged
    };
    let detail = TransitionDetail {
        mode: Some(mode),
        ..TransitionDetail::default()
    };
    Step::moved(word, flagged.transition_to(target), reason, detail, now)
}

/// Back to closed with nothing counted (forced-open stays open).
pub(crate) fn reset(word: Word, now: Instant) -> Step {
    if word.mode() == Mode::ForcedOpen {
        return Step::stay(word);
    }
    if word.is_closed() {
        return Step::stay(word.with_phase(Phase::CLOSED));
    }
    let detail = TransitionDetail {
        reset: Some(true),
        ..TransitionDetail::default()
    };
    Step::moved(
        word,
        word.transition_to(Phase::CLOSED),
        Reason::Forced,
        detail,
        now,
    )
}

#[cfg(test)]
mod tests;
