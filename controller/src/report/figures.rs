//! The report's figures as data: which metric against what, one series per breaker mode (or per
//! condition for the over-time figures). Markdown draws them as SVG and lists their numbers.

use super::plot::{Chart, Point, Series};
use crate::metric::{MetricKey, MetricName, checkout_endpoint};
use crate::stats::ExperimentStats;

/// One figure of the report: a chart with what the report lists beside it.
#[derive(Debug, Clone)]
pub struct Figure {
    /// File-name part, e.g. `opens`.
    pub slug: &'static str,
    pub chart: Chart<'static>,
    /// The metric on the y axis, for figures against the failure rate.
    pub metric: Option<MetricKey>,
    /// Multiplies the metric's values for display (e.g. 100 for a fraction shown in %).
    pub scale: f64,
}

/// Name of the series of `(fault_kind, breaker_mode)`: the mode alone when there is one kind.
fn series_name(stats: &ExperimentStats, fault_kind: &str, mode: &str) -> String {
    if stats.fault_kinds().len() > 1 {
        format!("{fault_kind} / {mode}")
    } else {
        mode.to_owned()
    }
}

/// `metric` (times `scale`) against the fault rate in %, one series per fault kind and mode.
fn against_rate(stats: &ExperimentStats, metric: &MetricKey, scale: f64) -> Vec<Series> {
    let mut series = Vec::new();
    for kind in stats.fault_kinds() {
        for mode in stats.breaker_modes() {
            let mut points: Vec<Point> = stats
                .conditions
                .iter()
                .filter(|c| c.condition.fault_kind == kind && c.condition.breaker_mode == mode)
                .filter_map(|c| {
                    let summary = c.summary(metric)?;
                    Some(Point {
                        x: c.condition.fault_rate * 100.0,
                        y: summary.mean * scale,
                        interval: summary.interval().map(|(l, h)| (l * scale, h * scale)),
                    })
                })
                .collect();
            points.sort_by(|a, b| a.x.total_cmp(&b.x));
            if !points.is_empty() {
                series.push(Series {
                    name: series_name(stats, kind, mode),
                    points,
                });
            }
        }
    }
    series
}

/// A value of the averaged timeline against time, one series per condition.
fn over_time(
    stats: &ExperimentStats,
    value: impl Fn(&crate::stats::TimelineBin) -> Option<f64>,
) -> Vec<Series> {
    stats
        .conditions
        .iter()
        .filter_map(|c| {
            let points: Vec<Point> = c
                .timeline
                .iter()
                .filter_map(|bin| {
                    Some(Point {
                        x: 0.5 * (bin.start_s + bin.end_s),
                        y: value(bin)?,
                        interval: None,
                    })
                })
                .collect();
            (!points.is_empty()).then(|| Series {
                name: c.condition.label.clone(),
                points,
            })
        })
        .collect()
}

fn rate_figure(
    stats: &ExperimentStats,
    slug: &'static str,
    title: &'static str,
    y_label: &'static str,
    metric: MetricKey,
    scale: f64,
) -> Figure {
    Figure {
        slug,
        chart: Chart {
            title,
            x_label: "injected failure rate (%)",
            y_label,
            series: against_rate(stats, &metric, scale),
            diagonal: false,
            y_from_zero: true,
            shaded: Vec::new(),
        },
        metric: Some(metric),
        scale,
    }
}

/// A value of the averaged timeline over the measured window, the fault's on-periods shaded.
fn time_figure(
    stats: &ExperimentStats,
    slug: &'static str,
    title: &'static str,
    y_label: &'static str,
    value: impl Fn(&crate::stats::TimelineBin) -> Option<f64>,
) -> Figure {
    Figure {
        slug,
        chart: Chart {
            title,
            x_label: "seconds into the measured window",
            y_label,
            series: over_time(stats, value),
            diagonal: false,
            y_from_zero: true,
            shaded: stats.fault_periods.clone(),
        },
        metric: None,
        scale: 1.0,
    }
}

/// Every figure of the report, in order.
pub fn figures(stats: &ExperimentStats) -> Vec<Figure> {
    let mut observed = rate_figure(
        stats,
        "checkout-failure",
        "Observed checkout failure vs injected",
        "observed checkout failure (%)",
        MetricKey::run(MetricName::CheckoutFailure),
        100.0,
    );
    observed.chart.diagonal = true;
    vec![
        rate_figure(
            stats,
            "opens",
            "Breaker opens vs failure rate",
            "opens per run",
            MetricKey::run(MetricName::BreakerOpens),
            1.0,
        ),
        rate_figure(
            stats,
            "checkout-p95",
            "Checkout p95 latency of successful checkouts, breaker off vs on",
            "checkout p95, successful (ms)",
            MetricKey::endpoint(MetricName::P95OkMs, checkout_endpoint()),
            1.0,
        ),
        observed,
        time_figure(
            stats,
            "cart-size",
            "Mean cart size over the measured window",
            "items per cart",
            |bin| bin.cart_items,
        ),
        time_figure(
            stats,
            "cart-latency",
            "GET /cart mean latency over the measured window",
            "GET /cart mean latency (ms)",
            |bin| bin.cart_latency_ms,
        ),
        rate_figure(
            stats,
            "energy-per-ok",
            "Energy per successful request",
            "J per successful request",
            MetricKey::run(MetricName::EnergyPerOkJ),
            1.0,
        ),
    ]
}
