//! The results page of one experiment: the curated summary, predictions, the full table, verdicts, annotations.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::Response;
use controller::stats::RowKind;
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
    /// `metric` or `metric [breaker]`.
    metric: String,
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
        predicted
            .rows()
            .into_iter()
            .map(|row| {
                let metric = row.label();
                let condition = predicted.label.clone();
                match row.kind {
                    RowKind::LoadBasis {
                        assumed,
                        measured,
                        rerun,
                    } => PredictionLine {
                        condition,
                        metric,
                        predicted: assumed
                            .map_or(controller::stats::RATE_NOT_KEPT.to_owned(), |b| {
                                band_text(&b)
                            }),
                        measured: measured.map_or("not measured yet".to_owned(), measured_text),
                        verdict: "",
                        reason: controller::stats::load_basis_note(
                            assumed.as_ref(),
                            measured,
                            rerun,
                        ),
                    },
                    RowKind::Predicted { band, check } => PredictionLine {
                        condition,
                        metric,
                        predicted: band_text(&band),
                        measured: check.map_or_else(
                            || {
                                if controller::stats::left_out(not_measured, row.metric).is_some() {
                                    crate::results_summary::NOT_MEASURED.to_owned()
                                } else {
                                    "not measured yet".to_owned()
                                }
                            },
                            |c| measured_text(&c.measured),
                        ),
                        verdict: match check.map(|c| c.flag.is_some()) {
                            Some(true) => "outside",
                            Some(false) => "within",
                            None => "",
                        },
                        reason: check.and_then(|c| c.flag.clone()).unwrap_or_default(),
                    },
                    RowKind::OpensBound { bound, estimate } => PredictionLine {
                        condition,
                        metric,
                        predicted: match estimate {
                            Some(estimate) => {
                                format!("≤ {bound} (estimate ≈ {})", number(estimate))
                            }
                            None => format!("≤ {bound}"),
                        },
                        measured: String::new(),
                        verdict: "",
                        reason: String::new(),
                    },
                    RowKind::Formula { value, formula } => PredictionLine {
                        condition,
                        metric,
                        predicted: format!("= {}", number(value)),
                        measured: String::new(),
                        verdict: "",
                        reason: formula.to_owned(),
                    },
                    RowKind::NotModelled { reason, measured } => PredictionLine {
                        condition,
                        metric,
                        predicted: "—".to_owned(),
                        measured: measured.map_or("not measured yet".to_owned(), measured_text),
                        verdict: "",
                        reason: reason.to_owned(),
                    },
                }
            })
            .collect()
    }
}

/// A predicted band as the page writes it: mean [lowest, highest], the band and its number of simulations.
fn band_text(band: &controller::predict::Band) -> String {
    format!(
        "{} [{}, {}]; band [{}, {}] of {} simulations",
        number(band.mean),
        number(band.low),
        number(band.high),
        number(band.band_low),
        number(band.band_high),
        band.simulations
    )
}

/// A measured summary as the page writes it: mean ± half-width.
fn measured_text(summary: &controller::stats::Summary) -> String {
    match summary.half_width {
        Some(half) => format!("{} ± {}", number(summary.mean), number(half)),
        None => format!("{} (n = 1)", number(summary.mean)),
    }
}

#[derive(Template)]
#[template(path = "results.html")]
struct ResultsPage {
    viewer: Viewer,
    page: &'static str,
    results: Results,
    rows: Vec<(String, usize, Vec<CellText>)>,
    /// "Every metric" a row each, a column per condition (the conditions are few, the metrics many: it fits a
    /// narrow page without scrolling sideways).
    metric_rows: Vec<(String, Vec<CellText>)>,
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
            let cells: Vec<CellText> = condition
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
        .collect::<Vec<_>>();
    let metric_rows = (results.metrics.iter().enumerate())
        .map(|(at, metric)| {
            let cells = rows.iter().filter_map(|row| row.2.get(at).cloned());
            (metric.clone(), cells.collect())
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
        metric_rows,
        verdicts,
        predictions,
        annotations,
    })
}
