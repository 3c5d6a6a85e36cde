//! Every transition and reason of the breaker, driven with a manual clock through the public API.

use std::sync::Arc;
use std::time::Duration;

use breaker::{
    BreakerConfig, CircuitBreaker, MANUAL_CLOCK_UNIX_ORIGIN_MS, ManualClock, MemorySink, Mode,
    Outcome, Probes, RawBreakerConfig, RawFailureRateConfig, RawLastCallsConfig, RawSlowCallConfig,
    Reason, State, TransitionEvent,
};

struct Fixture {
    clock: Arc<ManualClock>,
    breaker: CircuitBreaker,
    sink: Arc<MemorySink>,
}

fn fixture(config: RawBreakerConfig) -> Fixture {
    let config = config.build().expect("test config is valid");
    let clock = Arc::new(ManualClock::new());
    let sink = MemorySink::new();
    let breaker = CircuitBreaker::new("frontend->checkout", config, clock.clone())
        .with_service("frontend")
        .with_sink(sink.clone());
    Fixture {
        clock,
        breaker,
        sink,
    }
}

impl Fixture {
    fn call(&self, outcome: Outcome) -> bool {
        match self.breaker.try_acquire() {
            Ok(permit) => {
                permit.record(outcome);
                true
            }
            Err(_) => false,
        }
    }

    fn fail(&self, n: usize) {
        for _ in 0..n {
            assert!(self.call(Outcome::Failure), "call rejected while failing");
        }
    }

    fn advance(&self, d: Duration) {
        self.clock.advance(d);
    }

    fn transitions(&self) -> Vec<(State, State, Reason)> {
        self.sink
            .events()
            .iter()
            .map(|e| (e.from, e.to, e.reason))
            .collect()
    }

    fn last(&self) -> TransitionEvent {
        self.sink.events().last().cloned().expect("an event")
    }
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn consecutive_failures_trip_and_a_success_resets_the_count() {
    let f = fixture(RawBreakerConfig::default());
    f.fail(4);
    assert!(f.call(Outcome::Success));
    f.fail(4);
    assert!(
        f.call(Outcome::Ignored),
        "ignored outcomes neither count nor reset"
    );
    assert_eq!(f.breaker.snapshot().consecutive_failures, 4);
    assert_eq!(f.breaker.state(), State::Closed);
    f.advance(Duration::from_millis(1500));
    f.fail(1);
    assert_eq!(f.breaker.state(), State::Open);
    let event = f.last();
    assert_eq!(
        (event.from, event.to, event.reason),
        (State::Closed, State::Open, Reason::ConsecutiveFailures)
    );
    assert_eq!(event.detail.failures, Some(5));
    assert_eq!(event.detail.open_ms, Some(30_000));
    assert_eq!(event.at_ms, MANUAL_CLOCK_UNIX_ORIGIN_MS + 1500);
    assert_eq!((event.seq, event.shadow), (1, false));
    assert_eq!(
        (event.service.as_str(), event.breaker.as_str()),
        ("frontend", "frontend->checkout")
    );
    let rejected = f.breaker.try_acquire().expect_err("open rejects");
    assert_eq!(
        rejected.to_string(),
        "circuit breaker frontend->checkout is open"
    );
    assert_eq!(rejected.state, State::Open);
    let counters = f.breaker.snapshot().counters;
    assert_eq!(
        (
            counters.permitted,
            counters.successes,
            counters.failures,
            counters.ignored,
            counters.rejected,
            counters.opens
        ),
        (11, 1, 9, 1, 1, 1)
    );
}

#[test]
fn open_becomes_half_open_without_a_call_with_one_event() {
    let f = fixture(RawBreakerConfig::default());
    f.fail(5);
    let snapshot = f.breaker.snapshot();
    assert_eq!(
        snapshot.open_until_ms,
        Some(MANUAL_CLOCK_UNIX_ORIGIN_MS + 30_000)
    );
    f.advance(Duration::from_millis(29_999));
    assert_eq!(f.breaker.state(), State::Open);
    f.advance(Duration::from_millis(1));
    assert_eq!(f.breaker.state(), State::HalfOpen);
    f.advance(secs(5));
    assert_eq!(f.breaker.state(), State::HalfOpen);
    assert_eq!(f.breaker.snapshot().state, State::HalfOpen);
    let events = f.sink.events();
    assert_eq!(
        events.len(),
        2,
        "exactly one event per transition: {events:?}"
    );
    assert_eq!(events[1].reason, Reason::CooldownElapsed);
    assert_eq!(
        events[1].at_ms,
        MANUAL_CLOCK_UNIX_ORIGIN_MS + 30_000,
        "dated at the window's end"
    );
    assert_eq!(events[1].seq, 2);
}

#[test]
fn half_open_admits_n_probes_and_closes_after_s_successes() {
    let mut config = RawBreakerConfig::default();
    config.half_open.probes = Probes::limited(2).expect("2");
    config.half_open.successes_to_close = 3;
    let f = fixture(config);
    f.fail(5);
    f.advance(secs(30));
    let first = f.breaker.try_acquire().expect("probe 1");
    let second = f.breaker.try_acquire().expect("probe 2");
    assert!(first.is_probe() && second.is_probe());
    let third = f.breaker.try_acquire().expect_err("only two probes");
    assert_eq!(third.state, State::HalfOpen);
    first.record(Outcome::Success);
    assert_eq!(f.breaker.snapshot().probe_successes, 1);
    let third = f.breaker.try_acquire().expect("a slot was freed");
    second.record(Outcome::Success);
    assert_eq!(f.breaker.state(), State::HalfOpen);
    third.record(Outcome::Success);
    assert_eq!(f.breaker.state(), State::Closed);
    let event = f.last();
    assert_eq!(
        (event.from, event.to, event.reason),
        (State::HalfOpen, State::Closed, Reason::ProbesSucceeded)
    );
    assert_eq!(event.detail.successes, Some(3));
}

#[test]
fn probe_failure_reopens_with_backoff_capped_and_a_close_resets_it() {
    let mut config = RawBreakerConfig::default();
    config.open.base = secs(10);
    config.open.backoff = 2.0;
    config.open.max = secs(35);
    config.half_open.successes_to_close = 1;
    let f = fixture(config);
    f.fail(5);
    let mut windows = vec![f.last().detail.open_ms];
    for _ in 0..3 {
        f.advance(secs(60));
        assert!(f.call(Outcome::Failure), "probe admitted");
        let event = f.last();
        assert_eq!(
            (event.from, event.to, event.reason),
            (State::HalfOpen, State::Open, Reason::ProbeFailed)
        );
        windows.push(event.detail.open_ms);
    }
    assert_eq!(
        windows,
        vec![Some(10_000), Some(20_000), Some(35_000), Some(35_000)]
    );
    assert_eq!(f.breaker.snapshot().trips, 4);
    f.advance(Duration::from_millis(34_999));
    assert_eq!(f.breaker.state(), State::Open);
    f.advance(Duration::from_millis(1));
    assert!(f.call(Outcome::Success));
    assert_eq!(f.breaker.state(), State::Closed);
    f.fail(5);
    assert_eq!(
        f.last().detail.open_ms,
        Some(10_000),
        "backoff restarts after a close"
    );
}

#[test]
fn a_dropped_permit_frees_its_probe_slot_and_counts_as_ignored() {
    let f = fixture(RawBreakerConfig::default());
    f.fail(5);
    f.advance(secs(30));
    let probe = f.breaker.try_acquire().expect("probe");
    assert!(f.breaker.try_acquire().is_err());
    drop(probe);
    assert_eq!(f.breaker.snapshot().probes_in_flight, 0);
    let probe = f.breaker.try_acquire().expect("slot freed");
    probe.record(Outcome::Success);
    assert_eq!(f.breaker.snapshot().counters.ignored, 1);
    assert_eq!(f.breaker.state(), State::HalfOpen);
}

#[test]
fn stale_outcomes_do_not_move_the_machine() {
    let f = fixture(RawBreakerConfig::default());
    let slow_closed_call = f.breaker.try_acquire().expect("closed");
    f.fail(5);
    f.advance(secs(30));
    let probe = f.breaker.try_acquire().expect("probe");
    slow_closed_call.record(Outcome::Failure);
    assert_eq!(
        f.breaker.state(),
        State::HalfOpen,
        "a failure from the closed period is stale"
    );
    probe.record(Outcome::Success);
    assert_eq!(f.breaker.state(), State::HalfOpen);
    assert_eq!(
        f.breaker.snapshot().counters.failures,
        6,
        "but it is counted"
    );
}

fn rate_config(threshold: f64, window: Duration, min_calls: u32) -> RawBreakerConfig {
    let mut config = RawBreakerConfig::default();
    config.trip.consecutive_failures = None;
    config.trip.failure_rate = Some(RawFailureRateConfig {
        threshold,
        window,
        min_calls,
    });
    config
}

#[test]
fn failure_rate_trips_once_min_calls_are_in_the_window() {
    let f = fixture(rate_config(0.5, secs(10), 6));
    for _ in 0..3 {
        assert!(f.call(Outcome::Success));
        f.fail(1);
    }
    assert_eq!(f.breaker.state(), State::Open, "3 of 6 = 0.5");
    let event = f.last();
    assert_eq!(event.reason, Reason::FailureRate);
    assert_eq!(
        (event.detail.failures, event.detail.calls),
        (Some(3), Some(6))
    );
    assert_eq!(
        (
            event.detail.rate,
            event.detail.threshold,
            event.detail.window_ms
        ),
        (Some(0.5), Some(0.5), Some(10_000))
    );
}

fn last_calls_config(threshold: f64, calls: u32, min_calls: u32) -> RawBreakerConfig {
    let mut config = RawBreakerConfig::default();
    config.trip.consecutive_failures = None;
    config.trip.last_calls = Some(RawLastCallsConfig {
        threshold,
        calls,
        min_calls,
    });
    config
}

#[test]
fn last_calls_trips_on_the_rate_over_the_latest_calls_whatever_the_time() {
    // 25 % of calls failing, one in four: blind to 5 consecutive failures, seen by a window of the last 8 calls.
    let f = fixture(last_calls_config(0.25, 8, 8));
    for _ in 0..7 {
        assert!(f.call(Outcome::Success));
        f.advance(secs(3_600));
    }
    f.fail(1);
    assert_eq!(f.breaker.state(), State::Closed, "1 of 8 is below 0.25");
    for _ in 0..2 {
        assert!(f.call(Outcome::Ignored), "ignored calls are not counted");
    }
    f.call(Outcome::Success);
    f.fail(1);
    assert_eq!(
        f.breaker.state(),
        State::Open,
        "the last 8: 2 failures, 0.25"
    );
    let event = f.last();
    assert_eq!(event.reason, Reason::LastCallsFailureRate);
    assert_eq!(
        (
            event.detail.failures,
            event.detail.calls,
            event.detail.rate,
            event.detail.threshold,
            event.detail.window_calls,
            event.detail.window_ms,
        ),
        (Some(2), Some(8), Some(0.25), Some(0.25), Some(8), None)
    );
}

#[test]
fn last_calls_forgets_the_calls_before_a_close_and_the_oldest_ones() {
    let f = fixture(last_calls_config(0.5, 4, 4));
    f.fail(1);
    for _ in 0..4 {
        assert!(f.call(Outcome::Success));
    }
    f.fail(1);
    assert_eq!(
        f.breaker.state(),
        State::Closed,
        "the first failure left the window of 4: 1 of 4"
    );
    f.fail(1);
    assert_eq!(f.breaker.state(), State::Open, "2 of the last 4");
    f.advance(secs(30));
    for _ in 0..2 {
        assert!(f.call(Outcome::Success), "probes");
    }
    assert_eq!(f.breaker.state(), State::Closed);
    f.fail(3);
    assert_eq!(
        f.breaker.state(),
        State::Closed,
        "3 calls since the close: below min_calls"
    );
    f.fail(1);
    assert_eq!(f.breaker.state(), State::Open);
}

#[test]
fn failure_rate_ignores_calls_that_left_the_window_and_ignored_outcomes() {
    let f = fixture(rate_config(0.5, secs(10), 4));
    f.fail(3);
    f.advance(secs(11));
    for _ in 0..4 {
        assert!(f.call(Outcome::Ignored));
    }
    for _ in 0..3 {
        assert!(f.call(Outcome::Success));
    }
    f.fail(1);
    assert_eq!(
        f.breaker.state(),
        State::Closed,
        "1 of 4 once the old failures left the window"
    );
    f.fail(2);
    assert_eq!(f.breaker.state(), State::Open, "3 of 6");
}

#[test]
fn the_window_is_cleared_by_a_close() {
    let mut config = rate_config(0.5, secs(60), 4);
    config.open.base = secs(1);
    config.half_open.successes_to_close = 1;
    let f = fixture(config);
    f.fail(4);
    assert_eq!(f.breaker.state(), State::Open);
    f.advance(secs(1));
    assert!(f.call(Outcome::Success));
    assert_eq!(f.breaker.state(), State::Closed);
    f.fail(1);
    assert_eq!(
        f.breaker.state(),
        State::Closed,
        "the four old failures are gone"
    );
}

fn slow_config() -> RawBreakerConfig {
    let mut config = RawBreakerConfig::default();
    config.trip.consecutive_failures = None;
    config.trip.slow_call = Some(RawSlowCallConfig {
        duration: Duration::from_millis(100),
        rate: 0.5,
        window: secs(10),
        min_calls: 4,
    });
    config
}

#[test]
fn slow_calls_trip_by_rate_timed_by_the_caller() {
    let f = fixture(slow_config());
    for elapsed in [10, 100, 20, 150] {
        f.breaker
            .try_acquire()
            .expect("closed")
            .record_timed(Outcome::Success, Duration::from_millis(elapsed));
    }
    assert_eq!(f.breaker.state(), State::Open);
    let event = f.last();
    assert_eq!(event.reason, Reason::SlowCallRate);
    assert_eq!((event.detail.slow, event.detail.calls), (Some(2), Some(4)));
    assert_eq!(f.breaker.snapshot().counters.slow, 2);
}

#[test]
fn slow_calls_trip_by_rate_timed_by_the_breaker_clock() {
    let f = fixture(slow_config());
    for step in [1, 200, 1, 200] {
        let permit = f.breaker.try_acquire().expect("closed");
        f.advance(Duration::from_millis(step));
        permit.record(Outcome::Failure);
    }
    assert_eq!(f.breaker.state(), State::Open);
    assert_eq!(f.last().reason, Reason::SlowCallRate);
}

/// A permit dropped without an outcome (the caller's caller gave up first) after it waited past the slow-call
/// threshold is a failure and a slow call; dropped before it, it is ignored. Five such hangs trip
/// `consecutive_failures = 5`, which ignoring them never would.
#[test]
fn a_permit_dropped_after_waiting_past_the_slow_call_threshold_counts_as_a_failure() {
    let mut config = slow_config();
    config.trip.consecutive_failures = Some(5);
    config.trip.slow_call.as_mut().unwrap().min_calls = 100;
    let f = fixture(config);

    let early = f.breaker.try_acquire().expect("closed");
    f.advance(Duration::from_millis(50));
    drop(early);
    let counters = f.breaker.snapshot().counters;
    assert_eq!(
        (counters.ignored, counters.failures, counters.slow),
        (1, 0, 0)
    );

    for _ in 0..5 {
        assert_eq!(f.breaker.state(), State::Closed);
        let abandoned = f.breaker.try_acquire().expect("closed");
        f.advance(Duration::from_millis(150));
        drop(abandoned);
    }
    let counters = f.breaker.snapshot().counters;
    assert_eq!(
        (counters.ignored, counters.failures, counters.slow),
        (1, 5, 5)
    );
    assert_eq!(f.breaker.state(), State::Open);
    assert_eq!(f.last().reason, Reason::ConsecutiveFailures);
}

/// Without a slow-call detector a dropped permit is ignored, however long it waited (nothing says how long is
/// too long).
#[test]
fn without_a_slow_call_detector_a_dropped_permit_is_ignored() {
    let mut config = RawBreakerConfig::default();
    config.trip.consecutive_failures = Some(1);
    let f = fixture(config);
    let permit = f.breaker.try_acquire().expect("closed");
    f.advance(secs(60));
    drop(permit);
    let counters = f.breaker.snapshot().counters;
    assert_eq!((counters.ignored, counters.failures), (1, 0));
    assert_eq!(f.breaker.state(), State::Closed);
}

#[test]
fn detectors_combine_and_the_first_to_fire_names_the_reason() {
    let mut config = rate_config(0.9, secs(10), 100);
    config.trip.consecutive_failures = Some(3);
    let f = fixture(config);
    f.fail(3);
    assert_eq!(f.last().reason, Reason::ConsecutiveFailures);
    let mut config = rate_config(0.5, secs(10), 4);
    config.trip.consecutive_failures = Some(3);
    let f = fixture(config);
    f.fail(2);
    assert!(f.call(Outcome::Success));
    assert!(f.call(Outcome::Success));
    f.fail(1);
    assert_eq!(f.last().reason, Reason::FailureRate);
}

#[test]
fn shadow_mode_never_rejects_but_reports_what_it_would_do() {
    let config = RawBreakerConfig {
        mode: Mode::Shadow,
        ..RawBreakerConfig::default()
    };
    let f = fixture(config);
    f.fail(5);
    assert_eq!(f.breaker.state(), State::Open);
    assert!(f.call(Outcome::Failure), "shadow lets the call through");
    assert!(f.call(Outcome::Success));
    f.advance(secs(30));
    let probe = f.breaker.try_acquire().expect("probe");
    assert!(probe.is_probe());
    assert!(
        f.call(Outcome::Failure),
        "over the probe limit: let through, not counted by the machine"
    );
    assert_eq!(f.breaker.state(), State::HalfOpen);
    probe.record(Outcome::Failure);
    assert_eq!(
        f.transitions(),
        vec![
            (State::Closed, State::Open, Reason::ConsecutiveFailures),
            (State::Open, State::HalfOpen, Reason::CooldownElapsed),
            (State::HalfOpen, State::Open, Reason::ProbeFailed),
        ]
    );
    assert!(f.sink.events().iter().all(|e| e.shadow));
    let counters = f.breaker.snapshot().counters;
    assert_eq!(
        (
            counters.rejected,
            counters.shadow_rejected,
            counters.permitted
        ),
        (0, 3, 9)
    );
}

#[test]
fn forced_open_rejects_and_config_changes_emit_their_reason() {
    let f = fixture(RawBreakerConfig::default());
    let forced = RawBreakerConfig {
        mode: Mode::ForcedOpen,
        ..RawBreakerConfig::default()
    };
    f.breaker.set_config(forced.build().expect("valid"));
    assert_eq!(f.breaker.state(), State::Open);
    f.advance(secs(3600));
    assert!(
        f.breaker.try_acquire().is_err(),
        "forced open never cools down"
    );
    assert_eq!(f.breaker.snapshot().open_until_ms, None);
    f.breaker.set_config(BreakerConfig::default());
    assert_eq!(f.breaker.state(), State::Closed);
    assert_eq!(
        f.transitions(),
        vec![
            (State::Closed, State::Open, Reason::Forced),
            (State::Open, State::Closed, Reason::ConfigChanged)
        ]
    );
    assert_eq!(f.sink.events()[0].detail.mode, Some(Mode::ForcedOpen));
    // Same mode, other thresholds: the state is kept and nothing is emitted.
    f.fail(5);
    let mut gentler = RawBreakerConfig::default();
    gentler.trip.consecutive_failures = Some(50);
    f.breaker.set_config(gentler.build().expect("valid"));
    assert_eq!(f.breaker.state(), State::Open);
    assert_eq!(f.sink.events().len(), 3);
}

#[test]
fn disabled_admits_everything_and_detects_nothing() {
    let config = RawBreakerConfig {
        mode: Mode::Disabled,
        ..RawBreakerConfig::default()
    };
    let f = fixture(config);
    f.fail(100);
    assert_eq!(f.breaker.state(), State::Closed);
    assert!(f.sink.events().is_empty());
    assert_eq!(f.breaker.snapshot().counters.failures, 100);
    assert_eq!(f.breaker.snapshot().mode, Mode::Disabled);
}

#[test]
fn reset_closes_and_clears_counters() {
    let f = fixture(RawBreakerConfig::default());
    f.fail(5);
    f.breaker.reset();
    assert_eq!(f.breaker.state(), State::Closed);
    let event = f.last();
    assert_eq!(
        (event.from, event.to, event.reason, event.detail.reset),
        (State::Open, State::Closed, Reason::Forced, Some(true))
    );
    let counters = f.breaker.snapshot().counters;
    assert_eq!(
        (counters.failures, counters.opens, counters.open_ms),
        (0, 0, 0)
    );
    f.fail(4);
    assert_eq!(
        f.breaker.state(),
        State::Closed,
        "the failure count restarted"
    );
}

#[test]
fn time_in_each_state_is_accounted() {
    let f = fixture(RawBreakerConfig::default());
    f.advance(secs(10));
    f.fail(5);
    f.advance(secs(40));
    let probe = f.breaker.try_acquire().expect("probe");
    probe.record(Outcome::Success);
    f.advance(secs(2));
    assert!(f.call(Outcome::Success));
    f.advance(secs(3));
    let counters = f.breaker.snapshot().counters;
    assert_eq!(
        (counters.closed_ms, counters.open_ms, counters.half_open_ms),
        (13_000, 30_000, 12_000)
    );
    let seqs: Vec<u64> = f.sink.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2, 3]);
}

#[test]
fn probes_all_admits_every_caller() {
    let mut config = RawBreakerConfig::default();
    config.half_open.probes = Probes::All;
    let f = fixture(config);
    f.fail(5);
    f.advance(secs(30));
    let permits: Vec<_> = (0..1000)
        .map(|_| f.breaker.try_acquire().expect("the herd passes"))
        .collect();
    assert_eq!(f.breaker.snapshot().probes_in_flight, 1000);
    drop(permits);
    assert_eq!(f.breaker.snapshot().probes_in_flight, 0);
}

#[test]
fn jitter_is_seeded() {
    let open_ms = |seed: u64| {
        let mut config = RawBreakerConfig::default();
        config.open.jitter = 0.5;
        config.open.seed = Some(seed);
        let f = fixture(config);
        f.fail(5);
        f.last().detail.open_ms.expect("open_ms")
    };
    assert_eq!(open_ms(1), open_ms(1));
    let spread: std::collections::BTreeSet<u64> = (0..20).map(open_ms).collect();
    assert!(spread.len() > 10, "{spread:?}");
    assert!(
        spread.iter().all(|ms| (15_000..=45_000).contains(ms)),
        "{spread:?}"
    );
}

/// A sink that looks at the breaker from inside `emit` (a snapshot, which may itself cause the Open → HalfOpen
/// transition) must neither deadlock nor reorder events.
#[test]
fn a_sink_may_call_back_into_the_breaker() {
    use std::sync::OnceLock;

    struct Looking {
        breaker: OnceLock<Arc<CircuitBreaker>>,
        clock: Arc<ManualClock>,
        seen: parking_lot::Mutex<Vec<(u64, State)>>,
    }
    impl breaker::EventSink for Looking {
        fn emit(&self, event: &TransitionEvent) {
            if let Some(breaker) = self.breaker.get() {
                if event.to == State::Open {
                    // Let the window end, then look: the snapshot performs Open → HalfOpen from inside the sink.
                    self.clock.advance(secs(30));
                }
                let state = breaker.snapshot().state;
                self.seen.lock().push((event.seq, state));
            }
        }
    }
    let clock = Arc::new(ManualClock::new());
    let sink = Arc::new(Looking {
        breaker: OnceLock::new(),
        clock: clock.clone(),
        seen: Default::default(),
    });
    let breaker = Arc::new(
        CircuitBreaker::new("a->b", BreakerConfig::default(), clock).with_sink(sink.clone()),
    );
    sink.breaker.set(Arc::clone(&breaker)).ok();
    for _ in 0..5 {
        breaker
            .try_acquire()
            .expect("closed")
            .record(Outcome::Failure);
    }
    assert_eq!(
        *sink.seen.lock(),
        vec![(1, State::HalfOpen), (2, State::HalfOpen)]
    );
}
