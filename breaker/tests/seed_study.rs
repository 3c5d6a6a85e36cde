//! The seed study's arithmetic: consecutive threshold 5, 30 s open window, 2 successes to close, a dependency that
//! fails every call at a steady call rate. Over 1800 s of simulated time the breaker opens ⌊1800 / (30 + t)⌋ times
//! within one, where t is the time to trip again once the window ends. The first call after the window is a probe
//! that fails and reopens at once, so t is the wait from the window's end to the next call: with calls every Δ and
//! a trip at a call, t = ⌈30 / Δ⌉·Δ − 30.

use std::sync::Arc;
use std::time::Duration;

use breaker::{BreakerConfig, CircuitBreaker, ManualClock, Outcome};

fn opens_over(horizon_ms: u64, interval_ms: u64) -> u64 {
    let config = BreakerConfig::default();
    assert_eq!(config.trip().consecutive_failures(), Some(5));
    assert_eq!(config.open().base(), Duration::from_secs(30));
    assert_eq!(config.half_open().successes_to_close(), 2);
    let clock = Arc::new(ManualClock::new());
    let breaker = CircuitBreaker::new("checkout->payment", config, clock.clone());
    let mut t = 0;
    while t < horizon_ms {
        clock.set(Duration::from_millis(t));
        if let Ok(permit) = breaker.try_acquire() {
            permit.record(Outcome::Failure);
        }
        t += interval_ms;
    }
    breaker.snapshot().counters.opens
}

#[test]
fn opens_over_1800_s_match_the_study_formula() {
    const HORIZON_MS: u64 = 1_800_000;
    const OPEN_MS: u64 = 30_000;
    for interval_ms in [7, 70, 250, 700, 1_000, 1_300] {
        let time_to_trip_ms = OPEN_MS.div_ceil(interval_ms) * interval_ms - OPEN_MS;
        let expected = HORIZON_MS / (OPEN_MS + time_to_trip_ms);
        let opens = opens_over(HORIZON_MS, interval_ms);
        assert!(
            opens.abs_diff(expected) <= 1,
            "calls every {interval_ms} ms: {opens} opens, formula ⌊1800 / (30 + {time_to_trip_ms} ms)⌋ = {expected}"
        );
    }
}
