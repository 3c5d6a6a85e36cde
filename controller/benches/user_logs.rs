//! Recording cost bench: what a virtual user pays per completed request, and what the run loop pays once a
//! second to move K users' logs into the run's recorder and close the second.
//!
//! `cargo bench -p controller --bench user_logs` (optionally `-- --seconds N`, default 20 simulated seconds per
//! case). Single thread, no I/O: the figures are CPU time of the recording alone. Prints one line per case.

use std::hint::black_box;
use std::time::{Duration, Instant};

use controller::load::{Recorder, RequestOutcome, Sample, UserLogs};
use parking_lot::Mutex;

const ENDPOINTS: usize = 6;

/// Request `n` of user `user` in second `second`: spread over the second and the endpoints, mostly ok.
fn sample(second: u64, user: u32, n: u32, per_user: u32) -> Sample {
    let offset = u64::from(n) * 1_000_000 / u64::from(per_user.max(1)) + u64::from(user % 1_000);
    Sample {
        endpoint: ((user + n) as usize) % ENDPOINTS,
        since_start: Duration::from_secs(second) + Duration::from_micros(offset.min(999_999)),
        outcome: if (user + n) % 50 == 0 {
            RequestOutcome::Failed
        } else {
            RequestOutcome::Ok
        },
        latency: Duration::from_micros(150 + u64::from((user * 31 + n * 17) % 2_000)),
        expected_interval: Duration::ZERO,
    }
}

/// Per request, on the user's side: the old shared `Mutex<Recorder>` (lock, six HDR increments) against a
/// push into the user's own log. Returns ns per request for (old, new).
#[allow(clippy::disallowed_methods)] // a bench measures wall time
fn per_request(requests: u32) -> (f64, f64) {
    let shared = Mutex::new(Recorder::new(ENDPOINTS, Duration::ZERO, None));
    let samples: Vec<Sample> = (0..requests)
        .map(|n| sample(0, n % 32, n, requests))
        .collect();
    let started = Instant::now();
    for sample in &samples {
        sample.record_into(&mut shared.lock());
    }
    let old = started.elapsed();
    black_box(shared.into_inner().finish(1));

    let logs = UserLogs::new(32, 1);
    let started = Instant::now();
    for (n, sample) in samples.iter().enumerate() {
        logs.user(n as u32 % 32).record(*sample);
    }
    let new = started.elapsed();
    black_box(&logs);
    let per = |elapsed: Duration| elapsed.as_nanos() as f64 / f64::from(requests);
    (per(old), per(new))
}

/// How many of a second's `per_second` samples user `user` of `users` logs: spread evenly, so they add up to
/// `per_second` also when there are fewer samples than users (users thinking between requests).
fn samples_of_user(user: u32, users: u32, per_second: u32) -> u32 {
    let share =
        |users_before: u32| u64::from(users_before) * u64::from(per_second) / u64::from(users);
    (share(user + 1) - share(user)) as u32
}

/// Once a second, on the run loop's side: move `users` logs holding `per_second` samples in all into the
/// recorder and close the second (summaries and HDR V2 serialisation). Returns ns per collection
/// (median over `seconds` seconds) and ns per sample.
#[allow(clippy::disallowed_methods)] // a bench measures wall time
fn per_collection(users: u32, per_second: u32, seconds: u64) -> (f64, f64) {
    let logs = UserLogs::new(users, 1);
    let mut recorder = Recorder::new(ENDPOINTS, Duration::ZERO, None);
    let mut batch = Vec::new();
    let mut times = Vec::new();
    for second in 0..seconds {
        let mut logged = 0;
        for user in 0..users {
            let per_user = samples_of_user(user, users, per_second);
            for n in 0..per_user {
                logs.user(user).record(sample(second, user, n, per_user));
            }
            logged += per_user;
        }
        assert_eq!(
            logged, per_second,
            "{users} users: every sample of the second is logged"
        );
        let started = Instant::now();
        logs.collect(&mut recorder, second + 1, &mut batch);
        times.push(started.elapsed());
    }
    black_box(recorder.finish(seconds));
    times.sort();
    let median = times[times.len() / 2].as_nanos() as f64;
    (median, median / f64::from(per_second.max(1)))
}

fn main() {
    let mut seconds = 20u64;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--seconds" {
            seconds = args
                .next()
                .and_then(|value| value.parse().ok())
                .filter(|value| (1..=10_000).contains(value))
                .unwrap_or_else(|| {
                    eprintln!("user_logs bench: --seconds takes a whole number from 1 to 10000");
                    std::process::exit(2);
                });
        }
        // `cargo bench` passes `--bench`; other flags are a harness's.
    }

    let (old, new) = per_request(2_000_000);
    println!(
        "per request, user side: shared Mutex<Recorder> {old:.1} ns, own log {new:.1} ns ({:.2}x)",
        old / new
    );
    for (users, per_second) in [
        (32, 150_000),
        (100, 22),
        (1_000, 220),
        (1_000, 100_000),
        (10_000, 2_200),
        (10_000, 100_000),
    ] {
        let (collection, per_sample) = per_collection(users, per_second, seconds);
        println!(
            "once a second, run loop: {users} users, {} samples: {:.1} us per collection ({per_sample:.1} ns per sample)",
            per_second,
            collection / 1_000.0
        );
    }
}
