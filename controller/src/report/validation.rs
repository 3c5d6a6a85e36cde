//! The validation gate's markdown: every criterion, the interval it was judged on, and the verdict.

use std::fmt::Write;

use super::format::{cell, interval, number};
use crate::stats::{CriterionOutcome, ExperimentStats, ValidationReport};

/// The validation report for `experiment` as markdown.
pub fn validation_markdown(stats: &ExperimentStats, report: &ValidationReport) -> String {
    let mut out = String::new();
    let passed = report
        .results
        .iter()
        .filter(|r| r.outcome == CriterionOutcome::Pass)
        .count();
    let verdict = if report.passed() { "PASS" } else { "FAIL" };
    let _ = writeln!(
        out,
        "# Validation of experiment {}: {}\n\n**{verdict}**: {passed} of {} criteria hold over \
         their whole 95 % confidence interval ({} finished runs).\n",
        stats.experiment.id,
        cell(&stats.experiment.name),
        report.results.len(),
        stats.experiment.finished_runs
    );
    if report.results.is_empty() {
        let _ = writeln!(out, "The spec has no `[[validate]]` criteria.");
        return out;
    }
    let _ = writeln!(
        out,
        "| # | criterion | condition | mean | 95 % CI | n | result |\n|---:|---|---|---:|---|---:|---|"
    );
    for (i, result) in report.results.iter().enumerate() {
        let criterion = match &result.criterion.name {
            Some(name) => format!("{} ({})", cell(name), cell(&result.criterion.to_string())),
            None => cell(&result.criterion.to_string()),
        };
        let (mean, ci, n) = match &result.summary {
            Some(summary) => (
                number(summary.mean),
                interval(summary),
                summary.n.to_string(),
            ),
            None => ("–".to_owned(), "–".to_owned(), "0".to_owned()),
        };
        let outcome = match result.outcome {
            CriterionOutcome::Pass => "pass".to_owned(),
            other => format!("**{}**: {}", other.as_str(), cell(&result.explanation)),
        };
        let _ = writeln!(
            out,
            "| {} | {criterion} | {} | {mean} | {ci} | {n} | {outcome} |",
            i + 1,
            result
                .condition
                .as_deref()
                .map_or_else(|| "–".to_owned(), cell),
        );
    }
    out
}
