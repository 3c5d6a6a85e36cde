//! Pure transition tests: words in, words out, time as an argument.

use std::time::Duration;

use super::*;
use crate::config::{BreakerConfig, Probes, RawBreakerConfig};

fn policy(config: &BreakerConfig) -> Policy {
    Policy::compile(config, 1, "a->b")
}

fn at(secs: u64) -> Instant {
    Instant::from(Duration::from_secs(secs))
}

#[test]
fn the_kth_failure_trips_in_one_step() {
    let p = policy(&BreakerConfig::default());
    let mut word = Word::initial(Mode::Enforce, false, false);
    for _ in 0..4 {
        let step = closed_outcome(word, 0, Outcome::Failure, Verdict::default(), at(1), &p);
        assert!(step.transition.is_none());
        word = step.next;
    }
    let step = closed_outcome(word, 0, Outcome::Failure, Verdict::default(), at(1), &p);
    let transition = step.transition.expect("trips");
    assert_eq!(
        (transition.from, transition.to, transition.reason),
        (State::Closed, State::Open, Reason::ConsecutiveFailures)
    );
    assert_eq!(
        step.next.phase(),
        Phase::Open {
            until_ms: 31_000,
            trips: 1
        }
    );
    assert_eq!(step.next.generation(), 1);
}

#[test]
fn observe_is_idempotent_and_dated_at_the_window_end() {
    let word = Word::initial(Mode::Enforce, false, false).transition_to(Phase::Open {
        until_ms: 30_000,
        trips: 1,
    });
    assert!(observe(word, at(29)).transition.is_none());
    let step = observe(word, at(45));
    assert_eq!(step.transition.as_ref().map(|t| t.at), Some(at(30)));
    assert!(observe(step.next, at(46)).transition.is_none());
}

#[test]
fn acquire_in_half_open_counts_slots() {
    let mut config = RawBreakerConfig::default();
    config.half_open.probes = Probes::limited(2).expect("2");
    let p = policy(&BreakerConfig::try_from(config).expect("valid"));
    let word = Word::initial(Mode::Enforce, false, false).transition_to(Phase::Open {
        until_ms: 1_000,
        trips: 1,
    });
    let (first, admission) = acquire(word, at(1), &p);
    assert_eq!(admission, Admission::Probe);
    assert_eq!(
        first.transition.map(|t| t.reason),
        Some(Reason::CooldownElapsed)
    );
    let (second, admission) = acquire(first.next, at(1), &p);
    assert_eq!(admission, Admission::Probe);
    let (third, admission) = acquire(second.next, at(1), &p);
    assert_eq!(admission, Admission::Rejected);
    assert_eq!(third.next, second.next);
    let freed = probe_outcome(
        second.next,
        second.next.generation(),
        Outcome::Ignored,
        at(1),
        &p,
    );
    assert_eq!(
        freed.next.phase(),
        Phase::HalfOpen {
            in_flight: 1,
            successes: 0,
            trips: 1
        }
    );
}

#[test]
fn shadow_lets_refused_callers_through_unwatched() {
    let p = policy(&BreakerConfig::default());
    let word = Word::initial(Mode::Shadow, false, false).transition_to(Phase::Open {
        until_ms: 1_000,
        trips: 1,
    });
    assert_eq!(
        acquire(word, at(0), &p).1,
        Admission::Unwatched { would_reject: true }
    );
}

#[test]
fn reconfigure_keeps_state_within_a_mode() {
    let word = Word::initial(Mode::Enforce, false, false).transition_to(Phase::Open {
        until_ms: 1_000,
        trips: 1,
    });
    let same = reconfigure(word, Mode::Enforce, true, true, at(0));
    assert!(same.transition.is_none());
    assert!(same.next.timed() && same.next.windowed());
    assert_eq!(same.next.phase(), word.phase());
    let other = reconfigure(word, Mode::Disabled, false, false, at(0));
    assert_eq!(
        other.transition.map(|t| t.reason),
        Some(Reason::ConfigChanged)
    );
    assert_eq!(other.next.state(), State::Closed);
}
