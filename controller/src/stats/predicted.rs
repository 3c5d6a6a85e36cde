//! The simulator's predictions set beside the measurements: per condition, each predicted metric's band against
//! the 95 % interval its runs measured, a miss flagged with the model assumption most likely behind it. The
//! predictions themselves come from [`crate::predict`], which knows nothing of measurements.

use serde::Serialize;

use super::student::Summary;
use crate::metric::{MetricKey, MetricName};
use crate::predict::{Band, MeasuredLoad, Prediction};

/// A condition's prediction (stored with the experiment) beside what its runs measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PredictedCondition {
    pub condition: i64,
    /// The condition's label, e.g. `error 500 @ 25% / enforce`.
    pub label: String,
    /// The prediction the checks are against: the model run again at the load the runs measured (its
    /// [`Prediction::at_measured_load`] says so) once they measured it, the one made from the spec before any
    /// run until then.
    pub prediction: Prediction,
    /// The prediction made from the spec before any run, when [`PredictedCondition::prediction`] is the one at
    /// the measured rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before_run: Option<Prediction>,
    /// The load's measured checkouts per second (none before the condition's first finished run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured_checkout_rate: Option<Summary>,
    /// One per predicted metric the runs measured (none before the condition's first finished run): the
    /// condition's, then the predicted breaker's own.
    pub checks: Vec<Check>,
    /// The breakers on the fault's path the model leaves out, with what they measured.
    pub not_modelled: Vec<UnmodelledBreaker>,
}

/// A breaker the model leaves out, its measured figures beside the reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnmodelledBreaker {
    pub breaker: String,
    pub reason: String,
    pub measured: Vec<(MetricName, Summary)>,
}

/// One line of a prediction as every view lists it: a predicted metric (the condition's, or a breaker's) with
/// its band and check, the predicted breaker's opens bound, or a breaker the model leaves out with what it
/// measured.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictionRow<'a> {
    pub metric: MetricName,
    /// `None`: the whole condition.
    pub breaker: Option<&'a str>,
    pub kind: RowKind<'a>,
}

/// What a [`PredictionRow`] holds.
#[derive(Debug, Clone, PartialEq)]
pub enum RowKind<'a> {
    /// The load the bands assume: the checkout rate of the prediction made before any run, the rate the runs
    /// measured, and the load the bands below were simulated at when it is the measured one.
    LoadBasis {
        /// `None` for a prediction stored before the rate was kept.
        assumed: Option<Band>,
        measured: Option<&'a Summary>,
        rerun: Option<&'a MeasuredLoad>,
    },
    /// A band, and its check once measured.
    Predicted {
        band: Band,
        check: Option<&'a Check>,
    },
    /// A breaker's opens bound (and, for the one in front of the dependency, the study's estimate); no
    /// measurement beside it: it is of one breaker, and a measurement may sum several.
    OpensBound { bound: u64, estimate: Option<f64> },
    /// A figure of arithmetic, not simulation, to set beside the band above it: seed 001's time to exhaustion.
    Formula { value: f64, formula: &'static str },
    /// Not modelled: why, and the breaker's own measurement.
    NotModelled {
        reason: &'a str,
        measured: Option<&'a Summary>,
    },
}

/// What a [`RowKind::LoadBasis`] row shows for the rate of a prediction stored before its rate was kept.
pub const RATE_NOT_KEPT: &str = "not kept (stored before it was)";

/// What a [`RowKind::LoadBasis`] row says of the bands after it: whether they are the prediction made before
/// any run or the model run again at the rate the runs measured, and why.
pub fn load_basis_note(
    assumed: Option<&Band>,
    measured: Option<&Summary>,
    rerun: Option<&MeasuredLoad>,
) -> String {
    match (measured, rerun) {
        (_, Some(load)) => {
            let mut note = format!(
                "the bands below are the model at the load the runs measured: {:.2} checkouts/s",
                load.checkout_rate
            );
            if let Some(assumed) = assumed {
                note.push_str(&format!(
                    " (the prediction made before the run assumed {:.2}–{:.2}/s)",
                    assumed.band_low, assumed.band_high
                ));
            }
            for (breaker, ms) in &load.latency_ms {
                note.push_str(&format!(
                    ", {breaker}'s dependency answering in {ms:.1} ms"
                ));
            }
            note.push_str("; the prediction before the run is kept as `before_run`");
            note
        }
        (Some(_), None) => {
            "the model could not be run at the measured load: the bands below are the prediction made \
             before the run"
                .to_owned()
        }
        (None, None) => "the rate the prediction made before the run assumes".to_owned(),
    }
}

/// How [`RowKind::Formula`]'s time to exhaustion is computed.
pub const EXHAUSTION_FORMULA: &str =
    "workers / (requests per second × share calling the dependency)";

impl PredictionRow<'_> {
    /// `metric` or `metric [breaker]`.
    pub fn label(&self) -> String {
        let metric = match self.kind {
            RowKind::LoadBasis { .. } => "load: checkout_rate",
            RowKind::OpensBound { .. } => "opens bound",
            RowKind::Formula { .. } => "exhaustion formula",
            _ => self.metric.as_str(),
        };
        match self.breaker {
            Some(breaker) => format!("{metric} [{breaker}]"),
            None => metric.to_owned(),
        }
    }
}

impl PredictedCondition {
    /// Every line of the prediction, in the order views list them: the condition's metrics, the predicted
    /// breaker's metrics and opens bound, then each breaker the model leaves out.
    pub fn rows(&self) -> Vec<PredictionRow<'_>> {
        let p = &self.prediction;
        let check = |metric: MetricName, breaker: Option<&str>| {
            self.checks
                .iter()
                .find(|c| c.metric == metric && c.breaker.as_deref() == breaker)
        };
        let assumed = self.before_run.as_ref().unwrap_or(p).checkout_rate;
        let rerun = p.at_measured_load.as_ref();
        let mut rows: Vec<PredictionRow<'_>> = (assumed.is_some() || rerun.is_some())
            .then_some(PredictionRow {
                metric: MetricName::CheckoutRate,
                breaker: None,
                kind: RowKind::LoadBasis {
                    assumed,
                    measured: self.measured_checkout_rate.as_ref(),
                    rerun,
                },
            })
            .into_iter()
            .collect();
        rows.extend(p.bands().into_iter().map(|(metric, band)| PredictionRow {
            metric,
            breaker: None,
            kind: RowKind::Predicted {
                band,
                check: check(metric, None),
            },
        }));
        if let Some(value) = p.pool.as_ref().and_then(|pool| pool.formula_s) {
            rows.push(PredictionRow {
                metric: MetricName::PoolExhaustionS,
                breaker: None,
                kind: RowKind::Formula {
                    value,
                    formula: EXHAUSTION_FORMULA,
                },
            });
        }
        for (name, bands, bound) in p.per_breaker() {
            let breaker = Some(name);
            rows.extend(bands.into_iter().map(|(metric, band)| PredictionRow {
                metric,
                breaker,
                kind: RowKind::Predicted {
                    band,
                    check: check(metric, breaker),
                },
            }));
            if let Some(bound) = bound {
                rows.push(PredictionRow {
                    metric: MetricName::BreakerOpens,
                    breaker,
                    kind: RowKind::OpensBound {
                        bound,
                        // The study's estimate is of the breaker in front of the dependency.
                        estimate: (name == p.breaker).then_some(p.opens_estimate).flatten(),
                    },
                });
            }
        }
        for left in &self.not_modelled {
            for metric in [MetricName::BreakerOpens, MetricName::TimeOpenS] {
                rows.push(PredictionRow {
                    metric,
                    breaker: Some(left.breaker.as_str()),
                    kind: RowKind::NotModelled {
                        reason: &left.reason,
                        measured: left
                            .measured
                            .iter()
                            .find(|(m, _)| *m == metric)
                            .map(|(_, s)| s),
                    },
                });
            }
        }
        rows
    }
}

/// One measured metric set beside its prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub metric: MetricName,
    /// The breaker a per-breaker check is about (`None`: the whole condition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker: Option<String>,
    pub predicted: Band,
    pub measured: Summary,
    /// Why the measurement may miss the band, when it does.
    pub flag: Option<String>,
}

/// What the runs measured that a flag can cite, against the model's calls that take no time: the checkout's
/// median latency, and the mean latency the modelled breaker's dependency answered with (its own `/metrics`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    pub checkout_p50_ms: Option<f64>,
    /// The dependency (`payment`) and its measured mean latency.
    pub dependency_mean_ms: Option<(String, f64)>,
    /// The queue places of the testbed's pools, when the condition's fault holds calls (a hang fills them): a
    /// checkout that waits there through the hang's last seconds reaches Payment after it and succeeds.
    pub pool_queue: Option<usize>,
}

/// The model assumption most likely behind a measurement of `metric` outside its band, with the measured
/// figure behind it where there is one.
pub fn likely_reason(metric: MetricName, measured_above: bool, evidence: &Evidence) -> String {
    let mut queueing = "queueing: the model's calls take no time".to_owned();
    if let Some((dependency, ms)) = &evidence.dependency_mean_ms {
        queueing.push_str(&format!(
            ", {dependency} answered in {ms:.1} ms on average (measured)"
        ));
    }
    if let Some(ms) = evidence.checkout_p50_ms {
        queueing.push_str(&format!(", the measured checkout median is {ms:.0} ms"));
    }
    match (metric, measured_above) {
        (MetricName::BreakerOpens | MetricName::TimeOpenS, true) => format!(
            "more failing calls per open window than the model's arrivals (its load has no retries); {queueing}"
        ),
        (MetricName::BreakerOpens | MetricName::TimeOpenS, false) => format!(
            "{queueing}; each checkout first spends time on the cart, catalogue, currency and shipping calls, so fewer calls reach Payment per open window"
        ),
        (MetricName::Rejected, _) => format!(
            "the model counts the checkouts the breakers of the checkout's chain reject; the load counts every rejected request, and its checkout rate depends on latency ({queueing})"
        ),
        (MetricName::CheckoutFailure, true) => {
            "in the model a checkout fails only through Payment; in the testbed other calls on the checkout path (and timeouts under load) fail it too".to_owned()
        }
        (MetricName::CheckoutFailure, false) => match evidence.pool_queue {
            Some(queue) => format!(
                "the model's pool has no queue; the testbed's pools hold up to {queue} requests waiting for a worker, so the checkouts of the hang's last seconds reach Payment after it ends and succeed ({queueing})"
            ),
            None => format!("the model has no latency, queueing or retries ({queueing})"),
        },
        (MetricName::PoolRefused, _) => format!(
            "the model's pool refuses a request as soon as every worker is busy; the testbed's pools queue up to {} first and refuse only when the queue is full too, and every sampled pool's refusals are summed",
            boutique::config::DEFAULT_POOL_QUEUE
        ),
        (MetricName::PoolExhaustionS, _) => format!(
            "the model's pool holds only the calls to the dependency; the testbed's frontend pool also holds every other page while it waits, and a saturated machine can fill it before the fault ({queueing})"
        ),
        _ => format!("the model has no latency, queueing or retries ({queueing})"),
    }
}

/// Why a breaker up the chain opens more, or longer, than the model's chain: measured on the pool experiment's
/// transitions (the frontend's breaker on Checkout tripping 1–7 ms before Checkout's on Payment).
const UP_THE_CHAIN_FIRST: &str = "this breaker's timeout starts with its call, the timeout below it only once the service below calls its dependency, so this breaker trips first and its half-open probe can meet the breaker below still open: a fast failure and one more open; the model's callers start their timeouts together";

/// How far each measured open's length may be off by its stamps (two whole-millisecond stamps, each up to a
/// millisecond late): the pool and probe-storm runs measured every open 1 ms longer than the model's window.
const STAMP_RESOLUTION_S: f64 = 0.002;

/// A prediction's bands beside a condition's measured summaries: one check per predicted metric measured, the
/// condition's under their run-wide keys and the predicted breaker's under its own (never a sum over breakers).
pub fn checks(
    prediction: &Prediction,
    measured: impl Fn(&MetricKey) -> Option<Summary>,
    evidence: Evidence,
) -> Vec<Check> {
    let whole = prediction
        .bands()
        .into_iter()
        .map(|(metric, band)| (MetricKey::run(metric), band));
    let breaker = prediction
        .per_breaker()
        .into_iter()
        .flat_map(|(name, bands, _)| {
            bands
                .into_iter()
                .map(move |(metric, band)| (MetricKey::breaker(metric, name), band))
        });
    whole
        .chain(breaker)
        .filter_map(|(key, predicted)| {
            let summary = measured(&key)?;
            // Transitions are stamped in whole milliseconds, each a millisecond or so after the instant: a
            // breaker's time open is measured to within STAMP_RESOLUTION_S per open, not to the model's exactness.
            let stamps = match key.metric {
                MetricName::TimeOpenS => measured(&MetricKey {
                    metric: MetricName::BreakerOpens,
                    ..key.clone()
                })
                .map_or(0.0, |opens| opens.mean * STAMP_RESOLUTION_S),
                _ => 0.0,
            };
            let low = summary.ci_low.unwrap_or(summary.mean) - stamps;
            let high = summary.ci_high.unwrap_or(summary.mean) + stamps;
            let above = low > predicted.band_high;
            let up_the_chain = key
                .breaker
                .as_deref()
                .is_some_and(|breaker| breaker != prediction.breaker);
            let flag =
                predicted
                    .misses(low, high)
                    .then(|| match (key.metric, above && up_the_chain) {
                        (MetricName::BreakerOpens | MetricName::TimeOpenS, true) => {
                            UP_THE_CHAIN_FIRST.to_owned()
                        }
                        _ => likely_reason(key.metric, above, &evidence),
                    });
            Some(Check {
                metric: key.metric,
                breaker: key.breaker,
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
        let opens = MetricKey::breaker(MetricName::BreakerOpens, on.breaker.clone());
        let inside = checks(
            &on,
            |key| (key == &opens).then(|| summary(on.breaker_opens.mean)),
            Evidence::default(),
        );
        assert_eq!(inside.len(), 1);
        assert_eq!(inside[0].flag, None);
        assert_eq!(inside[0].breaker.as_deref(), Some("checkout->payment"));
        // The run-wide sum over breakers is never set beside the one breaker's prediction.
        let summed = checks(
            &on,
            |key| (key == &MetricKey::run(MetricName::BreakerOpens)).then(|| summary(1e6)),
            Evidence::default(),
        );
        assert!(summed.is_empty(), "{summed:?}");
        let evidence = Evidence {
            checkout_p50_ms: Some(412.0),
            dependency_mean_ms: Some(("payment".to_owned(), 37.25)),
            pool_queue: None,
        };
        let halved = checks(
            &on,
            |key| (key == &opens).then(|| summary(on.breaker_opens.band_low / 2.0 - 5.0)),
            evidence.clone(),
        );
        let reason = halved[0].flag.as_deref().expect("flagged");
        assert!(
            reason.contains("queueing")
                && reason.contains("412 ms")
                && reason.contains("payment answered in 37.2 ms on average"),
            "{reason}"
        );
        let low = checks(
            &on,
            |key| (key == &MetricKey::run(MetricName::CheckoutFailure)).then(|| summary(0.2)),
            evidence.clone(),
        );
        let reason = low[0].flag.as_deref().expect("flagged");
        assert!(!reason.contains("no queue"), "{reason}");
        // A hang's pool queues: a checkout failure below the band names the queue, with its size.
        let queued = checks(
            &on,
            |key| (key == &MetricKey::run(MetricName::CheckoutFailure)).then(|| summary(0.2)),
            Evidence {
                pool_queue: Some(1024),
                ..evidence
            },
        );
        let reason = queued[0].flag.as_deref().expect("flagged");
        assert!(
            reason.contains("no queue") && reason.contains("1024 requests"),
            "{reason}"
        );
        // The frontend's breaker, up the chain, opening more than its band: its timeout starts first; the same
        // miss of the breaker in front of Payment keeps the general reason.
        let frontend = MetricKey::breaker(MetricName::BreakerOpens, "frontend->checkout");
        let high = on.upstream[0].opens.band_high + 10.0;
        let up = checks(
            &on,
            |key| (key == &frontend).then(|| summary(high)),
            Evidence::default(),
        );
        let reason = up[0].flag.as_deref().expect("flagged");
        assert!(reason.contains("trips first"), "{reason}");
        let own = checks(
            &on,
            |key| (key == &opens).then(|| summary(on.breaker_opens.band_high + 10.0)),
            Evidence::default(),
        );
        let reason = own[0].flag.as_deref().expect("flagged");
        assert!(!reason.contains("trips first"), "{reason}");
    }

    // 120 opens of exactly 10 s predicted (a band of no width): measured 1 ms longer each, as the millisecond
    // stamps give them, is within; 5 ms longer each is not.
    #[test]
    fn a_time_open_is_judged_to_the_resolution_of_its_stamps() {
        let exact = |mean: f64| Summary {
            n: 2,
            mean,
            sd: Some(0.0),
            half_width: Some(0.0),
            ci_low: Some(mean),
            ci_high: Some(mean),
        };
        let mut on = seed_study_on();
        on.breaker_opens = Band::of(&[120.0; 40]);
        on.time_open_s = Band::of(&[1200.0; 40]);
        let time = MetricKey::breaker(MetricName::TimeOpenS, on.breaker.clone());
        let opens = MetricKey::breaker(MetricName::BreakerOpens, on.breaker.clone());
        let judged = |seconds: f64| {
            checks(
                &on,
                |key| {
                    if key == &time {
                        Some(exact(seconds))
                    } else {
                        (key == &opens).then(|| exact(120.0))
                    }
                },
                Evidence::default(),
            )
            .into_iter()
            .find(|check| check.metric == MetricName::TimeOpenS)
            .expect("checked")
        };
        assert_eq!(judged(1200.120).flag, None);
        assert!(judged(1200.600).flag.is_some());
        assert!(judged(1199.4).flag.is_some());
    }
}
