//! Sources that went blind: a `[[sources]]` Prometheus source that did not answer during part of a run's measured
//! window cannot say what its breakers did then, so that run's breaker opens and time open (the run's sums, and
//! the figures of the breakers that source reports) are left out of the figures, never read as 0 — as
//! [`super::not_measured`] does for a capability a target lacks, but per run. One statement per source says in
//! which runs it was blind and for how long; the report, `tolerant show` and the results page list it with the
//! others.

use std::collections::{BTreeMap, BTreeSet};

use super::not_measured::NotMeasured;
use crate::metric::{MetricKey, MetricName};
use crate::sources::SourceHealth;
use crate::store::{RunId, RunRow, TransitionRecord};

/// Runs a statement names one by one; the others are counted.
const RUNS_LISTED: usize = 10;

/// Metrics a blind source leaves out of a run: its breakers' figures and the run's sums over every breaker.
const LEFT_OUT: [MetricName; 2] = [MetricName::BreakerOpens, MetricName::TimeOpenS];

/// One run a source was blind in.
#[derive(Debug, Clone, PartialEq)]
struct BlindRun {
    run: RunId,
    blind_ms: i64,
}

/// Every finished run's account of its sources, gathered source by source; see the module documentation.
#[derive(Debug, Default)]
pub struct Blindness {
    by_source: BTreeMap<String, SourceAccount>,
}

#[derive(Debug, Default)]
struct SourceAccount {
    runs: usize,
    blind: Vec<BlindRun>,
    scrapes: u64,
    failures: u64,
    longest_gap_ms: i64,
}

impl Blindness {
    /// Takes `run`'s account of its sources, and removes from `values` (its figures) what a source blind during
    /// its measured window leaves out.
    pub fn take_run(
        &mut self,
        run: &RunRow,
        sources: &[SourceHealth],
        transitions: &[TransitionRecord],
        values: &mut BTreeMap<MetricKey, f64>,
    ) {
        let Some(start_ms) = run.started_at_ms else {
            return;
        };
        let from_ms = start_ms + run.warmup_ms.max(0);
        let to_ms = from_ms + run.duration_ms.max(0);
        let mut blind_sources = BTreeSet::new();
        for health in sources {
            let account = self.by_source.entry(health.source.clone()).or_default();
            account.runs += 1;
            account.scrapes += health.scrapes;
            account.failures += health.failures;
            account.longest_gap_ms = account.longest_gap_ms.max(health.longest_gap_ms);
            let blind_ms = health.blind_ms_within(from_ms, to_ms);
            if blind_ms > 0 {
                account.blind.push(BlindRun {
                    run: run.id,
                    blind_ms,
                });
                blind_sources.insert(health.source.as_str());
            }
        }
        if blind_sources.is_empty() {
            return;
        }
        let unseen: BTreeSet<&str> = transitions
            .iter()
            .filter(|t| {
                t.source
                    .as_deref()
                    .is_some_and(|s| blind_sources.contains(s))
            })
            .map(|t| t.breaker.as_str())
            .collect();
        values.retain(|key, _| {
            !LEFT_OUT.contains(&key.metric)
                || key
                    .breaker
                    .as_deref()
                    .is_some_and(|breaker| !unseen.contains(breaker))
        });
    }

    /// One statement per source blind in any run's measured window (no metric of its own: what it leaves out was
    /// taken out run by run).
    pub fn statements(&self) -> Vec<NotMeasured> {
        self.by_source
            .iter()
            .filter(|(_, account)| !account.blind.is_empty())
            .map(|(source, account)| {
                let mut listed: Vec<String> = (account.blind.iter().take(RUNS_LISTED))
                    .map(|blind| format!("run {}: {}", blind.run, seconds(blind.blind_ms)))
                    .collect();
                if account.blind.len() > RUNS_LISTED {
                    listed.push(format!("{} more", account.blind.len() - RUNS_LISTED));
                }
                NotMeasured {
                    statement: format!(
                        "{source} was blind (did not answer) in {} of {} runs' measured windows ({}; {} of {} \
                         scrapes failed, longest gap {}): breaker opens and time open of those runs are left out, \
                         not read as 0",
                        account.blind.len(),
                        account.runs,
                        listed.join(", "),
                        account.failures,
                        account.scrapes,
                        seconds(account.longest_gap_ms),
                    ),
                    metrics: Vec::new(),
                }
            })
            .collect()
    }
}

fn seconds(ms: i64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use breaker::{Reason, State, TransitionDetail};

    use super::*;
    use crate::sources::BlindPeriod;
    use crate::store::{ExperimentId, Status};

    fn run(id: i64) -> RunRow {
        RunRow {
            id: RunId(id),
            experiment_id: ExperimentId(1),
            plan_index: 0,
            round_index: 0,
            condition_index: 0,
            condition_label: "c".into(),
            fault_kind: "error".into(),
            fault_rate: 1.0,
            breaker_mode: "enforce".into(),
            condition_json: "{}".into(),
            status: Status::Finished,
            warmup_ms: 1_000,
            duration_ms: 10_000,
            started_at_ms: Some(0),
            finished_at_ms: Some(11_000),
            abort_reason: None,
            outcomes: None,
            energy: None,
            load_errors: None,
        }
    }

    fn opened(breaker: &str, source: Option<&str>) -> TransitionRecord {
        TransitionRecord {
            at_ms: 2_000,
            service: "s".into(),
            breaker: breaker.into(),
            from: State::Closed,
            to: State::Open,
            reason: Reason::Observed,
            detail: TransitionDetail::default(),
            seq: 1,
            shadow: false,
            source: source.map(str::to_owned),
        }
    }

    fn health(blind: &[(i64, i64)]) -> SourceHealth {
        SourceHealth {
            source: "prometheus:x".into(),
            scrapes: 40,
            failures: 30,
            longest_gap_ms: 8_000,
            blind: (blind.iter())
                .map(|&(from_ms, to_ms)| BlindPeriod { from_ms, to_ms })
                .collect(),
        }
    }

    fn figures() -> BTreeMap<MetricKey, f64> {
        [
            (MetricKey::run(MetricName::BreakerOpens), 2.0),
            (MetricKey::run(MetricName::TimeOpenS), 3.0),
            (MetricKey::breaker(MetricName::BreakerOpens, "foreign"), 1.0),
            (MetricKey::breaker(MetricName::BreakerOpens, "own"), 1.0),
            (MetricKey::run(MetricName::Availability), 0.9),
        ]
        .into_iter()
        .collect()
    }

    #[test]
    fn a_source_blind_in_the_measured_window_leaves_its_breakers_and_the_sums_out() {
        let transitions = [opened("foreign", Some("prometheus:x")), opened("own", None)];
        let mut blindness = Blindness::default();
        let mut values = figures();
        // Blind from 3 s to the end: 8 s of the measured window [1 s, 11 s).
        blindness.take_run(
            &run(7),
            &[health(&[(3_000, 12_000)])],
            &transitions,
            &mut values,
        );
        let kept: Vec<String> = values.keys().map(|key| format!("{key:?}")).collect();
        assert_eq!(values.len(), 2, "{kept:?}");
        assert!(values.contains_key(&MetricKey::breaker(MetricName::BreakerOpens, "own")));
        assert!(values.contains_key(&MetricKey::run(MetricName::Availability)));

        // Blind only in the warmup: nothing left out.
        let mut values = figures();
        blindness.take_run(&run(8), &[health(&[(0, 900)])], &transitions, &mut values);
        assert_eq!(values, figures());

        let statements = blindness.statements();
        assert_eq!(statements.len(), 1);
        let text = &statements[0].statement;
        assert!(text.starts_with("prometheus:x was blind"), "{text}");
        assert!(text.contains("in 1 of 2 runs"), "{text}");
        assert!(text.contains("run 7: 8.0 s"), "{text}");
        assert!(
            text.contains("60 of 80 scrapes failed, longest gap 8.0 s"),
            "{text}"
        );
        assert!(statements[0].metrics.is_empty());
    }

    #[test]
    fn a_source_never_blind_says_nothing() {
        let mut blindness = Blindness::default();
        let mut values = figures();
        blindness.take_run(&run(1), &[health(&[])], &[], &mut values);
        assert_eq!(values, figures());
        assert!(blindness.statements().is_empty());
    }
}
