//! Statistics: per-run metrics from stored rows, per-condition mean ± 95 % CI over rounds, off/on
//! comparisons (Welch), and the validation gate's criteria judged on those intervals.
//!
//! The flow is `Store` rows → [`run_metrics`] (one value per metric per run) → [`ExperimentStats`]
//! (one [`Summary`] per metric per condition, one [`Difference`] per metric per off/on pair) →
//! reports ([`crate::report`]) and [`evaluate`]d criteria. Everything but [`load_experiment`] is pure.

mod condition;
mod criteria;
mod metric;
mod run;
mod student;
#[cfg(test)]
mod tests;

pub use condition::{
    BASELINE_MODES, Comparison, ConditionKey, ConditionStats, EnergyLabel, ExperimentInfo,
    ExperimentStats, MetricDifference, MetricSummary, TimelinePoint,
};
pub use criteria::{
    Comparison as CriterionComparison, Criterion, CriterionError, CriterionResult,
    Outcome as CriterionOutcome, ValidationReport, check_against_spec, criteria_of_spec, evaluate,
    parse_criteria,
};
pub use metric::{
    ENDPOINT_ALIASES, MetricKey, MetricName, cart_view_endpoint, checkout_endpoint,
    resolve_endpoint,
};
pub use run::{RunData, RunMetrics, TIMELINE_BINS, TimelineBin, breaker_time_open, run_metrics};
pub use student::{CONFIDENCE, Difference, LARGE_DF, Summary, Verdict, Z_975, t_critical_95};

use crate::store::{ExperimentId, RunId, Status, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("experiment {0} does not exist")]
    NoExperiment(ExperimentId),
    #[error("run {run}, endpoint `{endpoint}`: stored histogram is unreadable: {message}")]
    Histogram {
        run: RunId,
        endpoint: String,
        message: String,
    },
}

/// Reads an experiment's finished runs from `store` and computes every figure. Aborted and
/// interrupted attempts are counted but left out of the figures.
pub async fn load_experiment(
    store: &Store,
    experiment: ExperimentId,
) -> Result<ExperimentStats, StatsError> {
    let row = store
        .experiment(experiment)
        .await?
        .ok_or(StatsError::NoExperiment(experiment))?;
    let runs = store.runs(experiment).await?;
    let mut keys = Vec::new();
    let mut metrics = Vec::new();
    let mut other_runs = 0;
    for run in runs {
        if run.status != Status::Finished {
            other_runs += 1;
            continue;
        }
        let data = RunData {
            samples: store.samples(run.id).await?,
            endpoint_seconds: store.endpoint_seconds(run.id).await?,
            endpoint_histograms: store.endpoint_histograms(run.id).await?,
            transitions: store.transitions(run.id).await?,
            run,
        };
        keys.push(ConditionKey::of(&data.run));
        metrics.push(run_metrics(&data)?);
    }
    let info = ExperimentInfo {
        id: row.id,
        name: row.name,
        status: row.status,
        planned_runs: row.planned_runs,
        finished_runs: metrics.len(),
        other_runs,
    };
    Ok(ExperimentStats::from_runs(info, keys, metrics))
}
