//! The results page's content: per-condition figures, verdicts and charts, and the downloads, from the
//! controller's statistics and report. Each request renders what it shows and nothing else (the page its
//! charts, a download its one format), on a blocking thread: drawing and rendering are CPU work that would
//! stall the async runtime's other requests.

use controller::report::{self, Format};
use controller::stats::{self, ExperimentStats};
use controller::store::{AnnotationRow, ExperimentId};

use super::{EmbeddedOperations, entry_of, internal, store_failed, summary_of};
use crate::operations::{
    Cell, ChartSvg, ConditionResult, OperationError, Results, RunFigures, VerdictResult,
};

impl EmbeddedOperations {
    pub(super) async fn results_of(&self, id: i64) -> Result<Results, OperationError> {
        let row = self.experiment_row(id).await?;
        let (stats, annotations) = self.stats_and_annotations(id).await?;
        let row_summary = summary_of(
            &row,
            Some(stats.experiment.finished_runs as i64),
            self.scheduled().get(&id).copied(),
        );
        let keys: Vec<_> = stats.metric_keys().into_iter().cloned().collect();
        let conditions = stats
            .conditions
            .iter()
            .map(|condition| ConditionResult {
                label: condition.condition.label.clone(),
                fault_kind: condition.condition.fault_kind.clone(),
                fault_rate: condition.condition.fault_rate,
                breaker_mode: condition.condition.breaker_mode.clone(),
                runs: condition.runs,
                cells: keys
                    .iter()
                    .map(|key| {
                        condition.summary(key).map(|summary| Cell {
                            mean: summary.mean,
                            half_width: summary.half_width,
                            n: summary.n,
                        })
                    })
                    .collect(),
            })
            .collect();
        let verdicts = stats
            .comparisons
            .iter()
            .flat_map(|comparison| {
                comparison.metrics.iter().map(move |metric| VerdictResult {
                    fault_kind: comparison.fault_kind.clone(),
                    fault_rate: comparison.fault_rate,
                    metric: metric.key.to_string(),
                    baseline: comparison.baseline.label.clone(),
                    treatment: comparison.treatment.label.clone(),
                    difference: metric.difference.difference,
                    ci_low: metric.difference.ci_low,
                    ci_high: metric.difference.ci_high,
                    intervals_separate: metric.difference.intervals_separate,
                    verdict: metric.difference.verdict.as_str().to_owned(),
                })
            })
            .collect();
        let runs = self
            .inner
            .store
            .runs(ExperimentId(id))
            .await
            .map_err(store_failed)?
            .iter()
            .map(super::replay::run_line)
            .collect();
        let predictions = stats.predictions.clone();
        let not_measured = stats.experiment.not_measured.clone();
        // The charts are a bonus on the page: a report that cannot draw them (no finished run yet)
        // still shows the table.
        let charts = if stats.conditions.is_empty() {
            Vec::new()
        } else {
            match rendered(move || report::charts(&stats)).await {
                Ok(plots) => plots
                    .into_iter()
                    .map(|plot| ChartSvg {
                        title: plot.title,
                        svg: plot.svg,
                    })
                    .collect(),
                Err(error) => {
                    tracing::warn!(experiment = id, %error, "report charts failed");
                    Vec::new()
                }
            }
        };
        Ok(Results {
            experiment: row_summary,
            annotations: annotations.iter().map(entry_of).collect(),
            metrics: keys.iter().map(ToString::to_string).collect(),
            conditions,
            verdicts,
            predictions,
            not_measured,
            runs,
            charts,
        })
    }

    /// Experiment `id`'s report in `format` alone, with its annotations (what `tolerant report` writes).
    pub(super) async fn report_of(
        &self,
        id: i64,
        format: Format,
    ) -> Result<String, OperationError> {
        self.experiment_row(id).await?;
        let (stats, annotations) = self.stats_and_annotations(id).await?;
        let report =
            rendered(move || report::render_annotated(&stats, &annotations, format)).await?;
        Ok(report.text)
    }

    /// The figures of finished run `run` of experiment `id`, from the same statistics as its results.
    pub(super) async fn run_figures_of(
        &self,
        id: i64,
        run: i64,
    ) -> Result<Option<RunFigures>, OperationError> {
        self.experiment_row(id).await?;
        let (stats, _) = self.stats_and_annotations(id).await?;
        let Some(metrics) = stats.runs.iter().find(|metrics| metrics.run_id.0 == run) else {
            return Ok(None);
        };
        let condition = stats
            .conditions
            .iter()
            .find(|condition| condition.condition.index == metrics.condition_index)
            .map_or_else(String::new, |condition| condition.condition.label.clone());
        Ok(Some(RunFigures {
            run_id: run,
            condition,
            round: metrics.round + 1,
            figures: metrics
                .values
                .iter()
                .map(|(key, value)| (key.to_string(), *value))
                .collect(),
        }))
    }

    /// Experiment `id`'s `[[validate]]` criteria (read from its stored spec) judged on its stored intervals.
    pub(super) async fn validation_of(
        &self,
        id: i64,
    ) -> Result<stats::ValidationReport, OperationError> {
        let row = self.experiment_row(id).await?;
        let spec = controller::spec::ExperimentSpec::parse(&row.spec_toml).map_err(internal)?;
        if spec.validate.is_empty() {
            return Err(OperationError::Conflict(format!(
                "validate: the spec of experiment {id} has no [[validate]] criteria"
            )));
        }
        let (stats, _) = self.stats_and_annotations(id).await?;
        Ok(stats::evaluate(&spec.validate, &stats))
    }

    /// Experiment `id`'s statistics and annotations, as every rendering of its results reads them.
    async fn stats_and_annotations(
        &self,
        id: i64,
    ) -> Result<(ExperimentStats, Vec<AnnotationRow>), OperationError> {
        let stats = stats::load_experiment(&self.inner.store, ExperimentId(id))
            .await
            .map_err(internal)?;
        let annotations = self
            .inner
            .store
            .annotations(ExperimentId(id))
            .await
            .map_err(store_failed)?;
        Ok((stats, annotations))
    }
}

/// Runs a rendering on the blocking pool; a rendering that panicked is an error, not a crash.
async fn rendered<T: Send + 'static>(
    render: impl FnOnce() -> Result<T, report::ReportError> + Send + 'static,
) -> Result<T, OperationError> {
    match tokio::task::spawn_blocking(render).await {
        Ok(rendered) => rendered.map_err(internal),
        Err(error) => Err(internal(format_args!(
            "rendering the report stopped: {error}"
        ))),
    }
}
