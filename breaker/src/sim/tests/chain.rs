//! Hand-computed scenarios with a caller further up the chain: its breaker tripping with the one below, its own
//! timeout, the latency of the service below it.

use super::*;

/// `idealised` with a caller further up the chain: the same breaker settings, and `timeout` of its own.
fn chained(kind: CallFailure, timeout: Duration, caller_timeout: Duration) -> RawScenario {
    let mut raw = idealised(3, 10 * S, Probes::All, kind, timeout, 10, 30);
    raw.callers = vec![Caller {
        breaker: raw.breaker.clone(),
        timeout: caller_timeout,
        latency: Duration::ZERO,
    }];
    raw
}

// Errors, the caller's breaker configured like the dependency's. Calls at 10, 11, 12 fail at once for both
// breakers (the service below answers 5xx): both trip at 12, open until 22. The caller rejects 13..21 (9); the
// dependency's breaker sees nothing. At 22 both are half-open, the probe fails through both, both reopen until
// 32: 23..31 rejected by the caller (9); again at 32, until 42: 33..41 (9). At 42 and 43 the probes succeed
// (healthy since 40), both close at 43. Per breaker: 3 opens, 30 s open; rejected 27 by the caller, 0 below.
#[test]
fn a_caller_up_the_chain_trips_with_the_breaker_below_and_takes_its_rejections() {
    let run = simulated(&chained(CallFailure::Error, 2 * S, 3 * S));
    let t = &run.totals;
    assert_eq!((t.opens, t.open_s), (3, 30.0));
    assert_eq!(
        t.callers,
        vec![CallerFigures {
            opens: 3,
            open: 30.0,
            rejected: 27
        }]
    );
    assert_eq!((t.never_made, t.reached), (27, 33));
    let below: u64 = run.seconds.iter().map(|s| s.rejected).sum();
    assert_eq!(below, 0);
    assert_eq!(run.seconds[13].callers[0].rejected, 1);
    assert_eq!(run.seconds[12].callers[0].opens, 1);
    // Without callers the same scenario is the one-breaker run: its breaker takes the rejections itself.
    let alone = simulated(&idealised(
        3,
        10 * S,
        Probes::All,
        CallFailure::Error,
        2 * S,
        10,
        30,
    ));
    assert!(alone.totals.callers.is_empty());
    assert_eq!(alone.totals.never_made, 27);
    assert_eq!(alone.seconds.iter().map(|s| s.rejected).sum::<u64>(), 27);
}

// The errors of the test above, the service below the caller taking 0.5 s for every call: the caller learns
// each outcome 0.5 s after the breaker below. Calls at 10, 11, 12 fail; the breaker below trips at 12 (open until
// 22), the caller at 12.5 (open until 22.5), so it rejects 13..22 (10). At 23 both are half-open, the probe fails
// through both: below reopens at 23 (until 33), the caller at 23.5 (until 33.5), 24..33 rejected (10). Again at 34:
// below until 44, the caller until 44.5, 35..44 rejected (10). At 45 and 46 the probes succeed (healthy since 40):
// below closes at 46, the caller at 46.5. Per breaker 3 opens and 30 s open; the caller rejects 30, one more per
// window than without the latency, its probe in flight half a second each time.
#[test]
fn a_caller_learns_outcomes_the_latency_of_the_service_below_later() {
    let mut raw = chained(CallFailure::Error, 2 * S, 3 * S);
    raw.callers[0].latency = Duration::from_millis(500);
    let run = simulated(&raw);
    let t = &run.totals;
    assert_eq!((t.opens, t.open_s), (3, 30.0));
    assert_eq!(
        t.callers,
        vec![CallerFigures {
            opens: 3,
            open: 30.0,
            rejected: 30
        }]
    );
    assert_eq!((t.never_made, t.reached), (30, 30));
    assert_eq!(run.seconds[22].callers[0].rejected, 1);
    assert_eq!(run.seconds[23].callers[0].rejected, 0);
    // Half-open from 22.5 to the probe's answer at 23.5: a second of the caller's not open.
    assert_eq!(run.seconds[22].callers[0].open, 0.5);
    // The published model tells every breaker at once: the latency changes nothing there.
    raw.model = Model::Published;
    let published = simulated(&raw);
    raw.callers[0].latency = Duration::ZERO;
    assert_eq!(published.totals, simulated(&raw).totals);
}

#[test]
fn a_caller_latency_is_checked_naming_its_field() {
    let mut raw = chained(CallFailure::Error, 2 * S, 3 * S);
    raw.callers[0].latency = Duration::from_secs(601);
    let error = Scenario::try_from(raw).expect_err("a latency over the bound");
    assert_eq!(error.field, "callers[0].latency");
}

// Hangs of 2 s, the caller giving up after 1 s. Calls at 10, 11, 12 hang: the caller sees failures at 11, 12,
// 13 and trips at 13 (before the arrival at 13), open until 23; the breaker below sees them at 12, 13, 14, trips
// at 14, open until 24. The caller rejects 13..22 (10). At 23 its probe meets the breaker below still open: a
// rejection there (1), a failure at once for the caller, open until 33; 24..32 rejected (9). At 33 both probe,
// the call hangs: the caller fails at 34 (open until 44), the breaker below at 35 (open until 45); 34..43
// rejected (10). At 44 the caller's probe is rejected below (2), the caller reopens until 54; 45..53 (9). At 54
// and 55 both probe the healthy dependency and close at 55. Caller: 4 opens, open [13, 23) + [23, 33) + [34, 44)
// + [44, 54) = 40 s, 38 rejected; below: 2 opens, 2 rejected. The caller's fourth trip, at 44, is after the
// outage: a rejection from below, which its opens bound allows for (outage 30 s + the 2 s the breaker below
// waits + its 10 s window, 10 s apart: 5).
#[test]
fn a_caller_with_a_shorter_timeout_trips_first_and_the_rejections_below_reopen_it() {
    let run = simulated(&chained(CallFailure::Hang, 2 * S, S));
    let t = &run.totals;
    assert_eq!(
        t.callers,
        vec![CallerFigures {
            opens: 4,
            open: 40.0,
            rejected: 38
        }]
    );
    assert_eq!(t.opens, 2);
    assert_eq!(run.seconds.iter().map(|s| s.rejected).sum::<u64>(), 2);
    assert_eq!((run.seconds[23].rejected, run.seconds[44].rejected), (1, 1));
    assert_eq!(t.never_made, 40);
    assert_eq!(run.closed_form.callers_opens_bound, vec![5]);
    assert!(t.opens <= run.closed_form.opens_bound);
}

#[test]
fn a_caller_timeout_is_checked_naming_its_field() {
    let raw = chained(CallFailure::Hang, 2 * S, Duration::ZERO);
    let error = Scenario::try_from(raw).expect_err("a zero timeout");
    assert_eq!(error.field, "callers[0].timeout");
}
