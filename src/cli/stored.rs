//! `tolerant list | show`: look at stored experiments — the list, and one experiment with its runs, failed or
//! aborted runs with their reasons, and its predictions beside the measurements.

use std::time::{Duration, UNIX_EPOCH};

use anyhow::{Context, bail};
use controller::stats::{PredictedCondition, RowKind, load_experiment};
use controller::store::{DEFAULT_DATABASE, ExperimentId, ExperimentRow, RunRow, Status, Store};
use serde_json::json;

use crate::cli::output::out;

#[derive(Debug, clap::Args)]
pub struct ListArgs {
    #[arg(long, default_value = DEFAULT_DATABASE, env = "TOLERANT_DB")]
    pub db: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ShowArgs {
    /// Experiment id (from `tolerant list`).
    pub id: i64,
    #[arg(long, default_value = DEFAULT_DATABASE, env = "TOLERANT_DB")]
    pub db: String,
    #[arg(long)]
    pub json: bool,
}

/// Energy per successful request of a run, labelled measured or modelled.
fn joules_per_ok(run: &RunRow) -> String {
    match (run.energy, run.outcomes) {
        (Some((joules, source)), Some(outcomes)) if outcomes.ok > 0 => {
            format!("{:.4} {}", joules / outcomes.ok as f64, source.as_str())
        }
        _ => "-".into(),
    }
}

fn rfc3339(ms: i64) -> String {
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(at).to_string()
}

/// Opens `--db` (created when it is a new SQLite file); an error names the flag.
pub(super) async fn open_store(db: &str) -> anyhow::Result<Store> {
    Store::open(db).await.with_context(|| format!("--db {db}"))
}

/// Opens `--db` and reads experiment `id` from it; an error names the flag or the id not found.
pub(super) async fn open_experiment(db: &str, id: i64) -> anyhow::Result<(Store, ExperimentRow)> {
    let store = open_store(db).await?;
    let Some(experiment) = store.experiment(ExperimentId(id)).await? else {
        bail!("experiment {id}: not found in {db}");
    };
    Ok((store, experiment))
}

pub async fn list(args: ListArgs) -> anyhow::Result<()> {
    let store = open_store(&args.db).await?;
    let experiments = store.experiments().await?;
    if args.json {
        out!("{}", serde_json::to_string_pretty(&experiments)?);
        return Ok(());
    }
    out!(
        "{:>4}  {:<24} {:<11} {:>5}  created",
        "id",
        "name",
        "status",
        "runs"
    );
    for experiment in experiments {
        out!(
            "{:>4}  {:<24} {:<11} {:>5}  {}",
            experiment.id,
            experiment.name,
            experiment.status.as_str(),
            experiment.planned_runs,
            rfc3339(experiment.created_at_ms)
        );
    }
    Ok(())
}

pub async fn show(args: ShowArgs) -> anyhow::Result<()> {
    let (store, experiment) = open_experiment(&args.db, args.id).await?;
    let id = experiment.id;
    let runs = store.runs(id).await?;
    let stats = load_experiment(&store, id).await?;
    let predictions = stats.predictions;
    if args.json {
        out!(
            "{}",
            serde_json::to_string_pretty(
                &json!({ "experiment": experiment, "runs": runs, "predictions": predictions })
            )?
        );
        return Ok(());
    }
    out!(
        "experiment {} · {} · {} · created {}",
        experiment.id,
        experiment.name,
        experiment.status.as_str(),
        rfc3339(experiment.created_at_ms)
    );
    if let Some(reason) = &experiment.abort_reason {
        out!("aborted: {reason}");
    }
    out!(
        "{:>5} {:>5} {:<36} {:<11} {:>9} {:>12} {:>9} {:>22}",
        "run",
        "round",
        "condition",
        "status",
        "requests",
        "availability",
        "rejected",
        "J per ok request"
    );
    for run in &runs {
        out!(
            "{:>5} {:>5} {:<36} {:<11} {:>9} {:>12} {:>9} {:>22}",
            run.id,
            run.round_index + 1,
            run.condition_label,
            run.status.as_str(),
            run.outcomes.map_or("-".into(), |o| o.total().to_string()),
            run.outcomes
                .and_then(|o| o.availability())
                .map_or("-".into(), |a| format!("{a:.3}")),
            run.outcomes.map_or("-".into(), |o| o.rejected.to_string()),
            joules_per_ok(run),
        );
    }
    out!(
        "{} of {} planned runs finished, {} stopped by the stop condition, {} failed (not a \
         measurement: left out of every mean)",
        runs.iter().filter(|r| r.status == Status::Finished).count(),
        experiment.planned_runs,
        runs.iter().filter(|r| r.stopped_by_condition()).count(),
        runs.iter().filter(|r| r.status == Status::Failed).count(),
    );
    for run in runs.iter().filter(|r| {
        matches!(
            r.status,
            Status::Failed | Status::Degraded | Status::Aborted
        )
    }) {
        let load_errors = match run.load_errors {
            Some(count) if count > 0 => {
                format!(" [{count} request(s) failed in the load generator]")
            }
            _ => String::new(),
        };
        out!(
            "  run {} {}: {}{load_errors}",
            run.id,
            run.status.as_str(),
            run.abort_reason.as_deref().unwrap_or("no reason given"),
        );
    }
    // What the figures leave out (a capability no target offers, a source blind during runs), and why.
    for line in &stats.experiment.not_measured {
        out!("not measured: {}", line.statement);
    }
    print_predictions(&predictions);
    Ok(())
}

/// A predicted band as `tolerant show` prints it: mean [lowest, highest], the band, its simulations.
fn band_text(band: &controller::predict::Band) -> String {
    format!(
        "{:>10.3} [{:.3}, {:.3}] band [{:.3}, {:.3}] ({} sims)",
        band.mean, band.low, band.high, band.band_low, band.band_high, band.simulations,
    )
}

/// Each condition's prediction (made from the spec before any run, or the model at the load the runs measured)
/// beside its measured mean ± 95 % CI.
fn print_predictions(predictions: &[PredictedCondition]) {
    if predictions.is_empty() {
        return;
    }
    out!(
        "\npredicted by breaker::sim from the spec (mean [lowest, highest]; band: 2.5th–97.5th percentile of the simulations) vs measured (mean ± 95 % CI); opens and time open per breaker; once measured, the model at the load that ran (its checkout rate and latencies):"
    );
    for predicted in predictions {
        out!("  {}", predicted.label);
        for row in predicted.rows() {
            let label = row.label();
            let shown = |m: &controller::stats::Summary| match m.half_width {
                Some(h) => format!("{:.3} ± {h:.3}", m.mean),
                None => format!("{:.3} (n = 1)", m.mean),
            };
            match row.kind {
                RowKind::LoadBasis {
                    assumed,
                    measured,
                    rerun,
                } => {
                    let note =
                        controller::stats::load_basis_note(assumed.as_ref(), measured, rerun);
                    let measured = measured.map_or("not measured yet".to_owned(), shown);
                    out!(
                        "    {label:<34} assumed   {}  measured {measured:<20} {note}",
                        assumed.map_or(controller::stats::RATE_NOT_KEPT.to_owned(), |b| band_text(
                            &b
                        ))
                    );
                }
                RowKind::Predicted { band, check } => {
                    let measured =
                        check.map_or("not measured yet".to_owned(), |c| shown(&c.measured));
                    let verdict = match check.map(|c| c.flag.as_deref()) {
                        Some(Some(reason)) => format!("OUTSIDE the band: {reason}"),
                        Some(None) => "within".to_owned(),
                        None => String::new(),
                    };
                    out!(
                        "    {label:<34} predicted {}  measured {measured:<20} {verdict}",
                        band_text(&band)
                    );
                }
                RowKind::OpensBound { bound, estimate } => {
                    let estimate = estimate
                        .map(|e| format!(", estimate ≈ {e:.1}"))
                        .unwrap_or_default();
                    out!("    {label:<34} ≤ {bound}{estimate}");
                }
                RowKind::Formula { value, formula } => {
                    out!("    {label:<34} = {value:.3} ({formula})");
                }
                RowKind::NotModelled { reason, measured } => {
                    let measured = measured
                        .map_or("not measured yet".to_owned(), |m| format!("{:.3}", m.mean));
                    out!("    {label:<34} measured {measured}; {reason}");
                }
            }
        }
    }
}
