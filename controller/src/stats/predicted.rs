//! The simulator's predictions set beside the measurements: per condition, each predicted metric's band against
//! the 95 % interval its runs measured, a miss flagged with the model assumption most likely behind it. The
//! predictions themselves come from [`crate::predict`], which knows nothing of measurements.

use serde::Serialize;

use super::student::Summary;
use crate::metric::MetricName;
use crate::predict::{Band, Prediction};

/// A condition's prediction (stored with the experiment) beside what its runs measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredictedCondition {
    pub condition: i64,
    /// The condition's label, e.g. `error 500 @ 25% / enforce`.
    pub label: String,
    pub prediction: Prediction,
    /// One per predicted metric the runs measured (none before the condition's first finished run).
    pub checks: Vec<Check>,
}

/// One measured metric set beside its prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub metric: MetricName,
    pub predicted: Band,
    pub measured: Summary,
    /// Why the measurement may miss the band, when it does.
    pub flag: Option<&'static str>,
}

/// The model assumption most likely behind a measurement of `metric` outside its band.
pub fn likely_reason(metric: MetricName, measured_above: bool) -> &'static str {
    match (metric, measured_above) {
        (MetricName::BreakerOpens | MetricName::TimeOpenS, true) => {
            "the model has one breaker on Payment; the testbed counts every breaker that opened on the checkout path"
        }
        (MetricName::BreakerOpens | MetricName::TimeOpenS, false) => {
            "the model's checkouts reach Payment at once; in the testbed each checkout first spends time on the cart, catalogue, currency and shipping calls, so fewer calls arrive per open window"
        }
        (MetricName::Rejected, _) => {
            "the model counts only checkouts the Payment breaker rejects; the testbed counts every rejected request (read paths too) and its checkout rate depends on latency"
        }
        (MetricName::CheckoutFailure, true) => {
            "in the model a checkout fails only through Payment; in the testbed other calls on the checkout path (and timeouts under load) fail it too"
        }
        _ => {
            "the model has no latency, queueing or retries: a closed loop of users whose only dependency call is Payment"
        }
    }
}

/// A prediction's bands beside a condition's measured summaries: one check per predicted metric measured.
pub fn checks(
    prediction: &Prediction,
    measured: impl Fn(MetricName) -> Option<Summary>,
) -> Vec<Check> {
    prediction
        .bands()
        .into_iter()
        .filter_map(|(metric, predicted)| {
            let summary = measured(metric)?;
            let low = summary.ci_low.unwrap_or(summary.mean);
            let high = summary.ci_high.unwrap_or(summary.mean);
            let flag = predicted
                .misses(low, high)
                .then(|| likely_reason(metric, low > predicted.band_high));
            Some(Check {
                metric,
                predicted,
                measured: summary,
                flag,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::predict;
    use crate::spec::{BreakerMode, ExperimentSpec};

    /// The seed study's prediction at total failure with the breaker on.
    fn seed_study_on() -> Prediction {
        let source = include_str!("../../../experiments/payment-errors.toml");
        let spec = ExperimentSpec::parse(source).expect("the shipped spec parses");
        let condition = spec
            .conditions()
            .into_iter()
            .find(|c| c.fault_rate == 1.0 && c.breaker_mode == BreakerMode::Enforce)
            .expect("condition in the spec");
        predict(&spec)
            .into_iter()
            .find(|p| p.condition == condition.index)
            .expect("a prediction")
    }

    #[test]
    fn a_measurement_outside_the_band_is_flagged_with_a_reason() {
        let on = seed_study_on();
        let summary = |mean: f64| Summary {
            n: 15,
            mean,
            sd: Some(1.0),
            half_width: Some(0.5),
            ci_low: Some(mean - 0.5),
            ci_high: Some(mean + 0.5),
        };
        let inside = checks(&on, |metric| {
            (metric == MetricName::BreakerOpens).then(|| summary(on.breaker_opens.mean))
        });
        assert_eq!(inside.len(), 1);
        assert_eq!(inside[0].flag, None);
        let doubled = checks(&on, |metric| {
            (metric == MetricName::BreakerOpens).then(|| summary(2.0 * on.breaker_opens.high + 5.0))
        });
        let reason = doubled[0].flag.expect("flagged");
        assert!(reason.contains("every breaker"), "{reason}");
        let low = checks(&on, |metric| {
            (metric == MetricName::CheckoutFailure).then(|| summary(0.2))
        });
        assert!(low[0].flag.is_some());
    }
}
