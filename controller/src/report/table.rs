//! The CSV report: one row per condition and metric (per endpoint or per breaker where it is; tidy), with the comparison against the
//! baseline at the same fault kind and rate on the treatment condition's rows.

use super::ReportError;
use crate::stats::{ExperimentStats, MetricDifference};

/// The CSV's columns, in order.
pub const CSV_HEADER: [&str; 22] = [
    "condition_index",
    "condition",
    "fault_kind",
    "fault_rate",
    "breaker_mode",
    "rounds",
    "metric",
    "endpoint",
    "unit",
    "n",
    "mean",
    "sd",
    "ci_low",
    "ci_high",
    "half_width",
    "baseline_mode",
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "welch_df",
    "verdict",
    "breaker",
];

fn optional(value: Option<f64>) -> String {
    value.map_or_else(String::new, |v| v.to_string())
}

pub fn csv(stats: &ExperimentStats) -> Result<String, ReportError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(CSV_HEADER)?;
    for condition in &stats.conditions {
        let key = &condition.condition;
        let comparison = stats
            .comparisons
            .iter()
            .find(|c| c.treatment.index == key.index);
        for metric in &condition.metrics {
            let summary = &metric.summary;
            let difference: Option<&MetricDifference> =
                comparison.and_then(|c| c.metrics.iter().find(|d| d.key == metric.key));
            let d = difference.map(|d| &d.difference);
            writer.write_record([
                key.index.to_string(),
                key.label.clone(),
                key.fault_kind.clone(),
                key.fault_rate.to_string(),
                key.breaker_mode.clone(),
                condition.runs.to_string(),
                metric.key.metric.as_str().to_owned(),
                metric.key.endpoint.clone().unwrap_or_default(),
                metric.key.metric.unit().to_owned(),
                summary.n.to_string(),
                summary.mean.to_string(),
                optional(summary.sd),
                optional(summary.ci_low),
                optional(summary.ci_high),
                optional(summary.half_width),
                comparison.map_or_else(String::new, |c| c.baseline.breaker_mode.clone()),
                optional(d.map(|d| d.difference)),
                optional(d.map(|d| d.ci_low)),
                optional(d.map(|d| d.ci_high)),
                optional(d.map(|d| d.df)),
                d.map_or_else(String::new, |d| d.verdict.as_str().to_owned()),
                metric.key.breaker.clone().unwrap_or_default(),
            ])?;
        }
    }
    let bytes = writer
        .into_inner()
        .map_err(|error| ReportError::Csv(error.into_error().into()))?;
    Ok(String::from_utf8(bytes).expect("the CSV writer writes the UTF-8 it is given"))
}
