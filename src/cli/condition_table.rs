//! What `run` and `resume` print when they end: per condition of the experiment, over its finished runs, the
//! runs, mean availability, mean successful requests per second, failed and rejected calls, and how many runs the
//! stop condition aborted — a table, or JSON with `--json`.

use std::collections::BTreeMap;

use controller::store::{ExperimentId, RunRow, Status, Store};
use serde_json::json;

use crate::cli::output::out;

/// Per condition over its finished runs: runs, mean availability, mean successful req/s, rejected;
/// and how many of its runs the stop condition aborted (a verdict, not in the means).
pub(super) async fn print(store: &Store, id: ExperimentId, json_out: bool) -> anyhow::Result<()> {
    let runs = store.runs(id).await?;
    let mut by_condition: BTreeMap<i64, Vec<&RunRow>> = BTreeMap::new();
    for run in runs
        .iter()
        .filter(|r| r.status == Status::Finished || r.stopped_by_condition())
    {
        by_condition
            .entry(run.condition_index)
            .or_default()
            .push(run);
    }
    let rows: Vec<_> = by_condition
        .values()
        .map(|of_condition| {
            let label = &of_condition[0].condition_label;
            let stopped = of_condition
                .iter()
                .filter(|r| r.stopped_by_condition())
                .count();
            let runs: Vec<&RunRow> = of_condition
                .iter()
                .copied()
                .filter(|r| r.status == Status::Finished)
                .collect();
            let availability: Vec<f64> = runs
                .iter()
                .filter_map(|r| r.outcomes.and_then(|o| o.availability()))
                .collect();
            let ok_per_s: Vec<f64> = runs
                .iter()
                .filter_map(|r| {
                    let seconds = r.duration_ms as f64 / 1000.0;
                    r.outcomes
                        .map(|o| o.ok as f64 / seconds.max(f64::MIN_POSITIVE))
                })
                .collect();
            let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
            json!({
                "condition": label,
                "runs": runs.len(),
                "stopped": stopped,
                "availability_mean": mean(&availability),
                "ok_per_second_mean": mean(&ok_per_s),
                "rejected": runs.iter().filter_map(|r| r.outcomes.map(|o| o.rejected)).sum::<u64>(),
                "failed": runs.iter().filter_map(|r| r.outcomes.map(|o| o.failed)).sum::<u64>(),
            })
        })
        .collect();
    if json_out {
        out!(
            "{}",
            serde_json::to_string_pretty(&json!({ "experiment": id.0, "conditions": rows }))?
        );
        return Ok(());
    }
    out!("experiment {id}");
    out!(
        "{:<36} {:>4} {:>7} {:>12} {:>10} {:>9} {:>9}",
        "condition",
        "runs",
        "stopped",
        "availability",
        "ok/s",
        "failed",
        "rejected"
    );
    for row in &rows {
        out!(
            "{:<36} {:>4} {:>7} {:>12} {:>10} {:>9} {:>9}",
            row["condition"].as_str().unwrap_or(""),
            row["runs"].as_u64().unwrap_or(0),
            row["stopped"].as_u64().unwrap_or(0),
            row["availability_mean"]
                .as_f64()
                .map_or("-".into(), |a| format!("{a:.3}")),
            row["ok_per_second_mean"]
                .as_f64()
                .map_or("-".into(), |a| format!("{a:.1}")),
            row["failed"].as_u64().unwrap_or(0),
            row["rejected"].as_u64().unwrap_or(0),
        );
    }
    Ok(())
}
