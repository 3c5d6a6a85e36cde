//! A hang's worker-pool exhaustion: the simulator run again with the boutique's pool in front of the dependency,
//! beside seed 001's arithmetic (workers / (rate × share calling the dependency)).
//!
//! In a circle with `mod.rs` and `at_load.rs` because the pool figures are the condition's own simulation
//! (`mod.rs`) run with a pool, at the spec's load or at the measured one (`at_load.rs`).

use breaker::sim::{self, CallFailure, RawScenario, Scenario};
use serde::{Deserialize, Serialize};

use super::{Band, MeasuredLoad, SEEDS, raw_scenario};
use crate::spec::{BreakerMode, Condition, ExperimentSpec};

/// What a hang does to a worker pool of the boutique's size in front of the dependency: the simulator run again
/// with [`boutique::config::DEFAULT_POOL_CAPACITY`] workers (the figures above are of the model without a pool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolPrediction {
    pub workers: u32,
    /// workers / (requests per second × share calling the dependency): seed 001's arithmetic.
    pub formula_s: Option<f64>,
    /// Seconds from the fault's start to the pool's first being full, over the seeds where it filled (`None`:
    /// it filled in none).
    pub exhaustion_s: Option<Band>,
    /// Requests refused by the full pool over the window.
    pub refused: Band,
}

/// [`scenario`] with a worker pool of the boutique's size in front of the dependency.
fn pool_scenario(
    spec: &ExperimentSpec,
    condition: &Condition,
    seed: u64,
    load: Option<&MeasuredLoad>,
) -> Option<Scenario> {
    let workers = u32::try_from(boutique::config::DEFAULT_POOL_CAPACITY).ok()?;
    Scenario::try_from(RawScenario {
        workers: Some(workers),
        ..raw_scenario(spec, condition, seed, load)?
    })
    .ok()
}

/// [`PoolPrediction`] of a condition whose fault holds calls (`None` for one that fails them at once).
pub(super) fn predict_pool(
    spec: &ExperimentSpec,
    condition: &Condition,
    load: Option<&MeasuredLoad>,
) -> Option<PoolPrediction> {
    let guarded = matches!(condition.breaker_mode, BreakerMode::Enforce);
    let fault_start_s = spec
        .fault_periods_of(condition)
        .first()
        .map_or(0.0, |(start, _)| start.as_secs_f64());
    let (mut exhaustion, mut refused, mut formula, mut workers) = (Vec::new(), Vec::new(), None, 0);
    for seed in 0..SEEDS {
        let scenario = pool_scenario(spec, condition, spec.seed.wrapping_add(seed), load)?;
        if scenario.upstream().kind != CallFailure::Hang {
            return None;
        }
        workers = scenario.workers()?;
        let run = sim::simulate(&scenario);
        let totals = &run.totals;
        let (filled_at, refused_here) = if guarded {
            (totals.pool_exhausted_at_s_with, totals.refused_with)
        } else {
            (totals.pool_exhausted_at_s_without, totals.refused_without)
        };
        exhaustion.extend(filled_at.map(|at| (at - fault_start_s).max(0.0)));
        refused.push(refused_here as f64);
        formula = run.closed_form.time_to_exhaustion_s;
    }
    Some(PoolPrediction {
        workers,
        formula_s: formula,
        exhaustion_s: (!exhaustion.is_empty()).then(|| Band::of(&exhaustion)),
        refused: Band::of(&refused),
    })
}
