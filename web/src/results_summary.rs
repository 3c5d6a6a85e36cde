//! The results page's curated summary: per condition the few headline metrics with their units and which
//! way is better for the user, and the colour of an off-vs-on verdict by whether the change helps or hurts
//! the user (a significant rise in rejections is not green).

use crate::operations::{Cell, Results};

/// Which way a metric is better for the people using the shop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Neither (breaker opens, time open: a cost or a protection depending on the case).
    Neither,
}

/// How a metric reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scale {
    /// A fraction shown as a percentage.
    Percent,
    /// A number in the named unit.
    Unit(&'static str),
    /// A count of the named things.
    Count(&'static str),
}

/// A headline column: the metric's key in [`Results::metrics`], its heading, scale and direction.
struct Headline {
    key: &'static str,
    heading: &'static str,
    scale: Scale,
    better: Better,
}

const HEADLINES: [Headline; 7] = [
    Headline {
        key: "availability",
        heading: "availability",
        scale: Scale::Percent,
        better: Better::Higher,
    },
    Headline {
        key: "checkout_failure",
        heading: "checkout failure",
        scale: Scale::Percent,
        better: Better::Lower,
    },
    // Successful checkouts apart from the rest: a fast rejection must not pull the headline latency down.
    Headline {
        key: "p95_ok_ms[POST /cart/checkout]",
        heading: "checkout p95, successful",
        scale: Scale::Unit("ms"),
        better: Better::Lower,
    },
    Headline {
        key: "p95_failed_ms[POST /cart/checkout]",
        heading: "checkout p95, failed or rejected",
        scale: Scale::Unit("ms"),
        better: Better::Lower,
    },
    // The live page's header counts the same: transitions to open after the warmup, shadow ones included.
    Headline {
        key: "breaker_opens",
        heading: "breaker opens after warmup",
        scale: Scale::Count("opens"),
        better: Better::Neither,
    },
    Headline {
        key: "cart_items_end",
        heading: "cart size at end",
        scale: Scale::Unit("items"),
        better: Better::Lower,
    },
    Headline {
        key: "energy_per_ok_j",
        heading: "energy per ok",
        scale: Scale::Unit("J"),
        better: Better::Lower,
    },
];

/// Which way `metric` (a key like `availability` or `p95_ms[GET /cart]`) is better for the user.
pub fn better(metric: &str) -> Better {
    let name = metric.split('[').next().unwrap_or(metric);
    match name {
        "availability" | "throughput_ok" => Better::Higher,
        "breaker_opens" | "time_open_s" => Better::Neither,
        _ => Better::Lower,
    }
}

/// `better`, `worse` or `unclear`: how an off-vs-on difference (on − off) reads for the user.
pub fn verdict_class(metric: &str, difference: f64, intervals_separate: bool) -> &'static str {
    if !intervals_separate || difference == 0.0 {
        return "unclear";
    }
    match (better(metric), difference > 0.0) {
        (Better::Higher, true) | (Better::Lower, false) => "better",
        (Better::Higher, false) | (Better::Lower, true) => "worse",
        (Better::Neither, _) => "unclear",
    }
}

/// One condition's row of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    pub condition: String,
    pub runs: usize,
    /// One text per heading: `73.4 % ± 2.1`, `–` when the metric is missing, `not measured` when a target could
    /// not measure it (the heading's [`SummaryTable::not_measured`] says why).
    pub cells: Vec<String>,
}

/// The summary: headings with unit and direction, one row per condition.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryTable {
    /// `availability (%, higher is better)`.
    pub headings: Vec<String>,
    /// Per heading, why its metric was not measured (the report's *Not measured* statement), empty when it was.
    pub not_measured: Vec<String>,
    pub rows: Vec<SummaryRow>,
}

/// Cell text of a metric a target could not measure.
pub const NOT_MEASURED: &str = "not measured";

/// A figure to three significant digits below 100 (`0.00354`, `3.50`, `73.4`), whole from 100 on: a small
/// energy per request reads `0.00354 J`, not `0.00 J`.
fn short(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 || magnitude == 0.0 {
        format!("{value:.2}")
    } else {
        // Three significant digits: as many decimals as the leading zeros need.
        let decimals = 2 - magnitude.log10().floor() as i32;
        format!("{value:.*}", decimals.clamp(2, 12) as usize)
    }
}

/// A count (breaker opens): whole when it is, one decimal when a mean of runs is not.
fn count(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}")
    } else {
        format!("{value:.1}")
    }
}

fn cell_text(cell: &Cell, scale: Scale) -> String {
    let (factor, unit) = match scale {
        Scale::Percent => (100.0, " %"),
        Scale::Unit(unit) => (1.0, unit),
        Scale::Count(unit) => (1.0, if unit == "opens" { "" } else { unit }),
    };
    let figure = |value: f64| match scale {
        Scale::Count(_) => count(value),
        _ => short(value),
    };
    let unit = if unit.is_empty() || unit.starts_with(' ') {
        unit.to_owned()
    } else {
        format!(" {unit}")
    };
    let shown = figure(cell.mean * factor);
    let mean = format!("{shown}{unit}");
    // The interval to the mean's own decimals: `3.50 ms ± 0.40`, `0.00354 J ± 0.00120`.
    let decimals = shown
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.len());
    match cell.half_width {
        Some(half) => format!("{mean} ± {:.*}", decimals, half * factor),
        None => mean,
    }
}

impl SummaryTable {
    pub fn of(results: &Results) -> SummaryTable {
        let headings = HEADLINES
            .iter()
            .map(|headline| {
                let unit = match headline.scale {
                    Scale::Percent => "%",
                    Scale::Unit(unit) | Scale::Count(unit) => unit,
                };
                let direction = match headline.better {
                    Better::Higher => ", higher is better",
                    Better::Lower => ", lower is better",
                    Better::Neither => "",
                };
                format!("{} ({unit}{direction})", headline.heading)
            })
            .collect();
        // The statement that left a headline's metric out, if one did: the metric is absent, not 0.
        let not_measured: Vec<String> = HEADLINES
            .iter()
            .map(|headline| {
                let name = headline.key.split('[').next().unwrap_or(headline.key);
                controller::metric::MetricName::ALL
                    .into_iter()
                    .find(|metric| metric.as_str() == name)
                    .and_then(|metric| controller::stats::left_out(&results.not_measured, metric))
                    .map(|line| line.statement.clone())
                    .unwrap_or_default()
            })
            .collect();
        let columns: Vec<Option<usize>> = HEADLINES
            .iter()
            .map(|headline| results.metrics.iter().position(|key| key == headline.key))
            .collect();
        let rows = results
            .conditions
            .iter()
            .map(|condition| SummaryRow {
                condition: condition.label.clone(),
                runs: condition.runs,
                cells: HEADLINES
                    .iter()
                    .zip(&columns)
                    .zip(&not_measured)
                    .map(|((headline, column), why)| {
                        if !why.is_empty() {
                            return NOT_MEASURED.to_owned();
                        }
                        column
                            .and_then(|index| condition.cells.get(index).copied().flatten())
                            .map_or_else(|| "–".to_owned(), |cell| cell_text(&cell, headline.scale))
                    })
                    .collect(),
            })
            .collect();
        SummaryTable {
            headings,
            not_measured,
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::{ConditionResult, ExperimentSummary};

    fn results() -> Results {
        let cell = |mean: f64, half: Option<f64>| {
            Some(Cell {
                mean,
                half_width: half,
                n: 3,
            })
        };
        Results {
            experiment: ExperimentSummary {
                id: 1,
                name: "outage".into(),
                status: crate::hub::ExperimentStatus::Finished,
                planned_runs: 2,
                finished_runs: Some(2),
                created_at_ms: 0,
                started_at_ms: None,
                finished_at_ms: None,
                scheduled_at_ms: None,
                abort_reason: None,
            },
            annotations: Vec::new(),
            metrics: vec![
                "energy_per_ok_j".into(),
                "availability".into(),
                "p95_ms[POST /cart/checkout]".into(),
                "p95_ok_ms[POST /cart/checkout]".into(),
                "p95_failed_ms[POST /cart/checkout]".into(),
            ],
            conditions: vec![ConditionResult {
                label: "error@1.00/enforce".into(),
                fault_kind: "error".into(),
                fault_rate: 1.0,
                breaker_mode: "enforce".into(),
                runs: 3,
                cells: vec![
                    cell(0.0123, None),
                    cell(0.734, Some(0.021)),
                    // Mixed with fast rejections: not what the summary shows.
                    cell(0.2, Some(0.1)),
                    cell(3.5, Some(0.4)),
                    cell(0.2, Some(0.1)),
                ],
            }],
            verdicts: Vec::new(),
            predictions: Vec::new(),
            not_measured: Vec::new(),
            runs: Vec::new(),
            charts: Vec::new(),
        }
    }

    #[test]
    fn figures_keep_three_significant_digits_and_counts_are_whole() {
        assert_eq!(short(0.00354), "0.00354");
        assert_eq!(short(0.0123), "0.0123");
        assert_eq!(short(0.734), "0.734");
        assert_eq!(short(3.5), "3.50");
        assert_eq!(short(73.4), "73.4");
        assert_eq!(short(0.0), "0.00");
        assert_eq!(count(2.0), "2");
        assert_eq!(count(1.5), "1.5");
    }

    #[test]
    fn the_summary_picks_the_headline_metrics_with_units() {
        let summary = SummaryTable::of(&results());
        assert_eq!(summary.headings[0], "availability (%, higher is better)");
        assert_eq!(
            summary.headings[2],
            "checkout p95, successful (ms, lower is better)"
        );
        assert_eq!(
            summary.headings[3],
            "checkout p95, failed or rejected (ms, lower is better)"
        );
        assert_eq!(summary.headings[4], "breaker opens after warmup (opens)");
        let row = &summary.rows[0];
        assert_eq!(row.condition, "error@1.00/enforce");
        assert_eq!(row.cells[0], "73.4 % ± 2.1");
        assert_eq!(row.cells[1], "–", "no checkout failure column");
        assert_eq!(
            row.cells[2], "3.50 ms ± 0.40",
            "the successful checkouts' p95"
        );
        assert_eq!(row.cells[3], "0.200 ms ± 0.100");
        assert_eq!(row.cells[6], "0.0123 J", "three significant digits");
    }

    #[test]
    fn a_metric_the_targets_could_not_measure_reads_not_measured_with_the_reason() {
        let mut results = results();
        // Even a stray value in the column is not shown as a measurement.
        results.metrics.push("breaker_opens".into());
        results.conditions[0].cells.push(Some(Cell {
            mean: 0.0,
            half_width: None,
            n: 3,
        }));
        results.not_measured = vec![controller::stats::NotMeasured {
            statement: "breaker opens and time open were not measured: no stream".into(),
            metrics: vec![
                controller::metric::MetricName::BreakerOpens,
                controller::metric::MetricName::TimeOpenS,
            ],
        }];
        let summary = SummaryTable::of(&results);
        assert_eq!(summary.rows[0].cells[4], NOT_MEASURED);
        assert_eq!(
            summary.not_measured[4],
            "breaker opens and time open were not measured: no stream"
        );
        assert_eq!(summary.rows[0].cells[5], "–", "cart size is only missing");
        assert!(summary.not_measured[5].is_empty());
        assert_eq!(summary.rows[0].cells[0], "73.4 % ± 2.1");
    }

    #[test]
    fn verdicts_are_coloured_by_what_they_mean_for_the_user() {
        // More rejections, significant: worse, not green.
        assert_eq!(verdict_class("rejected", 120.0, true), "worse");
        assert_eq!(verdict_class("availability", 0.2, true), "better");
        assert_eq!(verdict_class("availability", -0.2, true), "worse");
        assert_eq!(
            verdict_class("p95_ms[POST /cart/checkout]", -800.0, true),
            "better"
        );
        assert_eq!(
            verdict_class("p95_ms[POST /cart/checkout]", -800.0, false),
            "unclear"
        );
        assert_eq!(verdict_class("breaker_opens", 4.0, true), "unclear");
    }
}
