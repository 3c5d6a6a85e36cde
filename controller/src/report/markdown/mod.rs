//! The markdown report: summary, conditions × headline metrics, off/on verdicts, the experiment's
//! annotations (when read), the figures (SVG plus their numbers), latency per endpoint, and every
//! metric per condition.

mod tables;

use std::fmt::Write;

use crate::report::figures::{Figure, figures};
use crate::report::format::cell;
use crate::report::{PlotFile, ReportError};
use crate::stats::{ExperimentStats, INTERVALS_NEED_TWO_ROUNDS};
use crate::store::AnnotationRow;

fn plot_file_name(stats: &ExperimentStats, figure: &Figure) -> String {
    format!("experiment-{}-{}.svg", stats.experiment.id, figure.slug)
}

/// `figure` drawn as the SVG file the markdown links; `None` when it has no data.
fn plot_of(stats: &ExperimentStats, figure: &Figure) -> Result<Option<PlotFile>, ReportError> {
    Ok(figure.chart.to_svg()?.map(|svg| PlotFile {
        file_name: plot_file_name(stats, figure),
        title: figure.chart.title.to_owned(),
        svg,
    }))
}

/// The report's figures as SVG files, as the markdown links them, without rendering the markdown (the
/// results page shows them beside its own tables).
pub fn charts(stats: &ExperimentStats) -> Result<Vec<PlotFile>, ReportError> {
    let mut plots = Vec::new();
    for figure in figures(stats) {
        plots.extend(plot_of(stats, &figure)?);
    }
    Ok(plots)
}

/// The markdown text and the SVG files it links; `annotations` and `containers` get a section when there are any.
pub fn markdown(
    stats: &ExperimentStats,
    annotations: &[AnnotationRow],
    containers: &[super::ContainerUsage],
) -> Result<(String, Vec<PlotFile>), ReportError> {
    let mut out = String::new();
    let mut plots = Vec::new();
    let info = &stats.experiment;
    // Writing into a String cannot fail.
    let _ = writeln!(out, "# Experiment {}: {}\n", info.id, cell(&info.name));
    let _ = write!(
        out,
        "Status **{}**; {} finished runs of {} planned ({} aborted or interrupted attempts left \
         out). ",
        info.status.as_str(),
        info.finished_runs,
        info.planned_runs,
        info.other_runs
    );
    if stats.has_intervals() || stats.conditions.is_empty() {
        let _ = writeln!(
            out,
            "Every figure is the mean over rounds ± the half-width of its 95 % confidence \
             interval (Student t, n − 1 degrees of freedom); ratios are computed per run, then \
             averaged. Off/on differences use Welch's t; *separate* means the two conditions' \
             intervals do not overlap, *difference only* that they overlap but the difference's \
             interval excludes zero.\n"
        );
    } else {
        let _ = writeln!(out, "**{INTERVALS_NEED_TWO_ROUNDS}**\n");
    }
    if info.failed_runs > 0 {
        let _ = writeln!(
            out,
            "**{} run(s) failed** — the run or its load generator panicked, or the load generator \
             could not send requests itself (e.g. out of file descriptors): not the system's \
             unavailability, left out of every figure; `tolerant show` gives each one's reason.\n",
            info.failed_runs
        );
    }
    if !stats.stopped.is_empty() {
        let _ = writeln!(
            out,
            "**{} run(s) stopped by the stop condition**: a verdict on their plan position (not \
             run again), left out of the figures because they ended early; see *Stopped by the \
             stop condition*.\n",
            stats.stopped.len()
        );
    }
    let energy: Vec<String> = stats
        .conditions
        .iter()
        .filter_map(|c| c.energy.map(|e| e.as_str().to_owned()))
        .collect();
    if !energy.is_empty() {
        let mut labels = energy.clone();
        labels.sort();
        labels.dedup();
        let _ = writeln!(out, "Energy figures are **{}**.\n", labels.join(", "));
    }

    if !info.not_measured.is_empty() {
        let _ = writeln!(out, "## Not measured\n");
        for line in &info.not_measured {
            let _ = writeln!(out, "- {}", cell(&line.statement));
        }
        let _ = writeln!(out);
    }

    conditions_table(&mut out, stats);
    stopped_table(&mut out, stats);
    comparisons_table(&mut out, stats);
    predictions_table(&mut out, stats);
    annotations_table(&mut out, annotations);

    let _ = writeln!(out, "## Figures\n");
    for figure in figures(stats) {
        let _ = writeln!(out, "### {}\n", figure.chart.title);
        match plot_of(stats, &figure)? {
            Some(plot) => {
                let _ = writeln!(out, "![{}]({})\n", figure.chart.title, plot.file_name);
                plots.push(plot);
            }
            None => {
                let _ = writeln!(out, "No data.\n");
                continue;
            }
        }
        if let Some(metric) = &figure.metric {
            figure_table(&mut out, stats, metric, figure.scale);
        }
        if figure.slug == "cart-latency" {
            cart_table(&mut out, stats);
        }
    }

    endpoint_table(&mut out, stats);
    super::containers::containers_table(&mut out, containers);
    details(&mut out, stats);
    Ok((out, plots))
}

use tables::{
    annotations_table, cart_table, comparisons_table, conditions_table, details, endpoint_table,
    figure_table, predictions_table, stopped_table,
};
