//! Concurrency: many threads against one breaker. Half-open never admits more than N probes at once, and that was
//! tested under real contention (the test asserts threads were refused because others held every slot, and that
//! the slots were full at the same moment); a transition raced by many threads is emitted exactly once.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use breaker::{
    BreakerConfig, CircuitBreaker, ManualClock, MemorySink, Outcome, Probes, Reason, State,
};

const THREADS: usize = 8;

fn half_open_breaker(probes: u32) -> (Arc<ManualClock>, CircuitBreaker, Arc<MemorySink>) {
    let mut config = breaker::RawBreakerConfig::default();
    config.half_open.probes = Probes::limited(probes).expect("≥1");
    config.half_open.successes_to_close = 1_000_000;
    let config = config.build().expect("a valid test config");
    let clock = Arc::new(ManualClock::new());
    let sink = MemorySink::new();
    let breaker = CircuitBreaker::new("a->b", config, clock.clone()).with_sink(sink.clone());
    for _ in 0..5 {
        breaker
            .try_acquire()
            .expect("closed")
            .record(Outcome::Failure);
    }
    clock.advance(Duration::from_secs(30));
    (clock, breaker, sink)
}

#[test]
fn half_open_admits_at_most_n_under_contention() {
    for probes in [1, 3] {
        let (_clock, breaker, _sink) = half_open_breaker(probes);
        let holding = AtomicUsize::new(0);
        let max_holding = AtomicUsize::new(0);
        let refused_while_idle = AtomicUsize::new(0);
        let admitted = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    start.wait();
                    for round in 0..20_000 {
                        match breaker.try_acquire() {
                            Ok(permit) => {
                                let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                                max_holding.fetch_max(now, Ordering::SeqCst);
                                admitted.fetch_add(1, Ordering::Relaxed);
                                if round % 7 == 0 {
                                    std::thread::yield_now();
                                }
                                holding.fetch_sub(1, Ordering::SeqCst);
                                if round % 2 == 0 {
                                    permit.record(Outcome::Success);
                                } else {
                                    drop(permit);
                                }
                            }
                            // This thread holds nothing: every slot was held by other threads.
                            Err(_) => {
                                refused_while_idle.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        let max_holding = max_holding.into_inner();
        let refused = refused_while_idle.into_inner();
        assert!(
            max_holding <= probes as usize,
            "{max_holding} probes held at once with N = {probes}"
        );
        assert!(
            refused > 0,
            "no thread was ever refused: no contention happened"
        );
        assert!(admitted.into_inner() > 0);
        if probes > 1 {
            assert!(
                max_holding >= 2,
                "threads never overlapped (max {max_holding})"
            );
        }
        let snapshot = breaker.snapshot();
        assert_eq!(snapshot.state, State::HalfOpen);
        assert_eq!(snapshot.probes_in_flight, 0, "every slot was given back");
        assert_eq!(snapshot.counters.rejected as usize, refused);
    }
}

#[test]
fn a_raced_transition_is_emitted_once() {
    let clock = Arc::new(ManualClock::new());
    let sink = MemorySink::new();
    let breaker = CircuitBreaker::new("a->b", BreakerConfig::default(), clock.clone())
        .with_sink(sink.clone());
    let start = Barrier::new(THREADS);
    let saw_open = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                start.wait();
                for _ in 0..1_000 {
                    match breaker.try_acquire() {
                        Ok(permit) => permit.record(Outcome::Failure),
                        Err(_) => saw_open.store(true, Ordering::Relaxed),
                    }
                }
            });
        }
    });
    assert!(saw_open.into_inner());
    clock.advance(Duration::from_secs(30));
    let start = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                start.wait();
                for _ in 0..1_000 {
                    assert_ne!(breaker.state(), State::Closed);
                }
            });
        }
    });
    let reasons: Vec<Reason> = sink.events().iter().map(|e| e.reason).collect();
    assert_eq!(
        reasons,
        vec![Reason::ConsecutiveFailures, Reason::CooldownElapsed]
    );
    let seqs: Vec<u64> = sink.events().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
    let counters = breaker.snapshot().counters;
    assert_eq!(
        counters.permitted + counters.rejected,
        (THREADS * 1_000) as u64,
        "no call lost from the counters"
    );
    assert_eq!(counters.failures, counters.permitted);
}

#[test]
fn counters_from_many_threads_add_up() {
    let breaker = CircuitBreaker::new(
        "a->b",
        BreakerConfig::default(),
        Arc::new(ManualClock::new()),
    );
    let start = Barrier::new(THREADS);
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                start.wait();
                for _ in 0..10_000 {
                    breaker
                        .try_acquire()
                        .expect("closed")
                        .record(Outcome::Success);
                }
            });
        }
    });
    let counters = breaker.snapshot().counters;
    assert_eq!((counters.permitted, counters.successes), (80_000, 80_000));
}
