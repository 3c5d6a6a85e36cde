//! The report's tables: headline metrics per condition, annotations, stopped runs, predictions beside measurements, off/on comparisons, each figure's numbers, cart sizes, latency per endpoint and every metric per condition.

use std::fmt::Write;

use crate::metric::{MetricKey, MetricName, checkout_endpoint};
use crate::report::format::{cell, interval, mean_and_half_width, number, percent};
use crate::stats::{
    BASELINE_MODES, ConditionStats, ExperimentStats, INTERVALS_NEED_TWO_ROUNDS, RowKind, left_out,
};
use crate::store::AnnotationRow;

/// Metrics shown in the main tables (CSV and JSON carry every metric).
pub fn headline_metrics() -> Vec<MetricKey> {
    vec![
        MetricKey::run(MetricName::Availability),
        MetricKey::run(MetricName::ThroughputOk),
        MetricKey::run(MetricName::CheckoutFailure),
        MetricKey::run(MetricName::Rejected),
        MetricKey::run(MetricName::BreakerOpens),
        MetricKey::run(MetricName::TimeOpenS),
        MetricKey::endpoint(MetricName::P95OkMs, checkout_endpoint()),
        MetricKey::endpoint(MetricName::P95FailedMs, checkout_endpoint()),
        MetricKey::run(MetricName::CartItemsEnd),
        MetricKey::run(MetricName::CartLatencyEndMs),
        MetricKey::run(MetricName::EnergyPerOkJ),
    ]
}

/// Column header of a metric: its name and unit.
fn header(key: &MetricKey) -> String {
    let name = match (&key.endpoint, key.metric) {
        (Some(endpoint), metric) if endpoint == checkout_endpoint() => {
            format!("checkout {metric}")
        }
        (Some(endpoint), metric) => format!("{endpoint} {metric}"),
        (None, metric) => metric.to_string(),
    };
    format!("{} ({})", cell(&name), key.metric.unit())
}

/// `2026-11-29 18:02:00.123 UTC` for Unix milliseconds.
fn wall_clock(at_ms: i64) -> String {
    let at =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(at_ms).unwrap_or(0));
    humantime::format_rfc3339_millis(at)
        .to_string()
        .replace('T', " ")
        .replace('Z', " UTC")
}

pub(super) fn annotations_table(out: &mut String, annotations: &[AnnotationRow]) {
    if annotations.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Annotations\n");
    let _ = writeln!(out, "| time | run | author | note |");
    let _ = writeln!(out, "|---|---|---|---|");
    for note in annotations {
        let run = note.run_id.map(|run| run.to_string()).unwrap_or_default();
        let author = note.author.as_deref().map(cell).unwrap_or_default();
        // A table row is one line.
        let text = cell(&note.text).replace(['\r', '\n'], " ");
        let _ = writeln!(
            out,
            "| {} | {run} | {author} | {text} |",
            wall_clock(note.at_ms)
        );
    }
    let _ = writeln!(out);
}

pub(super) fn conditions_table(out: &mut String, stats: &ExperimentStats) {
    let metrics: Vec<MetricKey> = headline_metrics()
        .into_iter()
        .filter(|key| stats.conditions.iter().any(|c| c.summary(key).is_some()))
        .collect();
    let _ = writeln!(out, "## Conditions\n");
    let _ = write!(out, "| condition | rounds |");
    for key in &metrics {
        let _ = write!(out, " {} |", header(key));
    }
    let _ = write!(out, "\n|---|---:|");
    for _ in &metrics {
        let _ = write!(out, "---:|");
    }
    out.push('\n');
    for condition in &stats.conditions {
        let _ = write!(
            out,
            "| {} | {} |",
            cell(&condition.condition.label),
            condition.runs
        );
        for key in &metrics {
            let text = condition
                .summary(key)
                .map_or_else(|| "–".to_owned(), mean_and_half_width);
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out.push('\n');
}

/// Runs the stop condition aborted, with the condition that fired (nothing when there are none).
pub(super) fn stopped_table(out: &mut String, stats: &ExperimentStats) {
    if stats.stopped.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Stopped by the stop condition\n\n| run | round | condition | reason |\n|---:|---:|---|---|"
    );
    for stopped in &stats.stopped {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            stopped.run,
            stopped.round_index + 1,
            cell(&stopped.condition.label),
            cell(&stopped.reason)
        );
    }
    out.push('\n');
}

/// Each condition's prediction (made from the spec before anything ran) beside its measured mean ± CI.
pub(super) fn predictions_table(out: &mut String, stats: &ExperimentStats) {
    if stats.predictions.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Predicted vs measured
"
    );
    let _ = writeln!(
        out,
        "Predicted from the spec before any run, and again at the load the runs measured, by the breaker on a virtual clock \
         (`breaker::sim`: the spec's users and think time, one task in nineteen a checkout calling \
         Payment, the condition's fault and breaker config): mean of the seeded simulations \
         [lowest, highest]; the band is their 2.5th–97.5th percentile, with the number of simulations \
         that made it ({} per condition). Each condition's first row is the load the bands assume: the \
         checkouts per second of those simulations beside the rate the runs measured; once the runs measured \
         it, the bands that follow are the model run again at the load that ran — that rate, and the measured \
         latency of each breaker's dependency up the chain (like with like). A measured 95 % interval that misses the band is flagged ⚠ with the \
         model assumption most likely behind it. Opens and time open are per breaker, each beside that \
         breaker's own measurement (the run-wide figures in the tables above are their sums); a breaker on the \
         fault's path the model leaves out says so beside what it measured. *Opens bound*: no config can \
         open that breaker more often (two trips are at least an open window plus the delay before a \
         failure is seen apart); *estimate*: measured time / (open window + time to trip), the study's \
         arithmetic.\n",
        crate::predict::SEEDS
    );
    let _ = writeln!(
        out,
        "| condition | metric | predicted | band | measured | |\n|---|---|---:|---:|---:|---|"
    );
    let mut reasons: Vec<String> = Vec::new();
    for predicted in &stats.predictions {
        let label = cell(&predicted.label);
        for row in predicted.rows() {
            let name = cell(&row.label());
            match row.kind {
                RowKind::LoadBasis {
                    assumed,
                    measured,
                    rerun,
                } => {
                    let shown = measured.map_or("not measured yet".to_owned(), mean_and_half_width);
                    let note = crate::stats::load_basis_note(assumed.as_ref(), measured, rerun);
                    let _ = writeln!(
                        out,
                        "| {label} | {name} | {} | {shown} | {} |",
                        assumed.map_or_else(
                            || crate::stats::RATE_NOT_KEPT.to_owned() + " |",
                            |b| band_cells(&b)
                        ),
                        cell(&note),
                    );
                }
                RowKind::Predicted { band, check } => {
                    let measured = match check {
                        Some(c) => mean_and_half_width(&c.measured),
                        None if left_out(&stats.experiment.not_measured, row.metric).is_some() => {
                            "not measured (see *Not measured*)".to_owned()
                        }
                        None => "not measured yet".to_owned(),
                    };
                    let flag = match check.and_then(|c| c.flag.as_deref()) {
                        Some(reason) => {
                            reasons.push(format!("{label} — {}: {reason}", row.label()));
                            "⚠ outside"
                        }
                        None if check.is_some() => "within",
                        None => "",
                    };
                    let _ = writeln!(
                        out,
                        "| {label} | {name} | {} | {measured} | {flag} |",
                        band_cells(&band),
                    );
                }
                RowKind::OpensBound { bound, estimate } => {
                    let estimate = estimate
                        .map(|e| format!(", estimate ≈ {}", number(e)))
                        .unwrap_or_default();
                    let _ = writeln!(out, "| {label} | {name} | ≤ {bound}{estimate} | | | |");
                }
                RowKind::Formula { value, formula } => {
                    let _ = writeln!(
                        out,
                        "| {label} | {name} | {} ({}) | | | |",
                        number(value),
                        cell(formula)
                    );
                }
                RowKind::NotModelled { reason, measured } => {
                    let measured =
                        measured.map_or("not measured yet".to_owned(), mean_and_half_width);
                    let _ = writeln!(
                        out,
                        "| {label} | {name} | {} | | {measured} | |",
                        cell(reason)
                    );
                }
            }
        }
    }
    let _ = writeln!(out);
    if !reasons.is_empty() {
        let _ = writeln!(out, "Likely reasons for the flagged measurements:\n");
        for reason in reasons {
            let _ = writeln!(out, "- {reason}");
        }
        let _ = writeln!(out);
    }
}

/// A band's two cells: mean [lowest, highest], then the band with its number of simulations.
fn band_cells(band: &crate::predict::Band) -> String {
    format!(
        "{} [{}, {}] | [{}, {}] ({} sims)",
        number(band.mean),
        number(band.low),
        number(band.high),
        number(band.band_low),
        number(band.band_high),
        band.simulations,
    )
}

pub(super) fn comparisons_table(out: &mut String, stats: &ExperimentStats) {
    let _ = writeln!(out, "## Breaker off vs on\n");
    if !stats.has_intervals() && !stats.conditions.is_empty() {
        let _ = writeln!(out, "No verdict. {INTERVALS_NEED_TWO_ROUNDS}\n");
        return;
    }
    if stats.comparisons.is_empty() {
        let _ = writeln!(
            out,
            "No comparison: no failure rate has both a baseline mode ({}) and another mode with \
             at least two rounds each.\n",
            BASELINE_MODES.join(" or ")
        );
        return;
    }
    let _ = writeln!(
        out,
        "| fault | rate | on vs off | metric | off | on | on − off [95 % CI] | df | verdict |\n\
         |---|---:|---|---|---:|---:|---:|---:|---|"
    );
    let headline = headline_metrics();
    for comparison in &stats.comparisons {
        for key in &headline {
            let Some(d) = comparison.difference(key) else {
                continue;
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} vs {} | {} | {} | {} | {} [{}, {}] | {} | {} |",
                cell(&comparison.fault_kind),
                percent(comparison.fault_rate),
                comparison.treatment.breaker_mode,
                comparison.baseline.breaker_mode,
                header(key),
                number(d.baseline_mean),
                number(d.treatment_mean),
                number(d.difference),
                number(d.ci_low),
                number(d.ci_high),
                number(d.df),
                d.verdict.as_str()
            );
        }
    }
    out.push('\n');
}

/// The numbers behind a figure against the failure rate: rate × mode, in the figure's scale.
pub(super) fn figure_table(
    out: &mut String,
    stats: &ExperimentStats,
    metric: &MetricKey,
    scale: f64,
) {
    let modes = stats.breaker_modes();
    let _ = write!(out, "| fault | rate |");
    for mode in &modes {
        let _ = write!(out, " {mode} |");
    }
    let _ = write!(out, "\n|---|---:|");
    for _ in &modes {
        let _ = write!(out, "---:|");
    }
    out.push('\n');
    let mut cells: Vec<(&str, f64)> = Vec::new();
    for c in &stats.conditions {
        let key = (c.condition.fault_kind.as_str(), c.condition.fault_rate);
        if !cells.contains(&key) {
            cells.push(key);
        }
    }
    for (kind, rate) in cells {
        let _ = write!(out, "| {} | {} |", cell(kind), percent(rate));
        for mode in &modes {
            let text = stats
                .conditions
                .iter()
                .find(|c| {
                    c.condition.fault_kind == kind
                        && c.condition.fault_rate.to_bits() == rate.to_bits()
                        && c.condition.breaker_mode == *mode
                })
                .and_then(|c| c.summary(metric))
                .map_or_else(|| "–".to_owned(), |s| mean_and_half_width(&s.scaled(scale)));
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out.push('\n');
}

/// Cart size and `GET /cart` latency in the first and last fifth of the measured window.
pub(super) fn cart_table(out: &mut String, stats: &ExperimentStats) {
    let columns = [
        MetricName::CartItemsStart,
        MetricName::CartItemsEnd,
        MetricName::CartLatencyStartMs,
        MetricName::CartLatencyEndMs,
    ];
    let _ = writeln!(
        out,
        "| condition | cart items, first fifth | cart items, last fifth | GET /cart ms, first \
         fifth | GET /cart ms, last fifth |\n|---|---:|---:|---:|---:|"
    );
    for condition in &stats.conditions {
        let _ = write!(out, "| {} |", cell(&condition.condition.label));
        for metric in columns {
            let text = condition
                .summary(&MetricKey::run(metric))
                .map_or_else(|| "–".to_owned(), mean_and_half_width);
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    out.push('\n');
}

pub(super) fn endpoint_table(out: &mut String, stats: &ExperimentStats) {
    // Keys sort by metric first, so each endpoint comes once per latency metric: keep its first.
    let mut endpoints: Vec<&str> = Vec::new();
    for endpoint in stats
        .metric_keys()
        .into_iter()
        .filter_map(|key| key.endpoint.as_deref())
    {
        if !endpoints.contains(&endpoint) {
            endpoints.push(endpoint);
        }
    }
    if endpoints.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Latency per endpoint (ms)\n\np50, p95 and p99 of every request; then p95 of the successful \
         requests and of the others (failed, rejected, timed out), so a fast rejection does not pass for a \
         fast answer.\n"
    );
    let _ = writeln!(
        out,
        "| condition | endpoint | p50 | p95 | p99 | p95 ok | p95 not ok |\n|---|---|---:|---:|---:|---:|---:|"
    );
    for condition in &stats.conditions {
        for endpoint in &endpoints {
            let value = |metric| {
                condition
                    .summary(&MetricKey::endpoint(metric, *endpoint))
                    .map_or_else(|| "–".to_owned(), mean_and_half_width)
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(&condition.condition.label),
                cell(endpoint),
                value(MetricName::P50Ms),
                value(MetricName::P95Ms),
                value(MetricName::P99Ms),
                value(MetricName::P95OkMs),
                value(MetricName::P95FailedMs)
            );
        }
    }
    out.push('\n');
}

pub(super) fn details(out: &mut String, stats: &ExperimentStats) {
    let _ = writeln!(out, "## Every metric per condition\n");
    for condition in &stats.conditions {
        details_of(out, condition);
    }
}

fn details_of(out: &mut String, condition: &ConditionStats) {
    let _ = writeln!(
        out,
        "### {} ({} rounds)\n\n| metric | unit | n | mean | sd | 95 % CI |\n|---|---|---:|---:|---:|---|",
        cell(&condition.condition.label),
        condition.runs
    );
    for metric in &condition.metrics {
        let summary = &metric.summary;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&metric.key.to_string()),
            metric.key.metric.unit(),
            summary.n,
            number(summary.mean),
            summary.sd.map_or_else(|| "–".to_owned(), number),
            interval(summary)
        );
    }
    out.push('\n');
}
