//! Reports of an experiment: markdown with SVG plots, a tidy CSV, or JSON — the table of
//! conditions × metrics with 95 % intervals, the off/on verdicts, and the study's figures (opens vs
//! failure rate, checkout p95 off vs on, observed vs injected checkout failure, cart size and `/cart`
//! latency over time, energy per successful request) — and the validation gate's markdown.
//!
//! [`render`] is pure (statistics in, text and SVG documents out); [`report`] reads the store first.
//! Nothing is written to disk until [`Report::write`] is asked to.

mod containers;
mod error;
mod figures;
mod format;
mod markdown;
mod plot;
mod table;
#[cfg(test)]
mod tests;
mod validation;

use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;

pub use containers::{ContainerUsage, container_usage};
pub use error::ReportError;
pub use figures::{Figure, figures};
pub use markdown::charts;
pub use plot::{Chart, PlotFile, Point, Series};
pub use table::CSV_HEADER;
pub use validation::validation_markdown;

use crate::stats::{CONFIDENCE, ExperimentStats, StatsError, load_experiment};
use crate::store::{AnnotationRow, ExperimentId, Store};

/// Output format of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown, with one SVG file per figure written next to it.
    Md,
    /// One row per condition and metric (RFC 4180).
    Csv,
    Json,
}

impl FromStr for Format {
    type Err = ReportError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "md" | "markdown" => Ok(Format::Md),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            other => Err(ReportError::Format(other.to_owned())),
        }
    }
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Md => "md",
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }
}

/// A rendered report.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub format: Format,
    pub text: String,
    /// SVG files the markdown links to (empty for CSV and JSON).
    pub plots: Vec<PlotFile>,
}

impl Report {
    /// Writes the text to `path` and every plot into the same directory; returns every path written.
    pub fn write(&self, path: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let write = |path: &Path, contents: &str| {
            std::fs::write(path, contents).map_err(|source| ReportError::Write {
                path: path.display().to_string(),
                source,
            })
        };
        write(path, &self.text)?;
        let directory = path.parent().unwrap_or(Path::new("."));
        let mut written = vec![path.to_owned()];
        for plot in &self.plots {
            let plot_path = directory.join(&plot.file_name);
            write(&plot_path, &plot.svg)?;
            written.push(plot_path);
        }
        Ok(written)
    }
}

/// The JSON document: the statistics with the confidence level they use, and the experiment's
/// annotations when they were read.
#[derive(Serialize)]
struct JsonReport<'a> {
    confidence: f64,
    #[serde(flatten)]
    stats: &'a ExperimentStats,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a [AnnotationRow]>,
    /// Per service, from the stored per-container samples (compose stacks only).
    #[serde(skip_serializing_if = "<[ContainerUsage]>::is_empty")]
    containers: &'a [ContainerUsage],
}

/// Renders `stats` in `format` (the JSON without annotations; see [`render_annotated`]).
pub fn render(stats: &ExperimentStats, format: Format) -> Result<Report, ReportError> {
    render_with(stats, None, &[], format)
}

/// Renders `stats` in `format` with the experiment's `annotations` (oldest first): an `annotations`
/// array in the JSON (empty when there are none), an *Annotations* table in the markdown when there
/// are any. The CSV is the same as [`render`]'s (one row per condition and metric).
pub fn render_annotated(
    stats: &ExperimentStats,
    annotations: &[AnnotationRow],
    format: Format,
) -> Result<Report, ReportError> {
    render_with(stats, Some(annotations), &[], format)
}

/// As [`render_annotated`], with a *Containers* section (markdown) or `containers` array (JSON) when the
/// experiment ran on a compose stack and stored per-container samples.
pub fn render_with_containers(
    stats: &ExperimentStats,
    annotations: &[AnnotationRow],
    containers: &[ContainerUsage],
    format: Format,
) -> Result<Report, ReportError> {
    render_with(stats, Some(annotations), containers, format)
}

fn render_with(
    stats: &ExperimentStats,
    annotations: Option<&[AnnotationRow]>,
    containers: &[ContainerUsage],
    format: Format,
) -> Result<Report, ReportError> {
    let (text, plots) = match format {
        Format::Md => markdown::markdown(stats, annotations.unwrap_or_default(), containers)?,
        Format::Csv => (table::csv(stats)?, Vec::new()),
        Format::Json => {
            let document = JsonReport {
                confidence: CONFIDENCE,
                stats,
                annotations,
                containers,
            };
            (serde_json::to_string_pretty(&document)? + "\n", Vec::new())
        }
    };
    Ok(Report {
        format,
        text,
        plots,
    })
}

/// Reads experiment `experiment` (its annotations and its finished runs' per-container samples included)
/// from `store` and renders its report.
pub async fn report(
    store: &Store,
    experiment: ExperimentId,
    format: Format,
) -> Result<Report, ReportError> {
    let stats = load_experiment(store, experiment).await?;
    let annotations = store
        .annotations(experiment)
        .await
        .map_err(StatsError::from)?;
    let mut samples = Vec::new();
    for run in store.runs(experiment).await.map_err(StatsError::from)? {
        if run.status == crate::store::Status::Finished {
            samples.extend(
                store
                    .container_samples(run.id)
                    .await
                    .map_err(StatsError::from)?,
            );
        }
    }
    render_with_containers(&stats, &annotations, &container_usage(&samples), format)
}
