//! Per-run figures of the sampled worker pools' full stretches, from the `/_pool` bodies the samples keep
//! (`extra.pools`): each pool stamps, in milliseconds, when it became full and when it stopped being full
//! (`boutique::pool_edges`), so the time a hang takes to exhaust a pool is measured at that resolution, not at
//! the sampler's second.
//!
//! - `pool_exhaustion_s`: the first "full" stamp at or after the fault's scheduled start, minus that start; of
//!   the sampled pool that filled first. A pool already full at the start (a saturated machine fills the
//!   frontend's without any fault) has no such stamp until it frees; absent when no pool filled.
//! - `pools_full_at_fault`: how many sampled pools were already full at the fault's start.
//! - `pool_full_s`, `pool_fills`: seconds that pool spent full and times it became full in the measured
//!   window (its counters' increase between the samples at the window's ends).
//! - `pool_refused`: requests refused by a full pool and its full queue (a 503) in the measured window, every
//!   sampled pool summed.

use std::collections::{BTreeMap, BTreeSet};

use boutique::pool::PoolStats;

use super::run::RunData;
use crate::metric::{MetricKey, MetricName};
use crate::spec::ExperimentSpec;
use crate::store::SampleRow;

/// One pool's bodies in the order they were sampled.
type Bodies = BTreeMap<String, Vec<PoolStats>>;

fn bodies(samples: &[SampleRow]) -> Bodies {
    let mut by_label = Bodies::new();
    for sample in samples {
        let Some(pools) = (sample.collector.extra.as_ref())
            .and_then(|extra| extra.get("pools"))
            .and_then(|pools| pools.as_object())
        else {
            continue;
        };
        for (label, body) in pools {
            if let Ok(stats) = serde_json::from_value::<PoolStats>(body.clone()) {
                by_label.entry(label.clone()).or_default().push(stats);
            }
        }
    }
    by_label
}

/// When a pool became full at or after `start_ms`: its first "full" edge from then on, from the edges of every
/// body and the first "full" since the reset. A pool already full at `start_ms` that stays full has none: what
/// filled it was not the fault.
fn first_full_after(bodies: &[PoolStats], start_ms: u64) -> Option<u64> {
    let mut edges: BTreeSet<(u64, bool)> = BTreeSet::new();
    for body in bodies {
        let fullness = &body.fullness;
        edges.extend(fullness.edges.iter().map(|edge| (edge.at_ms, edge.full)));
        edges.extend(fullness.first_full_ms.map(|at_ms| (at_ms, true)));
    }
    edges
        .range((start_ms, false)..)
        .find(|&&(_, full)| full)
        .map(|&(at_ms, _)| at_ms)
}

/// Whether a pool was full at `at_ms` (its last edge before then says so).
fn full_at(bodies: &[PoolStats], at_ms: u64) -> bool {
    bodies
        .iter()
        .flat_map(|body| body.fullness.edges.iter())
        .filter(|edge| edge.at_ms < at_ms)
        .max_by_key(|edge| edge.at_ms)
        .is_some_and(|edge| edge.full)
}

/// The increase of `counter` over the bodies stamped within `[from_ms, to_ms]`, counted from the last body
/// before the window (when there is one) to the last body in it.
fn increase(
    bodies: &[PoolStats],
    from_ms: u64,
    to_ms: u64,
    counter: impl Fn(&PoolStats) -> u64,
) -> Option<u64> {
    let before = bodies.iter().rev().find(|b| b.fullness.at_ms <= from_ms);
    let inside: Vec<&PoolStats> = bodies
        .iter()
        .filter(|b| (from_ms..=to_ms).contains(&b.fullness.at_ms))
        .collect();
    let first = before.or(inside.first().copied())?;
    let last = inside.last()?;
    Some(counter(last).saturating_sub(counter(first)))
}

/// [`pool_metrics`] of a finished run of `spec`: the fault starts where its condition's first fault period does,
/// counted from the run's start as the load counts its seconds. Nothing for a run that never started.
pub(super) fn run_pool_metrics(spec: &ExperimentSpec, data: &RunData) -> Vec<(MetricKey, f64)> {
    let run = &data.run;
    let Some(started_ms) = run.started_at_ms else {
        return Vec::new();
    };
    let conditions = spec.conditions();
    let Some(condition) = conditions
        .iter()
        .find(|condition| i64::try_from(condition.index) == Ok(run.condition_index))
    else {
        return Vec::new();
    };
    let offset_ms = spec
        .fault_periods_of(condition)
        .first()
        .map_or(0, |(start, _)| {
            i64::try_from(start.as_millis()).unwrap_or(i64::MAX)
        });
    let from_ms = started_ms.saturating_add(run.warmup_ms.max(0));
    pool_metrics(
        &data.samples,
        started_ms.saturating_add(offset_ms),
        from_ms,
        from_ms.saturating_add(run.duration_ms.max(0)),
    )
}

/// The pool figures of one run: `fault_start_ms` is the fault's scheduled start, the measured window
/// `[from_ms, to_ms]` (all Unix milliseconds). Nothing when no sample kept a pool with stamps (a body from
/// before the pools stamped their edges has `at_ms` 0).
pub(super) fn pool_metrics(
    samples: &[SampleRow],
    fault_start_ms: i64,
    from_ms: i64,
    to_ms: i64,
) -> Vec<(MetricKey, f64)> {
    let ms = |value: i64| u64::try_from(value).unwrap_or(0);
    let (start, from, to) = (ms(fault_start_ms), ms(from_ms), ms(to_ms));
    let stamped: Bodies = bodies(samples)
        .into_iter()
        .map(|(label, list)| {
            let kept = list.into_iter().filter(|b| b.fullness.at_ms > 0).collect();
            (label, kept)
        })
        .filter(|(_, list): &(String, Vec<PoolStats>)| !list.is_empty())
        .collect();
    if stamped.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let refused: u64 = stamped
        .values()
        .filter_map(|list| increase(list, from, to, |b| b.rejected))
        .sum();
    out.push((MetricKey::run(MetricName::PoolRefused), refused as f64));
    let full_at_fault = stamped.values().filter(|list| full_at(list, start)).count();
    out.push((
        MetricKey::run(MetricName::PoolsFullAtFault),
        full_at_fault as f64,
    ));
    let first = stamped
        .values()
        .filter_map(|list| first_full_after(list, start).map(|at| (at, list)))
        .min_by_key(|&(at, _)| at);
    let Some((full_at, list)) = first else {
        return out;
    };
    out.push((
        MetricKey::run(MetricName::PoolExhaustionS),
        (full_at - start) as f64 / 1000.0,
    ));
    if let Some(full_ms) = increase(list, from, to, |b| b.fullness.full_ms) {
        out.push((
            MetricKey::run(MetricName::PoolFullS),
            full_ms as f64 / 1000.0,
        ));
    }
    if let Some(fills) = increase(list, from, to, |b| b.fullness.fills) {
        out.push((MetricKey::run(MetricName::PoolFills), fills as f64));
    }
    out
}

#[cfg(test)]
mod tests {
    use boutique::pool_edges::{FullEdge, FullnessStats};
    use serde_json::json;

    use super::*;
    use crate::load::OutcomeCounts;
    use crate::store::CollectorSample;

    const T0: u64 = 1_732_896_000_000;

    fn body(
        at_s: u64,
        rejected: u64,
        fills: u64,
        full_ms: u64,
        edges: &[(u64, bool)],
    ) -> PoolStats {
        PoolStats {
            in_flight: 0,
            queued: 0,
            capacity: 256,
            queue_capacity: 1024,
            rejected,
            fullness: FullnessStats {
                at_ms: T0 + at_s * 1000,
                full: edges.last().is_some_and(|e| e.1),
                fills,
                first_full_ms: edges.iter().find(|e| e.1).map(|e| e.0),
                full_ms,
                edges: edges
                    .iter()
                    .map(|&(at_ms, full)| FullEdge { at_ms, full })
                    .collect(),
            },
        }
    }

    fn sample(second: i64, pools: serde_json::Value) -> SampleRow {
        SampleRow {
            second,
            warmup: false,
            outcomes: OutcomeCounts::default(),
            collector: CollectorSample {
                second: second as u64,
                extra: Some(json!({ "pools": pools, "metrics": {} })),
                ..CollectorSample::default()
            },
        }
    }

    fn get(figures: &[(MetricKey, f64)], metric: MetricName) -> Option<f64> {
        figures
            .iter()
            .find(|(key, _)| key.metric == metric)
            .map(|&(_, v)| v)
    }

    /// The frontend fills 1.28 s after the fault's start at second 60 (its samples a second apart cannot show
    /// when), the checkout pool later; the earlier one's figures are the run's.
    #[test]
    fn the_first_pool_to_fill_gives_the_time_to_exhaustion_at_millisecond_resolution() {
        let fill = T0 + 61_280;
        let frontend = |at_s, rejected, full_ms| {
            let edges: &[(u64, bool)] = if at_s >= 62 { &[(fill, true)] } else { &[] };
            json!(body(at_s, rejected, u64::from(at_s >= 62), full_ms, edges))
        };
        let checkout = |at_s| {
            let edges: &[(u64, bool)] = if at_s >= 63 {
                &[(T0 + 62_900, true)]
            } else {
                &[]
            };
            json!(body(at_s, 5, u64::from(at_s >= 63), 0, edges))
        };
        let samples: Vec<SampleRow> = (29u64..=90)
            .map(|s| {
                let full_ms = (s * 1000).saturating_sub(61_280);
                let rejected = s.saturating_sub(62) * 100;
                sample(
                    s as i64,
                    json!({
                        "frontend": frontend(s, rejected, full_ms),
                        "checkout": checkout(s),
                    }),
                )
            })
            .collect();
        let figures = pool_metrics(
            &samples,
            (T0 + 60_000) as i64,
            (T0 + 30_000) as i64,
            (T0 + 90_000) as i64,
        );
        let exhaustion = get(&figures, MetricName::PoolExhaustionS).unwrap();
        assert!((exhaustion - 1.28).abs() < 1e-9, "{exhaustion}");
        assert_eq!(get(&figures, MetricName::PoolFills), Some(1.0));
        assert_eq!(get(&figures, MetricName::PoolFullS), Some(28.72));
        assert_eq!(get(&figures, MetricName::PoolRefused), Some(2_800.0));
        assert_eq!(get(&figures, MetricName::PoolsFullAtFault), Some(0.0));
    }

    #[test]
    fn a_fill_before_the_fault_is_not_its_exhaustion_and_a_pool_never_full_gives_none() {
        let early = [(T0 + 10_000, true), (T0 + 10_500, false)];
        let samples: Vec<SampleRow> = (0..=90)
            .map(|s| sample(s, json!({ "frontend": body(s as u64, 0, 1, 500, &early) })))
            .collect();
        let figures = pool_metrics(
            &samples,
            (T0 + 60_000) as i64,
            T0 as i64,
            (T0 + 90_000) as i64,
        );
        assert_eq!(get(&figures, MetricName::PoolExhaustionS), None);
        assert_eq!(get(&figures, MetricName::PoolRefused), Some(0.0));

        let full_through = [(T0 + 59_000, true)];
        let samples: Vec<SampleRow> = (0..=90)
            .map(|s| {
                sample(
                    s,
                    json!({ "frontend": body(s as u64, 0, 1, 0, &full_through) }),
                )
            })
            .collect();
        let figures = pool_metrics(
            &samples,
            (T0 + 60_000) as i64,
            T0 as i64,
            (T0 + 90_000) as i64,
        );
        assert_eq!(
            get(&figures, MetricName::PoolExhaustionS),
            None,
            "full before the fault"
        );
        assert_eq!(get(&figures, MetricName::PoolsFullAtFault), Some(1.0));
    }

    #[test]
    fn bodies_without_stamps_give_no_figures() {
        let old = json!({ "in_flight": 3, "queued": 0, "capacity": 256, "queue_capacity": 1024, "rejected": 9 });
        let samples = vec![sample(0, json!({ "frontend": old }))];
        assert!(pool_metrics(&samples, 0, 0, 1_000).is_empty());
    }
}
