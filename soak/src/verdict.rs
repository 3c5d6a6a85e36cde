//! The soak's pass criteria, as the issue states them, each judged into a [`Verdict`]: after the warmup every
//! process's RSS and descriptors stay within ±10 % (per-window means against the first window; the fitted slope
//! reported), after every kill no fault is left at the agent beyond its lease, no run is lost or duplicated, every
//! halt releases every held request, and the stats of every finished experiment are computable. A criterion with
//! nothing to judge (no kill, no halt, no finished experiment) fails: a soak that did not exercise it proves nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use controller::store::{ExperimentId, Status};

use crate::config::Config;
use crate::journal::Journal;
use crate::sample::{PROCESSES, read_csv};
use crate::sweep::{SweepSummary, open};

/// How far a window's mean may stray from the first window's: 10 %, or one unit where that is more (a process
/// with 9 descriptors other than sockets may open a tenth one for a while).
pub const TOLERANCE: f64 = 0.10;
/// How long after a controller (re)started its samples are left out of its stability (it is building up a run),
/// at most: a fifth of the kill interval when that is shorter.
pub const SETTLE: Duration = Duration::from_secs(60);

/// One criterion's verdict.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub criterion: String,
    pub passed: bool,
    pub detail: String,
}

fn verdict(criterion: impl Into<String>, passed: bool, detail: String) -> Verdict {
    Verdict {
        criterion: criterion.into(),
        passed,
        detail,
    }
}

/// Least-squares slope of `points` (x, y), per unit of x.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (mean_x, mean_y) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let numerator: f64 = points
        .iter()
        .map(|(x, y)| (x - mean_x) * (y - mean_y))
        .sum();
    let denominator: f64 = points.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    if denominator == 0.0 {
        0.0
    } else {
        numerator / denominator
    }
}

/// The judged samples of one series: after `warmup`, and for a process that restarts (its pid column changes)
/// not within [`SETTLE`] of a start.
fn judged(
    columns: &BTreeMap<String, Vec<Option<f64>>>,
    series: &str,
    pid: Option<&str>,
    warmup: f64,
    settle: f64,
) -> Vec<(f64, f64)> {
    let (times, values) = (&columns["t_s"], &columns[series]);
    let pids = pid.map(|pid| &columns[pid]);
    let mut points = Vec::new();
    let (mut last_pid, mut started_at) = (None, 0.0);
    for (index, (t, value)) in times.iter().zip(values).enumerate() {
        let Some(t) = *t else { continue };
        if let Some(pids) = pids {
            let pid = pids[index];
            if pid.is_some() && pid != last_pid {
                started_at = t;
            }
            last_pid = pid;
            if t - started_at < settle {
                continue;
            }
        }
        if let (true, Some(value)) = (t >= warmup, *value) {
            points.push((t, value));
        }
    }
    points
}

/// Stability of one series: window means against the first window's, and the slope per minute.
pub fn stability(name: &str, points: &[(f64, f64)], window: f64) -> Verdict {
    let criterion = format!("{name} within ±{:.0} %", TOLERANCE * 100.0);
    let Some(&(first_t, _)) = points.first() else {
        return verdict(criterion, false, "no samples after the warmup".into());
    };
    let mut windows: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    for &(t, value) in points {
        let entry = windows.entry(((t - first_t) / window) as u64).or_default();
        *entry = (entry.0 + value, entry.1 + 1.0);
    }
    let means: Vec<f64> = windows.values().map(|(sum, n)| sum / n).collect();
    let reference = means[0];
    let worst = means
        .iter()
        .map(|mean| (mean - reference) / reference)
        .fold(
            0.0f64,
            |worst, d| if d.abs() > worst.abs() { d } else { worst },
        );
    let per_minute = slope(points) * 60.0;
    let span = points.last().map_or(0.0, |p| p.0) - first_t;
    let (low, high) = points
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), p| (l.min(p.1), h.max(p.1)));
    let passed = reference > 0.0 && (worst.abs() <= TOLERANCE || (worst * reference).abs() <= 1.0);
    let detail = format!(
        "{} windows of {window:.0} s: first {reference:.0}, worst {:+.1} %; slope {per_minute:+.2}/min \
         ({:+.1} % over {span:.0} s); per second {low:.0}–{high:.0}",
        means.len(),
        worst * 100.0,
        per_minute * span / 60.0 / reference * 100.0,
    );
    verdict(criterion, passed, detail)
}

/// The sockets' criterion. A process's sockets are its connections, so their count follows the load (a hang
/// holds a chain of them until its timeout, a run's end closes its users'): window means of a load that changes
/// phase stray ±20 % without anything leaking (`RELIABILITY.md`). What a leak does is climb above every level seen
/// so far; so every window's mean must stay below the first window's peak + 10 %, and the slope is reported.
pub fn ceiling(name: &str, points: &[(f64, f64)], window: f64) -> Verdict {
    let criterion = format!(
        "{name} below the first window's peak + {:.0} %",
        TOLERANCE * 100.0
    );
    let Some(&(first_t, _)) = points.first() else {
        return verdict(criterion, false, "no samples after the warmup".into());
    };
    let mut windows: BTreeMap<u64, (f64, f64, f64)> = BTreeMap::new();
    for &(t, value) in points {
        let entry = (windows.entry(((t - first_t) / window) as u64)).or_insert((0.0, 0.0, 0.0));
        *entry = (entry.0 + value, entry.1 + 1.0, entry.2.max(value));
    }
    let peak = windows.values().next().map_or(0.0, |w| w.2);
    let limit = peak * (1.0 + TOLERANCE);
    let highest = (windows.values().skip(1))
        .map(|(sum, n, _)| sum / n)
        .fold(f64::MIN, f64::max);
    let per_minute = slope(points) * 60.0;
    let span = points.last().map_or(0.0, |p| p.0) - first_t;
    let passed = windows.len() >= 2 && highest <= limit;
    let detail = format!(
        "{} windows of {window:.0} s: first window's peak {peak:.0} (limit {limit:.0}), highest later window mean \
         {highest:.0}; slope {per_minute:+.2}/min over {span:.0} s",
        windows.len()
    );
    verdict(criterion, passed, detail)
}

/// The stability criteria (RSS, descriptors, sockets of every judged process) of the samples in `csv`, judged
/// with `config`'s warm-up, window and kill interval: the part of a soak's verdict that its CSV alone holds.
pub fn stability_verdicts(config: &Config, csv: &Path) -> anyhow::Result<Vec<Verdict>> {
    let mut columns = read_csv(csv)?;
    for process in PROCESSES {
        let (fds, sockets) = (
            &columns[&format!("{process}_fds")],
            &columns[&format!("{process}_sockets")],
        );
        let other = (fds.iter().zip(sockets))
            .map(|(fds, sockets)| Some(((*fds)? - (*sockets)?).max(0.0)))
            .collect();
        columns.insert(format!("{process}_other_fds"), other);
    }
    let warmup = config.warmup.as_secs_f64();
    let window = config.window().as_secs_f64();
    let settle = SETTLE.min(config.kill_every / 5).as_secs_f64();
    let mut verdicts = Vec::new();
    // The soak's own process is sampled, not judged: it is the harness.
    for process in PROCESSES.iter().filter(|p| **p != "soak") {
        let pid = (*process == "controller").then_some("controller_pid");
        let series = |name: &str| judged(&columns, name, pid, warmup, settle);
        let rss = series(&format!("{process}_rss_kib"));
        verdicts.push(stability(&format!("{process} RSS (KiB)"), &rss, window));
        let other = series(&format!("{process}_other_fds"));
        let name = format!("{process} descriptors other than sockets");
        verdicts.push(stability(&name, &other, window));
        let sockets = series(&format!("{process}_sockets"));
        verdicts.push(ceiling(&format!("{process} sockets"), &sockets, window));
    }
    Ok(verdicts)
}

fn kills_verdict(journal: &Journal) -> Verdict {
    let kills = journal.kills.lock().clone();
    let bad: Vec<String> = (kills.iter())
        .filter(|k| !k.late.is_empty() || k.problem.is_some())
        .map(|k| {
            format!(
                "at {:.0} s: late {:?} {}",
                k.at.as_secs_f64(),
                k.late,
                k.problem.clone().unwrap_or_default()
            )
        })
        .collect();
    let left: usize = kills.iter().map(|k| k.left.len()).sum();
    let each: Vec<String> = (kills.iter())
        .map(|k| {
            let gone = k.gone_after.map_or(0.0, |gone| gone.as_secs_f64());
            format!("{} gone {gone:.1} s after", k.left.len())
        })
        .collect();
    let detail = match bad.is_empty() {
        true => format!(
            "{} kills, {left} faults left by dead controllers, all gone within their lease (per kill: {})",
            kills.len(),
            each.join(", ")
        ),
        false => bad.join("; "),
    };
    verdict(
        "no fault beyond its lease after a kill",
        !kills.is_empty() && bad.is_empty(),
        detail,
    )
}

fn halts_verdict(journal: &Journal) -> Verdict {
    let halts = journal.halts.lock().clone();
    let bad: Vec<String> = (halts.iter())
        .filter(|h| h.problem.is_some() || h.held_after != Some(0) || h.answered < h.pending)
        .map(|h| format!("at {:.0} s: {h:?}", h.at.as_secs_f64()))
        .collect();
    let held: u64 = halts.iter().map(|h| h.held_before).sum();
    let pending: usize = halts.iter().map(|h| h.pending).sum();
    let detail = match bad.is_empty() {
        true => format!(
            "{} halts of {held} held requests in all (the agent's gauge), none held 1 s after; all {pending} charges \
             waiting at a halt let go within 1 s",
            halts.len()
        ),
        false => bad.join("; "),
    };
    verdict(
        "every halt releases every held request",
        !halts.is_empty() && held > 0 && bad.is_empty(),
        detail,
    )
}

/// Runs lost or duplicated, and the finished experiments (their ids), from the sweep's database.
async fn runs_verdict(summary: &SweepSummary) -> anyhow::Result<(Verdict, Vec<i64>)> {
    let store = open(&summary.db).await?;
    let mut problems = Vec::new();
    let (mut finished_experiments, mut finished_runs, mut interrupted) =
        (Vec::new(), 0usize, 0usize);
    let mut still_finished = std::collections::BTreeSet::new();
    for experiment in store.experiments().await? {
        let id = experiment.id.0;
        let runs = store.runs(ExperimentId(id)).await?;
        let mut terminal: BTreeMap<i64, usize> = BTreeMap::new();
        let mut finished: BTreeMap<i64, usize> = BTreeMap::new();
        for run in &runs {
            interrupted += usize::from(run.status == Status::Interrupted);
            if run.status == Status::Finished {
                still_finished.insert((id, run.id.0));
                *finished.entry(run.plan_index).or_default() += 1;
            }
            if run.status == Status::Finished || run.stopped_by_condition() {
                *terminal.entry(run.plan_index).or_default() += 1;
            }
        }
        finished_runs += finished.values().sum::<usize>();
        for (position, count) in terminal.iter().filter(|(_, count)| **count > 1) {
            problems.push(format!(
                "experiment {id}: position {position} ended {count} times"
            ));
        }
        if experiment.status == Status::Finished {
            finished_experiments.push(id);
            let missing: Vec<i64> = (0..experiment.planned_runs)
                .filter(|p| !terminal.contains_key(p))
                .collect();
            if !missing.is_empty() {
                problems.push(format!(
                    "experiment {id} finished without positions {missing:?}"
                ));
            }
        }
    }
    store.close().await;
    let lost: Vec<_> = summary
        .finished_at_kills
        .difference(&still_finished)
        .collect();
    if !lost.is_empty() {
        problems.push(format!(
            "finished at a kill, not finished at the end (experiment, run): {lost:?}"
        ));
    }
    if finished_experiments.is_empty() {
        problems.push("no experiment finished".into());
    }
    let detail = match problems.is_empty() {
        true => format!(
            "{} experiments finished, {finished_runs} runs finished, {interrupted} attempts interrupted by kills and run again; \
             {} controllers started",
            finished_experiments.len(),
            summary.starts
        ),
        false => problems.join("; "),
    };
    Ok((
        verdict("no run lost or duplicated", problems.is_empty(), detail),
        finished_experiments,
    ))
}

/// `tolerant report ID --format json` of every finished experiment: exit 0 and JSON.
async fn stats_verdict(config: &Config, summary: &SweepSummary, finished: &[i64]) -> Verdict {
    let mut problems = Vec::new();
    for id in finished {
        let output = tokio::process::Command::new(&config.tolerant)
            .args(["report", &id.to_string(), "--format", "json", "--db"])
            .arg(&summary.db)
            .env("RUST_LOG", "warn")
            .output()
            .await;
        match output {
            Ok(output) if output.status.success() => {
                if serde_json::from_slice::<serde_json::Value>(&output.stdout).is_err() {
                    problems.push(format!("experiment {id}: the report is not JSON"));
                }
            }
            Ok(output) => problems.push(format!(
                "experiment {id}: report exited {:?}: {}",
                output.status.code(),
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Err(error) => problems.push(format!("experiment {id}: {error}")),
        }
    }
    let passed = !finished.is_empty() && problems.is_empty();
    let detail = match problems.is_empty() {
        true => format!(
            "`tolerant report --format json` of {} finished experiments",
            finished.len()
        ),
        false => problems.join("; "),
    };
    verdict(
        "the stats of every finished experiment computable",
        passed,
        detail,
    )
}

/// Every verdict of the soak.
pub async fn judge(
    config: &Config,
    csv: &Path,
    journal: &Journal,
    summary: &SweepSummary,
) -> anyhow::Result<Vec<Verdict>> {
    let mut verdicts = stability_verdicts(config, csv)?;
    verdicts.push(kills_verdict(journal));
    let (runs, finished) = runs_verdict(summary).await?;
    verdicts.push(runs);
    verdicts.push(halts_verdict(journal));
    verdicts.push(stats_verdict(config, summary, &finished).await);
    Ok(verdicts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_line_and_of_a_constant() {
        let line: Vec<(f64, f64)> = (0..10)
            .map(|x| (f64::from(x), 3.0 * f64::from(x) + 1.0))
            .collect();
        assert!((slope(&line) - 3.0).abs() < 1e-9);
        assert_eq!(slope(&[(1.0, 5.0), (2.0, 5.0)]), 0.0);
    }

    #[test]
    fn a_steady_series_passes_and_a_growing_one_fails() {
        let steady: Vec<(f64, f64)> = (0..600)
            .map(|t| (f64::from(t), 100.0 + f64::from(t % 7)))
            .collect();
        assert!(stability("x", &steady, 60.0).passed);
        let growing: Vec<(f64, f64)> = (0..600)
            .map(|t| (f64::from(t), 100.0 + f64::from(t) / 20.0))
            .collect();
        let judged = stability("x", &growing, 60.0);
        assert!(!judged.passed, "{judged:?}");
        assert!(!stability("x", &[], 60.0).passed);
    }

    #[test]
    fn sockets_may_swing_with_the_load_but_not_climb_above_it() {
        // Connections in flight: 150 in quiet phases, 250 in busy ones, alternating every 40 s.
        let swinging: Vec<(f64, f64)> = (0..600)
            .map(|t| (f64::from(t), if (t / 40) % 2 == 0 { 250.0 } else { 150.0 }))
            .collect();
        let judged = ceiling("x", &swinging, 60.0);
        assert!(judged.passed, "{judged:?}");
        // The same with a connection leaked every 2 s: the later windows climb above the first one's peak.
        let leaking: Vec<(f64, f64)> = (swinging.iter())
            .map(|&(t, v)| (t, v + (t / 2.0).floor()))
            .collect();
        let judged = ceiling("x", &leaking, 60.0);
        assert!(!judged.passed, "{judged:?}");
        assert!(
            !ceiling("x", &swinging[..30], 60.0).passed,
            "one window proves nothing"
        );
    }

    #[test]
    fn a_small_count_may_gain_one() {
        let nine_then_ten: Vec<(f64, f64)> = (0..120)
            .map(|t| (f64::from(t), if t < 60 { 9.0 } else { 10.0 }))
            .collect();
        assert!(stability("x", &nine_then_ten, 60.0).passed);
        let nine_then_eleven: Vec<(f64, f64)> = (0..120)
            .map(|t| (f64::from(t), if t < 60 { 9.0 } else { 11.0 }))
            .collect();
        assert!(!stability("x", &nine_then_eleven, 60.0).passed);
    }

    #[test]
    fn a_restarted_process_settles_before_it_is_judged() {
        let mut columns: BTreeMap<String, Vec<Option<f64>>> = BTreeMap::new();
        columns.insert("t_s".into(), (0..200).map(|t| Some(f64::from(t))).collect());
        columns.insert(
            "pid".into(),
            (0..200)
                .map(|t| Some(if t < 100 { 1.0 } else { 2.0 }))
                .collect(),
        );
        columns.insert("v".into(), (0..200).map(|_| Some(1.0)).collect());
        let points = judged(&columns, "v", Some("pid"), 0.0, 60.0);
        let times: Vec<f64> = points.iter().map(|p| p.0).collect();
        assert_eq!(times.first(), Some(&60.0));
        assert!(!times.contains(&120.0) && times.contains(&160.0));
        assert_eq!(points.len(), 40 + 40);
    }
}
