//! Per-condition figures (mean, sd, n, 95 % CI of each metric over the rounds) and the off/on
//! comparisons at each failure rate.
//!
//! Every metric is first computed per run — ratios such as availability or joules per successful
//! request included — and only then summarised across rounds: rounds are never pooled into one big
//! count, because the round is the unit of replication and pooling would hide the round-to-round
//! spread the interval is about.

use std::collections::BTreeMap;

use serde::Serialize;

use super::predicted::PredictedCondition;
use super::run::{RunMetrics, TimelineBin};
use super::student::{Difference, Summary};
use crate::metric::MetricKey;
use crate::store::{EnergySource, ExperimentId, RunId, RunRow, Status};

/// Breaker modes that count as "off" for comparisons, in order of preference: `disabled`, else
/// `shadow` (records, never rejects — the user sees no breaker).
pub const BASELINE_MODES: [&str; 2] = ["disabled", "shadow"];

/// Identifies a condition and says what it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionKey {
    pub index: i64,
    pub label: String,
    pub fault_kind: String,
    pub fault_rate: f64,
    pub breaker_mode: String,
}

impl ConditionKey {
    pub fn of(run: &RunRow) -> ConditionKey {
        ConditionKey {
            index: run.condition_index,
            label: run.condition_label.clone(),
            fault_kind: run.fault_kind.clone(),
            fault_rate: run.fault_rate,
            breaker_mode: run.breaker_mode.clone(),
        }
    }
}

/// One metric's summary over a condition's rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricSummary {
    #[serde(flatten)]
    pub key: MetricKey,
    #[serde(flatten)]
    pub summary: Summary,
}

/// How the energy figures of a condition were obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EnergyLabel {
    Measured,
    Modelled,
    /// Some rounds measured, some modelled (their mean mixes two instruments).
    Mixed,
}

impl EnergyLabel {
    pub fn of(sources: impl IntoIterator<Item = EnergySource>) -> Option<EnergyLabel> {
        let mut label = None;
        for source in sources {
            let this = match source {
                EnergySource::Measured => EnergyLabel::Measured,
                EnergySource::Modelled => EnergyLabel::Modelled,
            };
            label = match label {
                None => Some(this),
                Some(previous) if previous == this => Some(this),
                Some(_) => Some(EnergyLabel::Mixed),
            };
        }
        label
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EnergyLabel::Measured => "measured",
            EnergyLabel::Modelled => "modelled",
            EnergyLabel::Mixed => "mixed",
        }
    }
}

/// Everything about one condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionStats {
    pub condition: ConditionKey,
    /// Finished runs (rounds) of the condition.
    pub runs: usize,
    pub metrics: Vec<MetricSummary>,
    /// The runs' timelines averaged bin by bin (means of per-run means).
    pub timeline: Vec<TimelineBin>,
    pub energy: Option<EnergyLabel>,
}

impl ConditionStats {
    pub fn summary(&self, key: &MetricKey) -> Option<&Summary> {
        entry_of(&self.metrics, key, |metric| &metric.key).map(|metric| &metric.summary)
    }

    fn of(condition: ConditionKey, runs: &[&RunMetrics]) -> ConditionStats {
        let mut per_metric: BTreeMap<&MetricKey, Vec<f64>> = BTreeMap::new();
        for run in runs {
            for (key, &value) in &run.values {
                per_metric.entry(key).or_default().push(value);
            }
        }
        // A breaker that never changed state in a run is not in its values; where the run measured the metric
        // (its run-wide sum is there), that breaker's figure was 0.
        for (key, values) in per_metric
            .iter_mut()
            .filter(|(key, _)| key.breaker.is_some())
        {
            let whole = key.whole();
            let silent = runs
                .iter()
                .filter(|run| run.values.contains_key(&whole) && !run.values.contains_key(*key))
                .count();
            values.extend(std::iter::repeat_n(0.0, silent));
        }
        let metrics = per_metric
            .into_iter()
            .filter_map(|(key, values)| {
                Some(MetricSummary {
                    key: key.clone(),
                    summary: Summary::of(&values)?,
                })
            })
            .collect();
        ConditionStats {
            condition,
            runs: runs.len(),
            metrics,
            timeline: average_timeline(runs),
            energy: EnergyLabel::of(runs.iter().filter_map(|run| run.energy_source)),
        }
    }
}

fn average_timeline(runs: &[&RunMetrics]) -> Vec<TimelineBin> {
    let bins = runs.iter().map(|run| run.timeline.len()).max().unwrap_or(0);
    (0..bins)
        .map(|bin| {
            let present: Vec<_> = runs
                .iter()
                .filter_map(|run| run.timeline.get(bin))
                .collect();
            let average = |values: Vec<f64>| {
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
            };
            TimelineBin {
                start_s: present.first().map_or(0.0, |b| b.start_s),
                end_s: present.first().map_or(0.0, |b| b.end_s),
                cart_items: average(present.iter().filter_map(|b| b.cart_items).collect()),
                cart_latency_ms: average(
                    present.iter().filter_map(|b| b.cart_latency_ms).collect(),
                ),
            }
        })
        .collect()
}

/// One metric compared between the baseline and the treatment condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDifference {
    #[serde(flatten)]
    pub key: MetricKey,
    pub difference: Difference,
}

/// A breaker mode against the "off" baseline at the same fault kind and rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub fault_kind: String,
    pub fault_rate: f64,
    pub baseline: ConditionKey,
    pub treatment: ConditionKey,
    pub metrics: Vec<MetricDifference>,
}

impl Comparison {
    pub fn difference(&self, key: &MetricKey) -> Option<&Difference> {
        entry_of(&self.metrics, key, |metric| &metric.key).map(|metric| &metric.difference)
    }
}

/// The entry of a metric list for `key` (`key_of` reads an entry's key), if the list has one.
fn entry_of<'a, T>(
    entries: &'a [T],
    key: &MetricKey,
    key_of: impl Fn(&T) -> &MetricKey,
) -> Option<&'a T> {
    entries.iter().find(|entry| key_of(entry) == key)
}

/// An experiment as stored, briefly.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentInfo {
    pub id: ExperimentId,
    pub name: String,
    pub status: Status,
    pub planned_runs: i64,
    /// Finished runs: the ones every figure is computed from.
    pub finished_runs: usize,
    /// Interrupted attempts and runs aborted for another reason than the stop condition (left out
    /// of every figure; runs the stop condition aborted are [`ExperimentStats::stopped`]).
    pub other_runs: usize,
    /// Of `other_runs`, the failed ones: the run or its load generator panicked, or the load generator
    /// failed requests itself (out of descriptors, …) — not the system's unavailability.
    pub failed_runs: usize,
    /// What the experiment's targets could not measure, and why, with the metrics left out for it (see
    /// [`crate::stats::not_measured_statements`]).
    pub not_measured: Vec<super::NotMeasured>,
}

/// A run its stop condition aborted: a verdict on its plan position (a resume does not run it
/// again), left out of the figures because it ended early.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoppedRun {
    pub run: RunId,
    pub plan_index: i64,
    pub round_index: i64,
    pub condition: ConditionKey,
    /// The condition that fired, as the run stored it.
    pub reason: String,
}

impl StoppedRun {
    /// `None` unless the run was aborted by its stop condition.
    pub fn of(run: &RunRow) -> Option<StoppedRun> {
        run.stopped_by_condition().then(|| StoppedRun {
            run: run.id,
            plan_index: run.plan_index,
            round_index: run.round_index,
            condition: ConditionKey::of(run),
            reason: run.abort_reason.clone().unwrap_or_default(),
        })
    }
}

/// Finished runs a condition needs for a confidence interval (Student t needs n − 1 ≥ 1).
pub const MIN_ROUNDS_FOR_INTERVALS: usize = 2;

/// What an experiment's report says when no condition has [`MIN_ROUNDS_FOR_INTERVALS`] finished runs.
pub const INTERVALS_NEED_TWO_ROUNDS: &str = "Intervals need at least two rounds: with one finished \
     run per condition every figure is that single run, with no 95 % confidence interval and no \
     off-vs-on verdict. Run the experiment with `rounds = 2` or more for those.";

/// An experiment's figures: per run, per condition, and the off/on comparisons.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentStats {
    pub experiment: ExperimentInfo,
    pub conditions: Vec<ConditionStats>,
    pub comparisons: Vec<Comparison>,
    pub runs: Vec<RunMetrics>,
    /// Runs the stop condition aborted, in plan order (none from [`ExperimentStats::from_runs`]).
    pub stopped: Vec<StoppedRun>,
    /// The simulator's predictions stored with the experiment, beside the measurements (none from
    /// [`ExperimentStats::from_runs`]).
    pub predictions: Vec<PredictedCondition>,
    /// When the spec's `fault.schedule` has the fault on, in seconds into the measured window (the over-time
    /// figures shade them); empty when the fault lasts the whole run (none from [`ExperimentStats::from_runs`]).
    pub fault_periods: Vec<(f64, f64)>,
}

impl ExperimentStats {
    /// Groups finished runs' metrics by condition (in condition order) and compares every breaker
    /// mode against the baseline at each fault kind and rate. `keys` describes each condition.
    pub fn from_runs(
        experiment: ExperimentInfo,
        keys: Vec<ConditionKey>,
        runs: Vec<RunMetrics>,
    ) -> ExperimentStats {
        let mut keys = keys;
        keys.sort_by_key(|key| key.index);
        keys.dedup_by_key(|key| key.index);
        let conditions: Vec<ConditionStats> = keys
            .into_iter()
            .map(|key| {
                let of_condition: Vec<&RunMetrics> = runs
                    .iter()
                    .filter(|run| run.condition_index == key.index)
                    .collect();
                ConditionStats::of(key, &of_condition)
            })
            .collect();
        let comparisons = compare(&conditions);
        ExperimentStats {
            experiment,
            conditions,
            comparisons,
            runs,
            stopped: Vec::new(),
            predictions: Vec::new(),
            fault_periods: Vec::new(),
        }
    }

    pub fn condition(&self, index: i64) -> Option<&ConditionStats> {
        self.conditions.iter().find(|c| c.condition.index == index)
    }

    /// Distinct fault kinds, in condition order.
    pub fn fault_kinds(&self) -> Vec<&str> {
        self.distinct(|condition| &condition.fault_kind)
    }

    /// Distinct breaker modes, in condition order.
    pub fn breaker_modes(&self) -> Vec<&str> {
        self.distinct(|condition| &condition.breaker_mode)
    }

    /// The distinct values of one part of the conditions' keys, in condition order.
    fn distinct<'a>(&'a self, part: impl Fn(&'a ConditionKey) -> &'a str) -> Vec<&'a str> {
        let mut values: Vec<&str> = Vec::new();
        for condition in &self.conditions {
            let value = part(&condition.condition);
            if !values.contains(&value) {
                values.push(value);
            }
        }
        values
    }

    /// Every metric key some condition has, sorted.
    /// Whether some condition has the two finished runs a 95 % confidence interval (and so an off-vs-on
    /// verdict) needs; `false` with no finished run at all.
    pub fn has_intervals(&self) -> bool {
        self.conditions
            .iter()
            .any(|condition| condition.runs >= MIN_ROUNDS_FOR_INTERVALS)
    }

    pub fn metric_keys(&self) -> Vec<&MetricKey> {
        let mut keys: Vec<&MetricKey> = self
            .conditions
            .iter()
            .flat_map(|c| c.metrics.iter().map(|m| &m.key))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}

/// Rates are compared exactly as stored (they come from the same spec values).
fn same_cell(a: &ConditionKey, b: &ConditionKey) -> bool {
    a.fault_kind == b.fault_kind && a.fault_rate.to_bits() == b.fault_rate.to_bits()
}

fn compare(conditions: &[ConditionStats]) -> Vec<Comparison> {
    let mut comparisons = Vec::new();
    for baseline in conditions {
        let key = &baseline.condition;
        // The cell's baseline is the first of BASELINE_MODES it has.
        let Some(cell_baseline) = BASELINE_MODES.iter().find_map(|mode| {
            conditions
                .iter()
                .find(|c| same_cell(&c.condition, key) && c.condition.breaker_mode == *mode)
        }) else {
            continue;
        };
        if cell_baseline.condition.index != key.index {
            continue;
        }
        for treatment in conditions {
            if treatment.condition.index == key.index || !same_cell(&treatment.condition, key) {
                continue;
            }
            let metrics = baseline
                .metrics
                .iter()
                .filter_map(|metric| {
                    let other = treatment.summary(&metric.key)?;
                    Some(MetricDifference {
                        key: metric.key.clone(),
                        difference: Difference::welch(&metric.summary, other)?,
                    })
                })
                .collect();
            comparisons.push(Comparison {
                fault_kind: key.fault_kind.clone(),
                fault_rate: key.fault_rate,
                baseline: key.clone(),
                treatment: treatment.condition.clone(),
                metrics,
            });
        }
    }
    comparisons.sort_by(|a, b| {
        (a.fault_kind.as_str(), a.fault_rate, a.treatment.index)
            .partial_cmp(&(b.fault_kind.as_str(), b.fault_rate, b.treatment.index))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    comparisons
}
