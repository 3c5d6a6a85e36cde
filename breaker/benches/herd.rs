//! Half-open herd: 1000 threads released together by a barrier at the moment the open window ends; how many of
//! them reach a dependency that is still failing. Ours must let exactly N through; the peers admit every caller
//! while half-open. Prints a table (not a timing benchmark).
//!
//! Run: `cargo bench -p breaker --bench herd`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use breaker::{CircuitBreaker, Outcome, Probes, SystemClock};
use failsafe::CircuitBreaker as _;

const CALLERS: usize = 1000;
const OPEN: Duration = Duration::from_millis(200);
/// The still-broken dependency holds each caller this long before failing (a hang, shortened).
const HOLD: Duration = Duration::from_millis(50);

/// Release `CALLERS` threads at once (after `before_release`), each making one call with `call`; the number of
/// callers that reached the dependency.
/// The failing dependency, as a caller sees it.
type Dependency<'a> = &'a dyn Fn() -> Result<(), ()>;

fn herd(before_release: impl FnOnce(), call: &(dyn Fn(Dependency<'_>) + Sync)) -> usize {
    let reached = AtomicUsize::new(0);
    let dependency = || {
        reached.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(HOLD);
        Err(())
    };
    let barrier = Barrier::new(CALLERS + 1);
    std::thread::scope(|scope| {
        for _ in 0..CALLERS {
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn_scoped(scope, || {
                    barrier.wait();
                    call(&dependency);
                })
                .expect("spawn");
        }
        before_release();
        barrier.wait();
    });
    reached.into_inner()
}

fn ours(probes: Probes) -> usize {
    let mut config = breaker::RawBreakerConfig::default();
    config.open.base = OPEN;
    config.half_open.probes = probes;
    let config = config.build().expect("a valid test config");
    let breaker = CircuitBreaker::new("herd", config, Arc::new(SystemClock));
    for _ in 0..5 {
        breaker
            .try_acquire()
            .map(|p| p.record(Outcome::Failure))
            .ok();
    }
    assert!(breaker.try_acquire().is_err());
    herd(
        || std::thread::sleep(OPEN + Duration::from_millis(5)),
        &|dependency| {
            if let Ok(permit) = breaker.try_acquire() {
                let outcome = if dependency().is_ok() {
                    Outcome::Success
                } else {
                    Outcome::Failure
                };
                permit.record(outcome);
            }
        },
    )
}

fn recloser() -> usize {
    let rc = recloser::Recloser::custom()
        .closed_len(5)
        .half_open_len(10)
        .open_wait(OPEN)
        .build();
    for _ in 0..10 {
        let _ = rc.call(|| Err::<(), ()>(()));
    }
    assert!(matches!(
        rc.call(|| Ok::<(), ()>(())),
        Err(recloser::Error::Rejected)
    ));
    herd(
        || std::thread::sleep(OPEN + Duration::from_millis(5)),
        &|dependency| {
            let _ = rc.call(dependency);
        },
    )
}

fn failsafe() -> usize {
    let backoff = failsafe::backoff::constant(OPEN);
    let fs = failsafe::Config::new()
        .failure_policy(failsafe::failure_policy::consecutive_failures(5, backoff))
        .build();
    for _ in 0..5 {
        let _ = fs.call(|| Err::<(), ()>(()));
    }
    assert!(!fs.is_call_permitted());
    herd(
        || std::thread::sleep(OPEN + Duration::from_millis(5)),
        &|dependency| {
            let _ = fs.call(dependency);
        },
    )
}

fn main() {
    // `cargo bench` passes `--bench`; any other argument (a criterion filter) is ignored.
    println!(
        "half-open herd: {CALLERS} callers released together when the {OPEN:?} open window ends"
    );
    println!("{:<34} {:>8}", "breaker", "reached");
    for (name, reached, must) in [
        (
            "tolerant probes = 1",
            ours(Probes::limited(1).expect("1")),
            Some(1),
        ),
        (
            "tolerant probes = 5",
            ours(Probes::limited(5).expect("5")),
            Some(5),
        ),
        ("tolerant probes = \"all\"", ours(Probes::All), None),
        ("recloser 1.4 (half_open_len 10)", recloser(), None),
        ("failsafe 1.3 (consecutive 5)", failsafe(), None),
    ] {
        println!("{name:<34} {reached:>8}");
        if let Some(must) = must {
            assert_eq!(reached, must, "{name}: the herd got through");
        }
    }
}
