//! The results page of one experiment: the curated summary, predictions, the full table, verdicts, annotations.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use controller::store::Status;
use http::HeaderMap;

use super::viewer::Viewer;
use super::{AnnotationLine, number, page, render};
use crate::error::PageError;
use crate::operations::Results;
use crate::state::AppState;

page!(ResultsPage);

/// A results cell, preformatted.
#[derive(Debug, Clone)]
pub struct CellText {
    pub mean: String,
    pub interval: String,
}

/// One predicted metric of one condition beside its measurement, as the results page shows it.
struct PredictionLine {
    condition: String,
    metric: &'static str,
    predicted: String,
    measured: String,
    /// `within`, `outside` or empty (not measured yet).
    verdict: &'static str,
    reason: String,
}

impl PredictionLine {
    /// `not_measured`: what the targets could not measure; a metric it left out reads so, not "yet".
    fn of(
        predicted: &controller::stats::PredictedCondition,
        not_measured: &[controller::stats::NotMeasured],
    ) -> Vec<PredictionLine> {
        let p = &predicted.prediction;
        let mut lines: Vec<PredictionLine> = p
            .bands()
            .into_iter()
            .map(|(metric, band)| {
                let check = predicted.checks.iter().find(|c| c.metric == metric);
                PredictionLine {
                    condition: predicted.label.clone(),
                    metric: metric.as_str(),
                    predicted: format!(
                        "{} [{}, {}]",
                        number(band.mean),
                        number(band.low),
                        number(band.high)
                    ),
                    measured: check.map_or_else(
                        || {
                            if controller::stats::left_out(not_measured, metric).is_some() {
                                crate::results_summary::NOT_MEASURED.to_owned()
                            } else {
                                "not measured yet".to_owned()
                            }
                        },
                        |c| match c.measured.half_width {
                            Some(half) => format!("{} ± {}", number(c.measured.mean), number(half)),
                            None => format!("{} (n = 1)", number(c.measured.mean)),
                        },
                    ),
                    verdict: match check.map(|c| c.flag) {
                        Some(Some(_)) => "outside",
                        Some(None) => "within",
                        None => "",
                    },
                    reason: check.and_then(|c| c.flag).unwrap_or_default().to_owned(),
                }
            })
            .collect();
        if let Some(bound) = p.opens_bound {
            lines.push(PredictionLine {
                condition: predicted.label.clone(),
                metric: "opens bound",
                predicted: match p.opens_estimate {
                    Some(estimate) => format!("≤ {bound} (estimate ≈ {})", number(estimate)),
                    None => format!("≤ {bound}"),
                },
                measured: String::new(),
                verdict: "",
                reason: String::new(),
            });
        }
        lines
    }
}

#[derive(Template)]
#[template(path = "results.html")]
struct ResultsPage {
    viewer: Viewer,
    page: &'static str,
    results: Results,
    rows: Vec<(String, usize, Vec<CellText>)>,
    /// Fault, metric, difference, verdict, and its class for the user: `better`, `worse` or `unclear`.
    verdicts: Vec<(String, String, String, String, &'static str)>,
    /// The curated summary shown before the full table.
    summary: crate::results_summary::SummaryTable,
    predictions: Vec<PredictionLine>,
    annotations: Vec<AnnotationLine>,
    /// Finished runs but no condition with the two a confidence interval needs.
    one_round: bool,
    intervals_note: &'static str,
}

pub async fn results(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Result<Response, PageError> {
    let results = state.operations.results(id).await?;
    let rows = results
        .conditions
        .iter()
        .map(|condition| {
            let cells = condition
                .cells
                .iter()
                .map(|cell| match cell {
                    Some(cell) => CellText {
                        mean: number(cell.mean),
                        interval: match cell.half_width {
                            Some(half) => format!("± {} (n = {})", number(half), cell.n),
                            None => format!("(n = {})", cell.n),
                        },
                    },
                    None => CellText {
                        mean: "–".into(),
                        interval: String::new(),
                    },
                })
                .collect();
            (condition.label.clone(), condition.runs, cells)
        })
        .collect();
    let verdicts = results
        .verdicts
        .iter()
        .map(|verdict| {
            (
                format!(
                    "{} at {:.0} %",
                    verdict.fault_kind,
                    verdict.fault_rate * 100.0
                ),
                verdict.metric.clone(),
                format!(
                    "{} [{}, {}]",
                    number(verdict.difference),
                    number(verdict.ci_low),
                    number(verdict.ci_high)
                ),
                verdict.verdict.clone(),
                crate::results_summary::verdict_class(
                    &verdict.metric,
                    verdict.difference,
                    verdict.intervals_separate,
                ),
            )
        })
        .collect();
    let annotations = results.annotations.iter().map(AnnotationLine::of).collect();
    let predictions = results
        .predictions
        .iter()
        .flat_map(|predicted| PredictionLine::of(predicted, &results.not_measured))
        .collect();
    render(&ResultsPage {
        viewer: Viewer::of(&state, &headers),
        page: "results",
        one_round: !results.conditions.is_empty()
            && results
                .conditions
                .iter()
                .all(|condition| condition.runs < controller::stats::MIN_ROUNDS_FOR_INTERVALS),
        intervals_note: controller::stats::INTERVALS_NEED_TWO_ROUNDS,
        summary: crate::results_summary::SummaryTable::of(&results),
        results,
        rows,
        verdicts,
        predictions,
        annotations,
    })
}
