//! Call-path cost of this breaker against `recloser` 1.4, `failsafe` 1.3 and a direct call, in one criterion run.
//! Every breaker is built once outside the measured loop. Groups:
//! - `closed_consecutive`: closed, consecutive-failure policy, one thread;
//! - `closed_window`: closed, failure rate over a time window (the peers' nearest equivalents), one thread;
//! - `closed_count_window`: closed, failure rate over the last 100 calls (`trip.last_calls`) against recloser's
//!   ring of 100 calls (the same detector: Resilience4j's `COUNT_BASED` default), one thread;
//! - `shared_threads`: one breaker shared by 1 or 2 threads (time for each thread to make `iters` calls), the
//!   count windows among them (their numbering of calls is a shared write);
//! - `open_reject`: cost of a rejection while open.
//!
//! Run: `cargo bench -p breaker --bench closed_path`.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use breaker::{
    BreakerConfig, CircuitBreaker, Clock, CoarseClock, Outcome, RawFailureRateConfig,
    RawLastCallsConfig, SystemClock,
};
use criterion::{Criterion, criterion_group, criterion_main};
use failsafe::CircuitBreaker as _;

#[inline(never)]
fn dependency() -> Result<u64, u64> {
    Ok(black_box(42))
}

fn outcome(result: &Result<u64, u64>) -> Outcome {
    if result.is_ok() {
        Outcome::Success
    } else {
        Outcome::Failure
    }
}

fn ours_with(config: BreakerConfig, clock: Arc<dyn Clock>) -> CircuitBreaker {
    CircuitBreaker::new("bench->dependency", config, clock)
}

fn ours(config: BreakerConfig) -> CircuitBreaker {
    ours_with(config, Arc::new(SystemClock))
}

fn ours_consecutive() -> CircuitBreaker {
    ours(BreakerConfig::default())
}

fn window_config() -> BreakerConfig {
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = None;
    config.trip.failure_rate = Some(RawFailureRateConfig {
        threshold: 0.5,
        window: Duration::from_secs(10),
        min_calls: 20,
    });
    config.build().expect("a valid test config")
}

fn last_calls_config() -> BreakerConfig {
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = None;
    config.trip.last_calls = Some(RawLastCallsConfig {
        threshold: 0.5,
        calls: 100,
        min_calls: 100,
    });
    config.build().expect("a valid test config")
}

/// recloser's ring of the last 100 calls at a 50 % failure rate (its defaults, written out).
fn recloser_ring_100() -> recloser::Recloser {
    recloser::Recloser::custom()
        .error_rate(0.5)
        .closed_len(100)
        .build()
}

#[inline]
fn call_ours(breaker: &CircuitBreaker) -> Result<u64, u64> {
    match breaker.try_acquire() {
        Ok(permit) => {
            let result = dependency();
            permit.record(outcome(&result));
            result
        }
        Err(_) => Err(0),
    }
}

fn recloser() -> recloser::Recloser {
    recloser::Recloser::custom().build()
}

fn failsafe_consecutive() -> impl failsafe::CircuitBreaker + Sync {
    let backoff = failsafe::backoff::constant(Duration::from_secs(30));
    failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(5, backoff))
        .build()
}

fn failsafe_default() -> impl failsafe::CircuitBreaker + Sync {
    failsafe::Config::new().build()
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(30)
        .noise_threshold(0.05)
}

fn closed_consecutive(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_consecutive");
    group.bench_function("direct", |b| b.iter(|| black_box(dependency())));
    let breaker = ours_consecutive();
    group.bench_function("tolerant", |b| b.iter(|| black_box(call_ours(&breaker))));
    let fs = failsafe_consecutive();
    group.bench_function("failsafe_consecutive5", |b| {
        b.iter(|| black_box(fs.call(dependency)))
    });
    let rc = recloser();
    group.bench_function("recloser", |b| b.iter(|| black_box(rc.call(dependency))));
    group.finish();
}

fn closed_window(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_window");
    group.bench_function("direct", |b| b.iter(|| black_box(dependency())));
    let breaker = ours_with(window_config(), Arc::new(SystemClock));
    group.bench_function("tolerant_failure_rate_system_clock", |b| {
        b.iter(|| black_box(call_ours(&breaker)))
    });
    let breaker = ours_with(window_config(), Arc::new(CoarseClock::new()));
    group.bench_function("tolerant_failure_rate_coarse_clock", |b| {
        b.iter(|| black_box(call_ours(&breaker)))
    });
    let fs = failsafe_default();
    group.bench_function("failsafe_success_rate_window", |b| {
        b.iter(|| black_box(fs.call(dependency)))
    });
    let rc = recloser();
    group.bench_function("recloser_ring_buffer", |b| {
        b.iter(|| black_box(rc.call(dependency)))
    });
    group.finish();
}

fn closed_count_window(c: &mut Criterion) {
    let mut group = c.benchmark_group("closed_count_window");
    group.bench_function("direct", |b| b.iter(|| black_box(dependency())));
    let breaker = ours_with(last_calls_config(), Arc::new(SystemClock));
    group.bench_function("tolerant_last_calls_system_clock", |b| {
        b.iter(|| black_box(call_ours(&breaker)))
    });
    let breaker = ours_with(last_calls_config(), Arc::new(CoarseClock::new()));
    group.bench_function("tolerant_last_calls_coarse_clock", |b| {
        b.iter(|| black_box(call_ours(&breaker)))
    });
    let rc = recloser_ring_100();
    group.bench_function("recloser_ring_100", |b| {
        b.iter(|| black_box(rc.call(dependency)))
    });
    group.finish();
}

/// Time for each of `threads` threads (started together) to make `iters` calls; the slowest thread's time.
#[allow(clippy::disallowed_methods)] // a bench measures wall time
fn threaded(threads: usize, iters: u64, call: &(dyn Fn() + Sync)) -> Duration {
    let start = Barrier::new(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    let began = Instant::now();
                    for _ in 0..iters {
                        call();
                    }
                    began.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .max()
            .unwrap_or_default()
    })
}

fn shared_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("shared_threads");
    let breaker = ours_consecutive();
    let counting = ours_with(last_calls_config(), Arc::new(CoarseClock::new()));
    let fs = failsafe_consecutive();
    let rc = recloser();
    let ring = recloser_ring_100();
    let direct = || {
        let _ = black_box(dependency());
    };
    let tolerant = || {
        let _ = black_box(call_ours(&breaker));
    };
    let failsafe = || {
        let _ = black_box(fs.call(dependency));
    };
    let recloser = || {
        let _ = black_box(rc.call(dependency));
    };
    let tolerant_last_calls = || {
        let _ = black_box(call_ours(&counting));
    };
    let recloser_ring = || {
        let _ = black_box(ring.call(dependency));
    };
    let contenders: [(&str, &(dyn Fn() + Sync)); 6] = [
        ("direct", &direct),
        ("tolerant", &tolerant),
        ("failsafe_consecutive5", &failsafe),
        ("recloser", &recloser),
        ("tolerant_last_calls_coarse_clock", &tolerant_last_calls),
        ("recloser_ring_100", &recloser_ring),
    ];
    for (name, call) in contenders {
        for threads in [1, 2] {
            group.bench_function(format!("{name}/{threads}_threads"), |b| {
                b.iter_custom(|iters| threaded(threads, iters, call))
            });
        }
    }
    group.finish();
}

fn open_reject(c: &mut Criterion) {
    let mut group = c.benchmark_group("open_reject");
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = Some(1);
    config.open.base = Duration::from_secs(3600);
    config.open.max = Duration::from_secs(3600);
    let config = config.build().expect("a valid test config");
    for (name, clock) in [
        (
            "tolerant_system_clock",
            Arc::new(SystemClock) as Arc<dyn Clock>,
        ),
        ("tolerant_coarse_clock", Arc::new(CoarseClock::new())),
    ] {
        let breaker = ours_with(config.clone(), clock);
        breaker
            .try_acquire()
            .map(|p| p.record(Outcome::Failure))
            .ok();
        assert!(breaker.try_acquire().is_err(), "open");
        group.bench_function(name, |b| b.iter(|| black_box(call_ours(&breaker))));
    }
    let backoff = failsafe::backoff::constant(Duration::from_secs(3600));
    let fs = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(1, backoff))
        .build();
    let _ = fs.call(|| Err::<(), ()>(()));
    assert!(!fs.is_call_permitted(), "failsafe open");
    group.bench_function("failsafe", |b| b.iter(|| black_box(fs.call(dependency))));
    let rc = recloser::Recloser::custom()
        .closed_len(1)
        .open_wait(Duration::from_secs(3600))
        .build();
    for _ in 0..3 {
        let _ = rc.call(|| Err::<(), ()>(()));
    }
    assert!(
        matches!(rc.call(dependency), Err(recloser::Error::Rejected)),
        "recloser open"
    );
    group.bench_function("recloser", |b| b.iter(|| black_box(rc.call(dependency))));
    group.finish();
}

criterion_group! {
    name = benches;
    config = config();
    targets = closed_consecutive, closed_window, closed_count_window, shared_threads, open_reject
}
criterion_main!(benches);
