//! Hand-computed scenarios: every expected total below is worked out in the comment above it, from the rules in
//! `engine.rs` (arrivals at `k / rate`, ends recorded before arrivals at the same instant), not from a run.

use std::time::Duration;

use super::*;
use crate::config::{BreakerConfig, Probes, RawBreakerConfig};
use crate::state::State;

mod chain;

const S: Duration = Duration::from_secs(1);

/// One request a second for 60 s against a dependency that fails every call in `[start, start + length)`.
fn idealised(
    threshold: u32,
    open: Duration,
    probes: Probes,
    kind: CallFailure,
    timeout: Duration,
    start: u32,
    length: u32,
) -> RawScenario {
    let mut breaker = RawBreakerConfig::default();
    breaker.trip.consecutive_failures = Some(threshold);
    breaker.open.base = open;
    breaker.open.max = open;
    breaker.half_open.probes = probes;
    breaker.half_open.successes_to_close = 2;
    let breaker = BreakerConfig::try_from(breaker).expect("a valid test breaker");
    RawScenario {
        window: 60 * S,
        workload: Workload::Open {
            rate: 1.0,
            share: 1.0,
        },
        upstream: Upstream {
            schedule: Schedule::Once {
                start: start * S,
                length: length * S,
            },
            failure_rate: 1.0,
            pattern: Pattern::Random,
            kind,
            timeout,
            latency: Duration::ZERO,
            warmup: None,
        },
        breaker,
        instances: 1,
        workers: None,
        seed: 7,
        log_calls: false,
        model: Model::AtTimeout,
        callers: Vec::new(),
    }
}

/// Simulates `raw`, checked first.
fn simulated(raw: &RawScenario) -> Simulation {
    simulate(&Scenario::try_from(raw.clone()).expect("valid"))
}

fn limited(n: u32) -> Probes {
    Probes::limited(n).expect("n ≥ 1")
}

// Arrivals at 0..59 s; calls in [10, 40) hang for 2 s; trip after 3 failures; open 10 s; every arrival probes.
// 10, 11, 12, 13 reach and hang; their failures land at 12, 13, 14: the third trips at 14 (open until 24), so
// 14..23 are rejected (10). At 24 and 25 two probes hang; 24's failure at 26 reopens (until 36): 26..35 rejected
// (10). 36, 37 probe; 36's failure at 38 reopens (until 48): 38..47 rejected (10), of which 40..47 (8) after
// the dependency recovered at 40. 48 and 49 probe and succeed: closed at 49.
// Reached 10 + 4 + 2 + 2 + 12 = 30, never made 30, slow failures 4 + 2 + 2 = 8, fast failures 30 (rejections),
// failed 38, successful 22; without the breaker the 30 calls in [10, 40) fail, each holding its caller 2 s.
// Open [14, 24) + [26, 36) + [38, 48) = 30 s, half-open [24, 26) + [36, 38) + [48, 49) = 5 s.
#[test]
fn a_long_hard_outage_with_every_arrival_probing() {
    let scenario = idealised(3, 10 * S, Probes::All, CallFailure::Hang, 2 * S, 10, 30);
    let run = simulated(&scenario);
    let t = &run.totals;
    assert_eq!(
        (t.reached, t.never_made, t.slow_failures, t.fast_failures),
        (30, 30, 8, 30)
    );
    assert_eq!(
        (
            t.failed_with_breaker,
            t.failed_without_breaker,
            t.successful
        ),
        (38, 30, 22)
    );
    assert_eq!(t.rejected_after_recovery_s, 8.0);
    assert_eq!(
        (t.caller_seconds_with, t.caller_seconds_without),
        (16.0, 60.0)
    );
    assert_eq!(t.opens, 3);
    assert_eq!((t.open_s, t.half_open_s), (30.0, 5.0));
    assert_eq!(t.probes, 6);
    let states: Vec<State> = run.seconds.iter().map(|s| s.state).collect();
    assert_eq!(states[13], State::Closed);
    assert_eq!(states[14], State::Open);
    assert_eq!(states[24], State::HalfOpen);
    assert_eq!(states[47], State::Open);
    assert_eq!(states[48], State::HalfOpen);
    assert_eq!(states[49], State::Closed);
    assert_eq!(run.seconds[20].never_made, 1);
    assert_eq!(run.seconds[20].failed_without_breaker, 1);
    assert_eq!(run.seconds[45].failed_without_breaker, 0);
    let per_second: u64 = run.seconds.iter().map(|s| s.slow_failures).sum();
    assert_eq!(per_second, t.slow_failures);
    let opened: Vec<u32> = run
        .seconds
        .iter()
        .filter(|s| s.opens > 0)
        .map(|s| s.t)
        .collect();
    assert_eq!(opened, [14, 26, 38]);
    let open_s: f64 = run.seconds.iter().map(|s| s.open).sum();
    assert_eq!(open_s, 30.0);
    assert_eq!(run.seconds[30].dependency_failures, 1);
}

// The same with the breaker's real half-open policy, one probe at a time: 25 and 37 are rejected instead of
// probing. Reached 28, never made 32, slow failures 6, failed 38, successful 22, callers held 12 s.
#[test]
fn a_long_hard_outage_with_one_probe() {
    let scenario = idealised(3, 10 * S, limited(1), CallFailure::Hang, 2 * S, 10, 30);
    let t = simulated(&scenario).totals;
    assert_eq!(
        (t.reached, t.never_made, t.slow_failures, t.fast_failures),
        (28, 32, 6, 32)
    );
    assert_eq!((t.failed_with_breaker, t.successful), (38, 22));
    assert_eq!(t.caller_seconds_with, 12.0);
    assert_eq!((t.opens, t.probes), (3, 4));
}

// A 3 s blip of instant errors in [10, 13) against a 30 s open window: 10, 11, 12 fail and the third trips at 12
// (open until 42); 13..41 are rejected (29), all after the dependency recovered at 13; 42 and 43 close it.
// Reached 13 + 18 = 31, never made 29, fast failures 3 + 29 = 32, successful 28; without: 3 failures.
#[test]
fn a_blip_shorter_than_the_open_window() {
    let scenario = idealised(3, 30 * S, limited(1), CallFailure::Error, S, 10, 3);
    let t = simulated(&scenario).totals;
    assert_eq!(
        (t.reached, t.never_made, t.slow_failures, t.fast_failures),
        (31, 29, 0, 32)
    );
    assert_eq!(
        (
            t.failed_with_breaker,
            t.failed_without_breaker,
            t.successful
        ),
        (32, 3, 28)
    );
    assert_eq!(t.rejected_after_recovery_s, 29.0);
    assert_eq!(
        (t.caller_seconds_with, t.caller_seconds_without),
        (0.0, 0.0)
    );
    assert_eq!((t.opens, t.open_s), (1, 30.0));
}

// Half the calls fail for the whole window, spread evenly: calls 1, 3, 5 … fail, never two in a row, so a
// breaker that needs 2 consecutive failures never trips and changes nothing: 30 failures with or without it.
#[test]
fn an_even_partial_failure_never_trips_a_consecutive_detector() {
    let mut scenario = idealised(2, 10 * S, limited(1), CallFailure::Error, S, 0, 60);
    scenario.upstream.failure_rate = 0.5;
    scenario.upstream.pattern = Pattern::Even;
    let t = simulated(&scenario).totals;
    assert_eq!((t.opens, t.reached, t.never_made), (0, 60, 0));
    assert_eq!(
        (
            t.failed_with_breaker,
            t.failed_without_breaker,
            t.successful
        ),
        (30, 30, 30)
    );
    assert_eq!(t.dependency_failure_with, 0.5);
}

// 100 requests a second, each holding one of 64 workers for the 3 s timeout while the dependency hangs in
// [10, 40). Without a breaker the 64th arrival (10.63 s) fills the pool; it is refilled in batches of 64 at 13.00,
// 16.00 … 37.00 (10 batches, 640 calls), so 3000 − 640 = 2360 of the outage's arrivals are refused. With a breaker
// of 5 consecutive failures the pool fills at the same instant (no failure is known before 13.00); the failures
// of 10.00 … 10.04 land at 13.00 … 13.04 and the fifth trips: only 10.64 … 12.99 are refused (236).
#[test]
fn a_hang_exhausts_a_worker_pool_without_a_breaker() {
    let mut scenario = idealised(5, 30 * S, limited(1), CallFailure::Hang, 3 * S, 10, 30);
    scenario.workload = Workload::Open {
        rate: 100.0,
        share: 1.0,
    };
    scenario.workers = Some(64);
    let run = simulated(&scenario);
    let t = &run.totals;
    assert_eq!(t.pool_exhausted_at_s_without, Some(10.63));
    assert_eq!(t.pool_exhausted_at_s_with, Some(10.63));
    assert_eq!((t.refused_without, t.failed_without_breaker), (2360, 3000));
    assert_eq!(t.refused_with, 236);
    assert_eq!(t.slow_failures, 64 + 4);
    assert_eq!(run.closed_form.time_to_exhaustion_s, Some(0.64));
    assert_eq!(run.seconds[11].busy_workers, 64);
}

// 50 instances share 500 requests a second (10 each, in turn) and trip within 0.1 s of each other on the fifth
// instant error after 5 s: instance i's fifth failure is arrival 2700 + i at 5.4 + i/500 s. With a fixed 10 s
// window all 50 probe in second 15 (still failing: all reopen). In second 25 the dependency is back but cold,
// serving 20 calls a second until 30: 50 probes, 20 succeed and probe again over capacity, failing: all 50 reopen
// (70 probes). In second 35 it is warm: 50 × 2 probes close every breaker. The spread that would have kept the
// probes under capacity is 50 × 1 / 20 = 2.5 s.
#[test]
fn instances_recovering_together_probe_in_the_same_second() {
    let mut scenario = idealised(5, 10 * S, limited(1), CallFailure::Error, S, 5, 15);
    scenario.workload = Workload::Open {
        rate: 500.0,
        share: 1.0,
    };
    scenario.instances = 50;
    scenario.upstream.warmup = Some(Warmup {
        capacity: 20.0,
        length: 10 * S,
    });
    let run = simulated(&scenario);
    let probes: Vec<u64> = run.seconds.iter().map(|s| s.probes).collect();
    assert_eq!((probes[15], probes[25], probes[35]), (50, 70, 100));
    assert_eq!(probes.iter().sum::<u64>(), 220);
    assert_eq!(run.totals.peak_probes_per_s, 100);
    assert_eq!(run.totals.opens, 50 + 50 + 50);
    assert_eq!(run.closed_form.jitter_needed_s, Some(2.5));
    assert!(run.totals.opens <= run.closed_form.opens_bound);

    let mut breaker = scenario.breaker.clone().into_raw();
    breaker.open.jitter = 0.9;
    breaker.open.max = 20 * S;
    scenario.breaker = BreakerConfig::try_from(breaker).expect("valid");
    let spread = simulated(&scenario);
    // ±9 s of jitter, far more than the 2.5 s needed: no second sees more probes than the capacity.
    assert!(
        spread.totals.peak_probes_per_s <= 20,
        "jitter should spread the probes: peak {}",
        spread.totals.peak_probes_per_s
    );
}

// The study's error experiment at 100 %: 100 users thinking 1–10 s, 1 task in 19 a checkout, every checkout
// failing at once for 30 minutes, breaker 5 consecutive / 30 s / 1 probe / 2 to close. The estimate is
// 1800 / (30 + 19 × 5.5 / 100) ≈ 58; the study measured 57 on two machines.
#[test]
fn the_study_at_total_failure_opens_as_its_formula_says() {
    let mut scenario = idealised(5, 30 * S, limited(1), CallFailure::Error, S, 0, 1800);
    scenario.window = 1800 * S;
    scenario.workload = Workload::Closed {
        users: 100,
        think_min: S,
        think_max: 10 * S,
        share: 1.0 / 19.0,
    };
    let run = simulated(&scenario);
    let estimate = run.closed_form.opens_estimate.expect("binary fault");
    assert!((estimate - 57.98).abs() < 0.01, "{estimate}");
    let opens = run.totals.opens as f64;
    assert!(
        (opens - estimate).abs() <= 3.0,
        "{opens} opens vs {estimate}"
    );
    assert!(run.totals.opens <= run.closed_form.opens_bound);
    assert_eq!(run.totals.dependency_failure_with, 1.0);
}

/// A change to the default settings, and the setting its error must name.
type BadSetting = (fn(&mut Settings), &'static str);

#[test]
fn errors_name_the_setting() {
    let cases: [BadSetting; 8] = [
        (|s| s.window = Duration::ZERO, "window"),
        (|s| s.rate = 0.0, "rate"),
        (|s| s.rate = 1e9, "rate"),
        (|s| s.threshold = 0, "threshold"),
        (|s| s.failure_rate = 1.5, "failure_rate"),
        (|s| s.jitter = 1.0, "jitter"),
        (|s| s.instances = 5000, "instances"),
        (|s| s.outage_start = Duration::from_secs(61), "outage_start"),
    ];
    for (change, field) in cases {
        let mut settings = Settings::default();
        change(&mut settings);
        let error = settings.scenario().expect_err(field);
        assert_eq!(error.field, field, "{error}");
    }
    assert!(Settings::default().scenario().is_ok());
    assert_eq!("probes:3".parse(), Ok(HalfOpen::Probes(3)));
    assert!("probes:0".parse::<HalfOpen>().is_err());
    assert!("some".parse::<HalfOpen>().is_err());
    assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert!(parse_duration("-1").is_err());
    assert!(parse_duration("2d").is_err());
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let mut settings = Settings {
        failure_rate: 0.4,
        users: 20,
        share: 0.3,
        ..Settings::default()
    };
    let a = simulate(&settings.scenario().expect("valid"));
    let b = simulate(&settings.scenario().expect("valid"));
    assert_eq!(a, b);
    settings.seed = 2;
    let c = simulate(&settings.scenario().expect("valid"));
    assert_ne!(a.totals, c.totals);
}

// Skipping a closed-model user's free tasks (no pool, no call log) is only a shortcut: every total is the same as
// when each task goes through the queue.
#[test]
fn skipping_free_tasks_changes_no_total() {
    let settings = Settings {
        users: 50,
        share: 0.2,
        failure_rate: 0.7,
        window: Duration::from_secs(300),
        outage: Duration::from_secs(200),
        think_min: Duration::from_millis(200),
        think_max: Duration::from_secs(3),
        ..Settings::default()
    };
    let scenario = settings.scenario().expect("valid");
    let skipping = simulate(&scenario);
    let logged = simulate(&scenario.with_log_calls(true));
    assert_eq!(skipping.totals, logged.totals);
    assert_eq!(skipping.seconds, logged.seconds);
    assert!(skipping.totals.requests > 4 * skipping.totals.dependency_calls);
    assert_eq!(logged.calls.len() as u64, logged.totals.requests);
}

// A scenario is only built valid: its raw shape is checked by `TryFrom`, the error naming the field.
#[test]
fn a_raw_scenario_is_checked_when_it_becomes_a_scenario() {
    let mut raw = idealised(3, 10 * S, Probes::All, CallFailure::Hang, 2 * S, 10, 30);
    raw.instances = 0;
    let error = Scenario::try_from(raw.clone()).expect_err("no instance");
    assert_eq!(error.to_string(), "instances: must be between 1 and 1000");
    raw.instances = 1;
    raw.upstream.timeout = Duration::ZERO;
    let error = Scenario::try_from(raw.clone()).expect_err("no timeout");
    assert_eq!(error.to_string(), "timeout: must be between 1ms and 10m");
    raw.upstream.timeout = S;
    let scenario = Scenario::try_from(raw.clone()).expect("valid");
    assert_eq!(scenario.clone().into_raw(), raw);
    assert!(scenario.with_log_calls(true).log_calls());
}

#[test]
fn rejected_would_succeed_is_the_successes_the_breaker_cost_and_the_first_open_is_dated() {
    // Open workload, no pool, random pattern: an admitted call has the same draw in both passes, so the
    // successes lost with the breaker are exactly its rejections whose draw would have succeeded.
    let mut raw = idealised(3, 5 * S, limited(1), CallFailure::Error, S, 10, 40);
    raw.workload = Workload::Open {
        rate: 20.0,
        share: 1.0,
    };
    raw.upstream.failure_rate = 0.6;
    let run = simulated(&raw);
    let t = &run.totals;
    assert!(t.never_made > 0, "it trips at 60 %");
    assert!(t.rejected_would_succeed > 0 && t.rejected_would_succeed < t.never_made);
    assert_eq!(
        t.successful_without_breaker - t.successful,
        t.rejected_would_succeed
    );
    // It cannot open before the fault starts at 10 s, and at 20 calls a second and 60 % it opens soon after.
    let first = t.first_open_s.expect("it opened");
    assert!((10.0..12.0).contains(&first), "{first}");
    // In a hard outage every rejection during the outage would have failed: only the ones after it count.
    let hard = simulated(&idealised(
        5,
        10 * S,
        limited(1),
        CallFailure::Error,
        S,
        10,
        20,
    ));
    assert_eq!(
        hard.totals.rejected_would_succeed as f64,
        hard.totals.rejected_after_recovery_s * 1.0,
        "one call a second: seconds of traffic are calls"
    );
    let never = simulated(&idealised(
        5,
        10 * S,
        limited(1),
        CallFailure::Error,
        S,
        0,
        0,
    ));
    assert_eq!(never.totals.first_open_s, None);
}

#[test]
fn a_counterfactual_run_once_gives_what_simulate_gives_for_every_breaker() {
    let base = Scenario::try_from(idealised(
        5,
        10 * S,
        limited(1),
        CallFailure::Hang,
        S,
        10,
        30,
    ))
    .expect("valid");
    let without = Counterfactual::of(&base);
    for threshold in [1, 3, 8] {
        let mut raw = base.clone().into_raw();
        let mut breaker = raw.breaker.clone().into_raw();
        breaker.trip.consecutive_failures = Some(threshold);
        raw.breaker = BreakerConfig::try_from(breaker).expect("valid");
        let scenario = Scenario::try_from(raw).expect("valid");
        assert_eq!(simulate_with(&scenario, &without), simulate(&scenario));
    }
    // A counterfactual of another scenario is not used: the result is still right.
    let mut longer = base.clone().into_raw();
    longer.upstream.schedule = Schedule::Once {
        start: 10 * S,
        length: 40 * S,
    };
    let longer = Scenario::try_from(longer).expect("valid");
    assert_eq!(simulate_with(&longer, &without), simulate(&longer));
}

// The published simulator's defaults (`Settings::published`): 20 requests a second for 60 s, request k at k/20 s
// (k = 0..1199: 1,200 requests); every call in [20, 38) fails after a 3 s timeout; 5 consecutive failures trip;
// open 10 s; every arrival probes; 2 successes close; the breaker sees each outcome the instant the call is made.
// - Requests 400..404 (20.00..20.20 s) reach and fail: the fifth trips at 20.20, open until 30.20.
// - 405..603 (20.25..30.15 s) are rejected: 199. Request 604 (30.20 s) probes, fails, reopens until 40.20.
// - 605..803 (30.25..40.15 s) are rejected: 199, of which 760..803 (38.00..40.15 s, 44 requests = 2.2 s of
//   traffic at 20 a second) after the upstream recovered at 38 s. 804 and 805 probe and succeed: closed at 40.25.
// Never made 199 + 199 = 398, reached 1,200 − 398 = 802, slow failures 5 + 1 = 6, fast failures 398 (the
// rejections), failed 404, successful 802 − 6 = 796. Without the breaker the 360 calls in [20, 38) (400..759)
// fail, each holding its caller 3 s: 1,080 caller-seconds, against 6 × 3 = 18 with it. Two opens.
#[test]
fn the_published_model_with_its_defaults_gives_the_published_totals() {
    let run = simulate(&Settings::published().scenario().expect("valid"));
    let t = &run.totals;
    assert_eq!(run.model, Model::Published);
    assert_eq!(
        (t.reached, t.never_made, t.slow_failures, t.fast_failures),
        (802, 398, 6, 398)
    );
    assert_eq!(
        (
            t.failed_with_breaker,
            t.failed_without_breaker,
            t.successful
        ),
        (404, 360, 796)
    );
    assert!((t.rejected_after_recovery_s - 2.2).abs() < 1e-9, "{t:?}");
    assert!((t.caller_seconds_with - 18.0).abs() < 1e-9, "{t:?}");
    assert!((t.caller_seconds_without - 1080.0).abs() < 1e-9, "{t:?}");
    assert_eq!(t.opens, 2);
    assert!(t.opens <= run.closed_form.opens_bound);
}

// The same settings under the default model: the first failures reach the breaker only at 23.00..23.20 s, so
// every request of [20, 23.20) reaches the dependency and hangs (65 slow failures before the first trip): the
// outcome's timing, not the breaker, is what the published totals assume.
#[test]
fn the_default_model_sees_hanging_failures_at_the_timeout() {
    let settings = Settings {
        model: Model::AtTimeout,
        ..Settings::published()
    };
    let run = simulate(&settings.scenario().expect("valid"));
    assert_eq!(run.model, Model::AtTimeout);
    assert!(run.totals.slow_failures >= 65, "{:?}", run.totals);
    assert!(run.totals.caller_seconds_with >= 195.0);
}
