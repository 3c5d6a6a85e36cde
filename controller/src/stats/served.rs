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

/// What a series counts, keyed by the service it is about: `sum:S`, `count:S`, or `failed:NAME` for the failed
/// calls of a breaker (the breakers whose dependency's latency is wanted).
fn select(series: &str) -> Option<String> {
    if let Some(labels) = series.strip_prefix(DURATION_SUM) {
        return Some(format!("sum:{}", label_value(labels, "service")?));
    }
    if let Some(labels) = series.strip_prefix(REQUESTS) {
        return Some(format!("count:{}", label_value(labels, "service")?));
    }
    let labels = series.strip_prefix(CALLS)?;
    if label_value(labels, "result")? != "failure" {
        return None;
    }
    Some(format!("failed:{}", label_value(labels, "breaker")?))
}

/// Per breaker (`caller->dependency`) that saw a call fail in the seconds `measured` keeps (the breakers a
/// fault reached, whose figures a flag may be about): its dependency's mean latency over those seconds, in
/// milliseconds, where the dependency answered at least one request in them.
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
        .iter()
        .filter(|(_, failed)| **failed > 0.0)
        .filter_map(|(key, _)| key.strip_prefix("failed:"))
        .filter_map(|breaker| {
            let (_, dependency) = breaker.split_once("->")?;
            Some((breaker.to_owned(), mean_ms(dependency)?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sampled_counters::metrics_sample;

    /// Payment's counters at one second: seconds of latency served so far, and its requests (2xx and 5xx).
    fn sample(second: i64, latency_s: f64, ok: f64, failed: f64) -> SampleRow {
        metrics_sample(
            second,
            serde_json::json!({
                    "payment": {
                        "boutique_http_request_duration_seconds_sum{service=\"payment\"}": latency_s,
                        "boutique_http_requests_total{service=\"payment\",class=\"2xx\"}": ok,
                        "boutique_http_requests_total{service=\"payment\",class=\"5xx\"}": failed,
                    },
                    "checkout": {
                        "boutique_http_request_duration_seconds_sum{service=\"checkout\"}": 99.0,
                        "boutique_http_requests_total{service=\"checkout\",class=\"2xx\"}": 1.0,
                        "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->payment\",result=\"failure\"}": failed,
                        "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->shipping\",result=\"failure\"}": failed,
                        "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->cart\",result=\"failure\"}": 0.0,
                        "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->cart\",result=\"success\"}": ok,
                    },
            }),
        )
    }

    // Measured seconds 2..=4. From the warmup's last sample (second 1: 1 s over 10 requests) to second 4
    // (4 s over 30 + 10): 3 s of latency over 30 requests, 100 ms each. Shipping is never sampled, and no call
    // to the cart failed (it is sampled, as the frontend's cart is): no figure for either.
    #[test]
    fn the_dependency_answered_in_its_latency_increase_over_its_requests_increase() {
        let mut samples = vec![
            sample(0, 0.0, 0.0, 0.0),
            sample(1, 1.0, 10.0, 0.0),
            sample(2, 2.0, 15.0, 5.0),
            sample(3, 2.5, 20.0, 5.0),
            sample(4, 4.0, 30.0, 10.0),
            sample(5, 400.0, 31.0, 10.0),
        ];
        for sample in &mut samples {
            let extra = sample.collector.extra.as_mut().unwrap();
            extra["metrics"]["cart"] = serde_json::json!({
                "boutique_http_request_duration_seconds_sum{service=\"cart\"}": 1.0 + sample.second as f64,
                "boutique_http_requests_total{service=\"cart\",class=\"2xx\"}": 10.0 * sample.second as f64,
            });
        }
        let means = dependency_mean_ms(&samples, |s| (2..=4).contains(&s));
        let payment = means["checkout->payment"];
        assert!((payment - 100.0).abs() < 1e-9, "{payment}");
        assert_eq!(means.len(), 1, "{means:?}");
        // A call failed (timed out at the caller, say) but the dependency answered nothing in the window: no
        // figure rather than a division by zero.
        let mut idle = vec![sample(1, 1.0, 10.0, 5.0), sample(2, 1.0, 10.0, 5.0)];
        let failures = "boutique_dependency_calls_total{service=\"checkout\",breaker=\"checkout->payment\",result=\"failure\"}";
        idle[1].collector.extra.as_mut().unwrap()["metrics"]["checkout"][failures] =
            serde_json::json!(6.0);
        assert!(dependency_mean_ms(&idle, |s| s == 2).is_empty());
    }
}
