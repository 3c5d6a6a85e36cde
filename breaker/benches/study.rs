//! The seed study's whole design on the simulator: Payment failing at 0/25/50/75/100 % × breaker off/on (10
//! conditions) × 15 rounds of 30 minutes, 100 users thinking 1–10 s, 1 task in 19 a checkout calling Payment,
//! the study's breaker (5 consecutive failures, 30 s open, 1 probe, 2 successes to close). Every `simulate` call
//! runs the condition with and without the breaker, so the design costs 300 passes. Prints the wall time of the
//! whole design, best and median of 5 repetitions, on one thread (the target: under one second).
//!
//! Run: `cargo bench -p breaker --bench study`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use breaker::sim::{
    self, CallFailure, Pattern, RawScenario, Scenario, Schedule, Upstream, Workload,
};
use breaker::{BreakerConfig, Mode};

const ROUNDS: u64 = 15;
const RATES: [f64; 5] = [0.0, 0.25, 0.5, 0.75, 1.0];
const MODES: [Mode; 2] = [Mode::Disabled, Mode::Enforce];
const REPETITIONS: usize = 5;

fn condition(failure_rate: f64, mode: Mode, round: u64) -> Scenario {
    let run = Duration::from_secs(30 * 60);
    Scenario::try_from(RawScenario {
        window: run,
        workload: Workload::Closed {
            users: 100,
            think_min: Duration::from_secs(1),
            think_max: Duration::from_secs(10),
            share: 1.0 / 19.0,
        },
        upstream: Upstream {
            schedule: Schedule::Once {
                start: Duration::ZERO,
                length: run,
            },
            failure_rate,
            pattern: Pattern::Random,
            kind: CallFailure::Error,
            timeout: Duration::from_secs(10),
            latency: Duration::from_millis(20),
            warmup: None,
        },
        breaker: BreakerConfig::default().with_mode(mode),
        instances: 1,
        workers: None,
        seed: 42 + round,
        log_calls: false,
        model: breaker::sim::Model::AtTimeout,
        callers: Vec::new(),
    })
    .expect("valid scenario")
}

fn design() -> (u64, u64) {
    let mut opens = 0;
    let mut requests = 0;
    for round in 0..ROUNDS {
        for rate in RATES {
            for mode in MODES {
                let run = sim::simulate(&condition(rate, mode, round));
                opens += run.totals.opens;
                requests += run.totals.requests;
            }
        }
    }
    (opens, requests)
}

#[allow(clippy::disallowed_methods)] // a bench measures wall time
fn main() {
    let mut times = Vec::with_capacity(REPETITIONS);
    let mut totals = (0, 0);
    for _ in 0..REPETITIONS {
        let started = Instant::now();
        totals = black_box(design());
        times.push(started.elapsed());
    }
    times.sort();
    let (opens, requests) = totals;
    println!(
        "study design (10 conditions × {ROUNDS} rounds × 30 min, 100 users, with and without the breaker): \
         best {:.3} s, median {:.3} s over {REPETITIONS} repetitions; {requests} requests and {opens} opens per design",
        times[0].as_secs_f64(),
        times[REPETITIONS / 2].as_secs_f64(),
    );
}
