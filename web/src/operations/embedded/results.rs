//! The results page's content: per-condition figures, verdicts, charts and the downloads, from the
//! controller's statistics and report.

use controller::report::{self, Format};
use controller::stats;
use controller::store::ExperimentId;

use super::{EmbeddedOperations, entry_of, internal, store_failed, summary_of};
use crate::operations::{Cell, ChartSvg, ConditionResult, OperationError, Results, VerdictResult};

impl EmbeddedOperations {
    pub(super) async fn results_of(&self, id: i64) -> Result<Results, OperationError> {
        let row = self.experiment_row(id).await?;
        let stats = stats::load_experiment(&self.inner.store, ExperimentId(id))
            .await
            .map_err(internal)?;
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
        // The charts are a bonus on the page: a report that cannot draw them (no finished run yet)
        // still shows the table.
        let charts = if stats.conditions.is_empty() {
            Vec::new()
        } else {
            match report::render(&stats, Format::Md) {
                Ok(markdown) => markdown
                    .plots
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
        let annotations = self
            .inner
            .store
            .annotations(ExperimentId(id))
            .await
            .map_err(store_failed)?;
        let csv = report::render(&stats, Format::Csv).map_err(internal)?;
        let json =
            report::render_annotated(&stats, &annotations, Format::Json).map_err(internal)?;
        let finished = stats.experiment.finished_runs as i64;
        let runs = self
            .inner
            .store
            .runs(ExperimentId(id))
            .await
            .map_err(store_failed)?
            .iter()
            .map(super::replay::run_line)
            .collect();
        Ok(Results {
            experiment: summary_of(&row, Some(finished), self.scheduled().get(&id).copied()),
            annotations: annotations.iter().map(entry_of).collect(),
            metrics: keys.iter().map(ToString::to_string).collect(),
            conditions,
            verdicts,
            predictions: stats.predictions.clone(),
            not_measured: stats.experiment.not_measured.clone(),
            runs,
            charts,
            csv: csv.text,
            json: json.text,
        })
    }
}
