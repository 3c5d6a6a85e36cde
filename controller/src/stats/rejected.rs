//! Calls each breaker rejected in a run's measured window, from the sampled `/metrics` of every boutique service:
//! the increase of `boutique_dependency_calls_total{…,breaker="…",result="rejected"}`, summed over the labels
//! (replicas) that sampled it. The run's `rejected` is the load's count of rejected requests; this is each
//! breaker's own.

use std::collections::BTreeMap;

use super::sampled_counters::{counter_increases, label_value};
use crate::store::SampleRow;

const CALLS_SERIES: &str = "boutique_dependency_calls_total{";

/// The breaker a rejected-calls series is about, if `series` is one.
fn rejected_breaker(series: &str) -> Option<&str> {
    let labels = series.strip_prefix(CALLS_SERIES)?;
    if !labels.contains("result=\"rejected\"") {
        return None;
    }
    label_value(labels, "breaker")
}

/// Calls each breaker rejected over the seconds `measured` keeps ([`counter_increases`] of the rejected-calls
/// counters, by breaker).
pub(super) fn rejected_per_breaker(
    samples: &[SampleRow],
    measured: impl Fn(i64) -> bool,
) -> BTreeMap<String, f64> {
    counter_increases(samples, measured, |series| {
        rejected_breaker(series).map(str::to_owned)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sampled_counters::metrics_sample;

    fn sample(second: i64, frontend: f64, checkout: f64) -> SampleRow {
        metrics_sample(
            second,
            serde_json::json!({
                    "frontend": {
                        "boutique_dependency_calls_total{service=\"frontend\",breaker=\"frontend->checkout\",result=\"rejected\"}": frontend,
                        "boutique_dependency_calls_total{service=\"frontend\",breaker=\"frontend->checkout\",result=\"failure\"}": 1e6,
                    },
                    "checkout": {
                        "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->payment\",result=\"rejected\"}": checkout,
                    },
            }),
        )
    }

    // Measured seconds 2..=5. Frontend: 10 at the warmup's last sample (second 1), then 14, 20, 20, 25: 15.
    // Checkout: 3, then 4, restarted at 1 (counted as 1), 2, 2: 1 + 1 + 1 + 0 = 3. Second 6 is past the window.
    #[test]
    fn each_breaker_rejected_the_increase_of_its_counter_over_the_measured_window() {
        let samples: Vec<SampleRow> = [
            (0, 0.0, 0.0),
            (1, 10.0, 3.0),
            (2, 14.0, 4.0),
            (3, 20.0, 1.0),
            (4, 20.0, 2.0),
            (5, 25.0, 2.0),
            (6, 99.0, 50.0),
        ]
        .into_iter()
        .rev()
        .map(|(s, f, c)| sample(s, f, c))
        .collect();
        let rejected = rejected_per_breaker(&samples, |s| (2..=5).contains(&s));
        assert_eq!(rejected.get("frontend->checkout"), Some(&15.0));
        assert_eq!(rejected.get("checkout->payment"), Some(&3.0));
        assert_eq!(rejected.len(), 2);
        assert!(rejected_per_breaker(&samples, |_| false).is_empty());
    }
}
