//! The published model (`breaker::sim::Model::Published`) against a twenty-line reference implementation of it,
//! written from the published simulator's description alone: requests at a constant rate, an upstream failing
//! every call in `[start, start + outage)`, the breaker seeing each outcome at once while the caller waits the
//! timeout, a rejection costing nothing, every arrival probing while half-open. On random settings the simulator
//! (the production breaker on a virtual clock) and the reference give the same totals.
//!
//! Rates divide a second into whole milliseconds and durations are whole milliseconds, so that arrival times are
//! exact for both.

use std::time::Duration;

use breaker::sim::{self, Model, Settings};
use proptest::prelude::*;

/// The published totals, as the reference counts them.
#[derive(Debug, PartialEq)]
struct Counted {
    reached: u64,
    never_made: u64,
    slow_failures: u64,
    successful: u64,
    failed_without: u64,
    rejected_after_recovery: u64,
    opens: u64,
}

/// The published model by hand: one request every `interval_ms`, a state per arrival.
fn reference(window_ms: u64, interval_ms: u64, start: u64, end: u64, s: &Settings) -> Counted {
    enum State {
        Closed(u32),
        Open(u64),
        HalfOpen(u32),
    }
    let open_ms = s.open_window.as_millis() as u64;
    let mut c = Counted {
        reached: 0,
        never_made: 0,
        slow_failures: 0,
        successful: 0,
        failed_without: 0,
        rejected_after_recovery: 0,
        opens: 0,
    };
    let mut state = State::Closed(0);
    for t in (0..window_ms).step_by(interval_ms as usize) {
        let failing = (start..end).contains(&t);
        c.failed_without += u64::from(failing);
        if let State::Open(until) = state {
            if t < until {
                c.never_made += 1;
                c.rejected_after_recovery += u64::from(start < end && t >= end);
                continue;
            }
            state = State::HalfOpen(0);
        }
        c.reached += 1;
        state = match (state, failing) {
            (State::Closed(f), true) if f + 1 < s.threshold => State::Closed(f + 1),
            (_, true) => {
                c.opens += 1;
                State::Open(t + open_ms)
            }
            (State::HalfOpen(n), false) if n + 1 < s.successes_to_close => State::HalfOpen(n + 1),
            (_, false) => State::Closed(0),
        };
        c.slow_failures += u64::from(failing);
        c.successful += u64::from(!failing);
    }
    c
}

/// Requests per second that divide a second into whole milliseconds.
const RATES: [u64; 12] = [1, 2, 4, 5, 8, 10, 20, 25, 40, 50, 100, 200];

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_published_model_counts_what_the_reference_counts(
        window_s in 1u64..120,
        rate in prop::sample::select(RATES.to_vec()),
        start_permille in 0u64..=1000,
        outage_permille in 0u64..=1000,
        threshold in 1u32..20,
        open_ms in 1u64..30_000,
        successes_to_close in 1u32..6,
        timeout_ms in 1u64..10_000,
    ) {
        let window_ms = window_s * 1000;
        let start = window_ms * start_permille / 1000;
        let outage = window_ms * outage_permille / 1000;
        let settings = Settings {
            window: Duration::from_secs(window_s),
            outage_start: Duration::from_millis(start),
            outage: Duration::from_millis(outage),
            threshold,
            open_window: Duration::from_millis(open_ms),
            successes_to_close,
            rate: rate as f64,
            timeout: Duration::from_millis(timeout_ms),
            ..Settings::published()
        };
        let run = sim::simulate(&settings.scenario().expect("valid settings"));
        let t = &run.totals;
        let end = (start + outage).min(window_ms);
        let counted = reference(window_ms, 1000 / rate, start, end, &settings);
        prop_assert_eq!(run.model, Model::Published);
        prop_assert_eq!(&counted, &Counted {
            reached: t.reached,
            never_made: t.never_made,
            slow_failures: t.slow_failures,
            successful: t.successful,
            failed_without: t.failed_without_breaker,
            rejected_after_recovery: (t.rejected_after_recovery_s * rate as f64).round() as u64,
            opens: t.opens,
        });
        prop_assert_eq!(t.fast_failures, counted.never_made);
        prop_assert_eq!(t.failed_with_breaker, counted.never_made + counted.slow_failures);
        let timeout_s = timeout_ms as f64 / 1000.0;
        prop_assert!((t.caller_seconds_with - counted.slow_failures as f64 * timeout_s).abs() < 1e-6);
        prop_assert!((t.caller_seconds_without - counted.failed_without as f64 * timeout_s).abs() < 1e-6);
        prop_assert!(t.opens <= run.closed_form.opens_bound);
    }
}
