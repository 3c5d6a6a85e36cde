//! `time_scale` divides durations and think time; scaling saturates.

use super::*;
use crate::test_support;

#[test]
fn time_scale_divides_durations_and_think_time() {
    let spec = test_support::spec(
        r#"
name = "t"
duration = "30m"
warmup = "5m"
time_scale = 30
[load]
users = 1
think_time = ["1s", "10s"]
"#,
    );
    assert_eq!(spec.run_duration(), Duration::from_secs(60));
    assert_eq!(spec.run_warmup(), Duration::from_secs(10));
    assert_eq!(
        spec.think_time(),
        (
            Duration::from_secs(1).div_f64(30.0),
            Duration::from_secs(10).div_f64(30.0)
        )
    );
}

#[test]
fn scaling_a_duration_saturates_instead_of_panicking() {
    let long = Duration::from_secs(u64::MAX / 2);
    assert_eq!(scale_duration(long, 1e-300), Duration::MAX);
    assert_eq!(scale_duration(long, 0.0), Duration::MAX);
    assert_eq!(scale_duration(long, f64::NAN), Duration::MAX);
    assert_eq!(
        scale_duration(Duration::from_secs(30), 30.0),
        Duration::from_secs(1)
    );
}
