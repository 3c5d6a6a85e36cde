//! How fast each breaker's dependency answered in a run's measured window, from the dependency's own sampled
//! `/metrics`: the increase of `boutique_http_request_duration_seconds_sum` over the increase of
//! `boutique_http_requests_total` (every class), in milliseconds. The figure a queueing flag cites: the models'
//! calls take no time, the testbed's take this long.

use std::collections::BTreeMap;

use super::sampled_counters::{counter_increases, label_value};
use crate::store::SampleRow;

const DURATION_SUM: &str = "boutique_http_request_duration_seconds_sum{";
const REQUESTS: &str = "boutique_http_requests_total{";
const CALLS: &str = "boutique_dependency_calls_total{";

/// What a series counts, keyed by the service it is about: `sum:S`, `count:S`, or `breaker:NAME` for the calls of
/// a breaker (the breakers whose dependency's latency is wanted).
fn select(series: &str) -> Option<String> {
    if let Some(labels) = series.strip_prefix(DURATION_SUM) {
        return Some(format!("sum:{}", label_value(labels, "service")?));
    }
    if let Some(labels) = series.strip_prefix(REQUESTS) {
        return Some(format!("count:{}", label_value(labels, "service")?));
    }
    let labels = series.strip_prefix(CALLS)?;
    Some(format!("breaker:{}", label_value(labels, "breaker")?))
}

/// Per breaker (`caller->dependency`) seen calling in the samples: the dependency's mean latency over the
/// seconds `measured` keeps, in milliseconds, where the dependency answered at least one request in them.
pub(super) fn dependency_mean_ms(
    samples: &[SampleRow],
    measured: impl Fn(i64) -> bool,
) -> BTreeMap<String, f64> {
    let increases = counter_increases(samples, measured, select);
    let mean_ms = |service: &str| {
        let count = *increases.get(&format!("count:{service}"))?;
        let sum = *increases.get(&format!("sum:{service}"))?;
        (count > 0.0).then(|| sum / count * 1000.0)
    };
    increases
        .keys()
        .filter_map(|key| key.strip_prefix("breaker:"))
        .filter_map(|breaker| {
            let (_, dependency) = breaker.split_once("->")?;
            Some((breaker.to_owned(), mean_ms(dependency)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::OutcomeCounts;
    use crate::store::CollectorSample;

    /// Payment's counters at one second: seconds of latency served so far, and its requests (2xx and 5xx).
    fn sample(second: i64, latency_s: f64, ok: f64, failed: f64) -> SampleRow {
        SampleRow {
            second,
            warmup: second < 2,
            outcomes: OutcomeCounts::default(),
            collector: CollectorSample {
                second: second as u64,
                extra: Some(serde_json::json!({ "metrics": {
                    "payment": {
                        "boutique_http_request_duration_seconds_sum{service=\"payment\"}": latency_s,
                        "boutique_http_requests_total{service=\"payment\",class=\"2xx\"}": ok,
                        "boutique_http_requests_total{service=\"payment\",class=\"5xx\"}": failed,
                    },
                    "checkout": {
                        "boutique_http_request_duration_seconds_sum{service=\"checkout\"}": 99.0,
                        "boutique_http_requests_total{service=\"checkout\",class=\"2xx\"}": 1.0,
                        "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->payment\",result=\"success\"}": ok,
                        "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->shipping\",result=\"success\"}": ok,
                    },
                }})),
                ..CollectorSample::default()
            },
        }
    }

    // Measured seconds 2..=4. From the warmup's last sample (second 1: 1 s over 10 requests) to second 4
    // (4 s over 30 + 10): 3 s of latency over 30 requests, 100 ms each. Shipping is never sampled: no figure.
    #[test]
    fn the_dependency_answered_in_its_latency_increase_over_its_requests_increase() {
        let samples = vec![
            sample(0, 0.0, 0.0, 0.0),
            sample(1, 1.0, 10.0, 0.0),
            sample(2, 2.0, 15.0, 5.0),
            sample(3, 2.5, 20.0, 5.0),
            sample(4, 4.0, 30.0, 10.0),
            sample(5, 400.0, 31.0, 10.0),
        ];
        let means = dependency_mean_ms(&samples, |s| (2..=4).contains(&s));
        let payment = means["checkout->payment"];
        assert!((payment - 100.0).abs() < 1e-9, "{payment}");
        assert_eq!(means.len(), 1, "{means:?}");
        // No request answered in the window: no figure rather than a division by zero.
        let idle = vec![sample(1, 1.0, 10.0, 0.0), sample(2, 1.0, 10.0, 0.0)];
        assert!(dependency_mean_ms(&idle, |s| s == 2).is_empty());
    }
}
