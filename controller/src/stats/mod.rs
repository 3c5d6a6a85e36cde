//! Statistics: per-run metrics from stored rows, per-condition mean ± 95 % CI over rounds, off/on
//! comparisons (Welch), and the validation gate's criteria judged on those intervals.
//!
//! The flow is `Store` rows → [`run_metrics`] (one value per metric per run) → [`ExperimentStats`]
//! (one [`Summary`] per metric per condition, one [`Difference`] per metric per off/on pair) →
//! reports ([`crate::report`]) and [`evaluate`]d criteria. Everything but [`load_experiment`] is pure. A run's
//! figures leave out what was not measured: a capability no target offers ([`not_measured_statements`]), and
//! the breakers of a `[[sources]]` source while it was blind ([`Blindness`]).

mod blind;
mod condition;
mod criteria;
mod error;
mod not_measured;
mod pool;
mod predicted;
pub mod probes;
mod rejected;
mod run;
mod sampled_counters;
mod served;
mod student;
#[cfg(test)]
mod tests;

pub use crate::spec::{
    Criterion, CriterionComparison, CriterionError, check_against_spec, criteria_of_spec,
    parse_criteria,
};
pub use blind::Blindness;
pub use condition::{
    BASELINE_MODES, Comparison, ConditionKey, ConditionStats, EnergyLabel, ExperimentInfo,
    ExperimentStats, INTERVALS_NEED_TWO_ROUNDS, MIN_ROUNDS_FOR_INTERVALS, MetricDifference,
    MetricSummary, StoppedRun,
};
pub use criteria::{CriterionOutcome, CriterionResult, ValidationReport, evaluate};
pub use error::StatsError;
pub use not_measured::{
    NotMeasured, left_out, not_measured, not_measured_statements, observes_breakers,
};
pub use predicted::{
    Check, Evidence, PredictedCondition, PredictionRow, RATE_NOT_KEPT, RowKind, UnmodelledBreaker,
    checks, likely_reason, load_basis_note,
};
pub use run::{
    RunData, RunMetrics, TIMELINE_BINS, TimelineBin, breaker_time_open, per_breaker_time_open,
    run_metrics,
};
pub use student::{CONFIDENCE, Difference, LARGE_DF, Summary, Verdict, Z_975, t_critical_95};

use crate::metric::{MetricKey, MetricName, cart_view_endpoint};
use crate::predict::{MeasuredLoad, Prediction};
use crate::spec::ExperimentSpec;
use crate::store::{ExperimentId, Status, Store};

/// Reads an experiment's finished runs from `store` and computes every figure. Runs the stop
/// condition aborted are listed as such (a verdict on their plan position); other aborted and
/// interrupted attempts are counted. Neither enters the figures.
pub async fn load_experiment(
    store: &Store,
    experiment: ExperimentId,
) -> Result<ExperimentStats, StatsError> {
    let row = store
        .experiment(experiment)
        .await?
        .ok_or(StatsError::NoExperiment(experiment))?;
    let runs = store.runs(experiment).await?;
    // A spec that no longer parses (written by an older version) is reported on without the statements.
    let spec = ExperimentSpec::parse(&row.spec_toml).ok();
    let not_measured = spec
        .as_ref()
        .map(not_measured_statements)
        .unwrap_or_default();
    let mut keys = Vec::new();
    let mut metrics = Vec::new();
    let mut other_runs = 0;
    let mut failed_runs = 0;
    let mut stopped = Vec::new();
    let mut blindness = Blindness::default();
    for run in runs {
        if let Some(stopped_run) = StoppedRun::of(&run) {
            stopped.push(stopped_run);
            continue;
        }
        if run.status != Status::Finished {
            other_runs += 1;
            failed_runs += usize::from(run.status == Status::Failed);
            continue;
        }
        let data = RunData {
            samples: store.samples(run.id).await?,
            endpoint_seconds: store
                .endpoint_seconds_of(run.id, cart_view_endpoint())
                .await?,
            endpoint_histograms: store.endpoint_histograms(run.id).await?,
            transitions: store.transitions(run.id).await?,
            probe_buckets: store
                .run_events(run.id)
                .await?
                .into_iter()
                .find_map(|record| match record.event {
                    // Buckets no agent answered for are no measurement, not a zero.
                    crate::store::RunEvent::ProbeBuckets(read) if !read.agents.is_empty() => {
                        Some(read.buckets)
                    }
                    _ => None,
                }),
            run,
        };
        keys.push(ConditionKey::of(&data.run));
        let mut run_metrics = run_metrics(&data)?;
        if let Some(custom) = spec.as_ref().and_then(|spec| spec.load.custom.as_ref()) {
            // A workload of the user's shape: the critical failures and rate are its critical task's, if it
            // marks one.
            let key = MetricKey::run(MetricName::CheckoutFailure);
            let rate_key = MetricKey::run(MetricName::CheckoutRate);
            run_metrics.values.remove(&key);
            run_metrics.values.remove(&rate_key);
            let critical = custom.critical_endpoint().and_then(|endpoint| {
                data.endpoint_histograms
                    .iter()
                    .find(|row| row.endpoint == endpoint)
            });
            if let Some(failure) = critical.and_then(|row| row.outcomes.availability()) {
                run_metrics.values.insert(key, 1.0 - failure);
            }
            let rate =
                critical.and_then(|row| run::per_measured_second(&data.run, row.outcomes.total()));
            if let Some(rate) = rate {
                run_metrics.values.insert(rate_key, rate);
            }
        }
        if let Some(spec) = &spec {
            run_metrics
                .values
                .extend(pool::run_pool_metrics(spec, &data));
        }
        // What a target could not measure is left out, not counted as zero (no opens is not zero opens).
        run_metrics
            .values
            .retain(|key, _| left_out(&not_measured, key.metric).is_none());
        // Nor what a source did while it did not answer.
        blindness.take_run(
            &data.run,
            &store.run_sources(data.run.id).await?,
            &data.transitions,
            &mut run_metrics.values,
        );
        metrics.push(run_metrics);
    }
    let mut not_measured = not_measured;
    not_measured.extend(blindness.statements());
    let info = ExperimentInfo {
        id: row.id,
        name: row.name,
        status: row.status,
        planned_runs: row.planned_runs,
        finished_runs: metrics.len(),
        other_runs,
        failed_runs,
        not_measured,
    };
    let mut stats = ExperimentStats::from_runs(info, keys, metrics);
    stats.stopped = stopped;
    stats.fault_periods = spec
        .as_ref()
        .map(measured_fault_periods)
        .unwrap_or_default();
    let labels: Vec<String> = crate::spec::ExperimentSpec::parse(&row.spec_toml)
        .map(|spec| {
            spec.conditions()
                .iter()
                .map(|c| crate::spec::label_in(&spec, c))
                .collect()
        })
        .unwrap_or_default();
    stats.predictions = store
        .predictions(experiment)
        .await?
        .into_iter()
        .map(|prediction| {
            let index = prediction.condition;
            let label = labels
                .get(index)
                .cloned()
                .unwrap_or_else(|| format!("condition {index}"));
            let measured = stats.condition(index as i64);
            PredictedCondition::of(prediction, label, measured, spec.as_ref())
        })
        .collect();
    Ok(stats)
}

/// The spec's scheduled on-periods in seconds into the measured window (after the warmup), clipped to it; empty
/// without a schedule.
pub fn measured_fault_periods(spec: &ExperimentSpec) -> Vec<(f64, f64)> {
    if spec.fault.schedule.is_none() {
        return Vec::new();
    }
    let warmup = spec.run_warmup();
    spec.fault_periods()
        .into_iter()
        .filter(|(_, end)| *end > warmup)
        .map(|(start, end)| {
            (
                start.saturating_sub(warmup).as_secs_f64(),
                (end - warmup).as_secs_f64(),
            )
        })
        .collect()
}

/// A condition's summary of `key`; for a breaker that never changed state in any of the condition's runs, 0 in
/// each run that measured the metric (when the runs recorded per-breaker figures at all).
fn per_breaker_summary(stats: &ConditionStats, key: &MetricKey) -> Option<Summary> {
    if let Some(summary) = stats.summary(key) {
        return Some(*summary);
    }
    key.breaker.as_ref()?;
    let whole = stats.summary(&key.whole())?;
    // Zero only when the runs did measure per breaker (another breaker has the figure) or nothing opened.
    let per_breaker = stats
        .metrics
        .iter()
        .any(|m| m.key.metric == key.metric && m.key.breaker.is_some());
    (per_breaker || whole.mean == 0.0).then(|| Summary::of(&vec![0.0; whole.n]))?
}

impl PredictedCondition {
    /// Set `prediction` beside `measured` (the condition's stats, when it has finished runs). Once the runs
    /// measured their checkout rate and `spec` is known, the checks are against the model run again at the load
    /// that ran (that rate, and the measured latency of each breaker's dependency up the chain), `prediction`
    /// kept as [`PredictedCondition::before_run`]: like is compared with like.
    pub fn of(
        prediction: Prediction,
        label: String,
        measured: Option<&ConditionStats>,
        spec: Option<&ExperimentSpec>,
    ) -> PredictedCondition {
        let measured_checkout_rate = measured
            .and_then(|stats| stats.summary(&MetricKey::run(MetricName::CheckoutRate)))
            .copied();
        let rerun = match (spec, &measured_checkout_rate, measured) {
            (Some(spec), Some(rate), Some(stats)) => {
                let load = MeasuredLoad {
                    checkout_rate: rate.mean,
                    latency_ms: (prediction.upstream.iter())
                        .filter_map(|up| {
                            let key = MetricKey::breaker(
                                MetricName::DependencyMeanMs,
                                up.breaker.clone(),
                            );
                            Some((up.breaker.clone(), stats.summary(&key)?.mean))
                        })
                        .collect(),
                };
                crate::predict::predict_at_load(spec, prediction.condition, &load)
            }
            _ => None,
        };
        let (prediction, before_run) = match rerun {
            Some(rerun) => (rerun, Some(prediction)),
            None => (prediction, None),
        };
        let checks = measured.map_or_else(Vec::new, |stats| {
            let evidence = Evidence {
                checkout_p50_ms: stats
                    .summary(&MetricKey::endpoint(
                        MetricName::P50Ms,
                        crate::metric::checkout_endpoint(),
                    ))
                    .map(|s| s.mean),
                dependency_mean_ms: prediction.breaker.split_once("->").and_then(
                    |(_, dependency)| {
                        let key = MetricKey::breaker(
                            MetricName::DependencyMeanMs,
                            prediction.breaker.clone(),
                        );
                        Some((dependency.to_owned(), stats.summary(&key)?.mean))
                    },
                ),
                pool_queue: prediction
                    .pool
                    .as_ref()
                    .map(|_| boutique::config::DEFAULT_POOL_QUEUE),
            };
            checks(&prediction, |key| per_breaker_summary(stats, key), evidence)
        });
        let not_modelled = prediction
            .not_modelled
            .iter()
            .map(|left| UnmodelledBreaker {
                breaker: left.breaker.clone(),
                reason: left.reason.clone(),
                measured: measured.map_or_else(Vec::new, |stats| {
                    [MetricName::BreakerOpens, MetricName::TimeOpenS]
                        .into_iter()
                        .filter_map(|metric| {
                            let key = MetricKey::breaker(metric, left.breaker.clone());
                            Some((metric, per_breaker_summary(stats, &key)?))
                        })
                        .collect()
                }),
            })
            .collect();
        PredictedCondition {
            condition: prediction.condition as i64,
            label,
            prediction,
            before_run,
            measured_checkout_rate,
            checks,
            not_modelled,
        }
    }
}
