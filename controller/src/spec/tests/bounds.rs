//! Every count and duration has an upper bound, checked before anything is allocated.

use super::*;
use crate::test_support;

/// Every count and duration a spec holds has an upper bound, and crossing it is an error that names
/// the field — before anything is allocated (a plan of 4294967295 rounds would be 300 GB).
#[test]
fn absurd_counts_and_durations_are_rejected_naming_the_field() {
    let head = "name = \"t\"\nduration = \"10s\"\n";
    let load = "[load]\nusers = 2\n";
    let cases: Vec<(String, &str)> = vec![
        (format!("rounds = 4294967295\n{head}{load}"), "rounds"),
        (format!("rounds = 1001\n{head}{load}"), "rounds"),
        (
            // 101 rates × 4 modes × 30 rounds = 12,120 runs: each count in bounds, the product not.
            format!(
                "rounds = 30\n{head}{load}[fault]\ntarget = \"payment\"\nrates = [{}]\n[breaker]\nmodes = [\"enforce\", \"shadow\", \"disabled\", \"forced-open\"]\n",
                (0..=100)
                    .map(|i| format!("{}", f64::from(i) / 100.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "rounds",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nrates = [{}]\n",
                (0..102)
                    .map(|i| format!("{}", f64::from(i) / 1000.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "fault.rates",
        ),
        (format!("{head}[load]\nusers = 4294967295\n"), "load.users"),
        (
            format!("name = \"{}\"\nduration = \"10s\"\n{load}", "n".repeat(201)),
            "name",
        ),
        (format!("{head}time_scale = 1e-300\n{load}"), "time_scale"),
        (format!("{head}time_scale = 1e300\n{load}"), "time_scale"),
        (format!("{head}time_scale = inf\n{load}"), "time_scale"),
        (format!("{head}time_scale = nan\n{load}"), "time_scale"),
        (
            format!("name = \"t\"\nduration = \"500000000000y\"\n{load}"),
            "duration",
        ),
        (
            format!("name = \"t\"\nduration = \"367days\"\n{load}"),
            "duration",
        ),
        // In bounds as written, but 300 days / 0.01 is 82 years of one run.
        (
            format!("name = \"t\"\nduration = \"300days\"\ntime_scale = 0.01\n{load}"),
            "duration",
        ),
        (
            format!("{head}warmup = \"500000000000y\"\n{load}"),
            "warmup",
        ),
        (format!("{head}{load}rate = 1e-300\n"), "load.rate"),
        (format!("{head}{load}rate = 1e300\n"), "load.rate"),
        (format!("{head}{load}rate = -1.0\n"), "load.rate"),
        (
            format!("{head}{load}timeout = \"500000000000y\"\n"),
            "load.timeout",
        ),
        (
            format!("{head}{load}think_time = [\"1s\", \"500000000000y\"]\n"),
            "load.think_time[1]",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nkind = \"delay\"\ndelay = \"500000000000y\"\nrates = [0.5]\n"
            ),
            "fault.delay",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nkind = \"delay\"\ndelay = \"1s\"\njitter = \"500000000000y\"\nrates = [0.5]\n"
            ),
            "fault.jitter",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nrates = [0.5]\nlease = \"500000000000y\"\n"
            ),
            "fault.lease",
        ),
        (
            format!(
                "{head}{load}[fault]\ntarget = \"payment\"\nrates = [0.5]\nmatch = {{ path_prefix = \"/{}\" }}\n",
                "p".repeat(2000)
            ),
            "fault.match.path_prefix",
        ),
        (
            format!("{head}{load}[stop]\nwindow = \"500000000000y\"\n"),
            "stop.window",
        ),
        (
            format!(
                "{head}{load}[breaker]\nmodes = [\"enforce\"]\n[breaker.trip]\nfailure_rate = {{ threshold = 0.5, window = \"500000000000y\", min_calls = 5 }}\n"
            ),
            "breaker.trip.failure_rate.window",
        ),
        (
            // A day-long window is allowed as written; a thousandfold slower study makes it too long.
            format!(
                "name = \"t\"\nduration = \"10s\"\ntime_scale = 0.001\n{load}[breaker]\nmodes = [\"enforce\"]\n[breaker.trip]\nslow_call = {{ duration = \"1s\", rate = 0.5, window = \"1day\", min_calls = 5 }}\n"
            ),
            "breaker.trip.slow_call.window",
        ),
    ];
    for (source, expected) in cases {
        let (field, _, message) = error_of(&source);
        assert_eq!(field, expected, "{message}\n--- spec:\n{source}");
    }
}

#[test]
fn counts_and_durations_at_their_bounds_are_accepted() {
    let spec = test_support::spec(&format!(
        "rounds = {}\nname = \"{}\"\nduration = \"1s\"\ntime_scale = 0.001\n[load]\nusers = {}\nrate = 0.01\ntimeout = \"10m\"\n",
        bounds::MAX_ROUNDS,
        "n".repeat(bounds::MAX_NAME_BYTES),
        bounds::MAX_USERS
    ));
    assert_eq!(spec.plan().len(), bounds::MAX_ROUNDS as usize);
    assert_eq!(spec.run_duration(), Duration::from_secs(1000));
}
