//! The model given the load that ran: a condition predicted again at the checkout rate and the latencies up the
//! chain its runs measured ([`predict_at_load`]), each answer kept for the next view that asks ([`CACHED`]).
//!
//! In a circle with `mod.rs` and `pool.rs` because a prediction at a measured load is the same simulation as
//! the one made before the run (`mod.rs`), its pool figures included (`pool.rs`), given another load.

use std::collections::VecDeque;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

use breaker::sim::Caller;
use serde::{Deserialize, Serialize};

use super::Prediction;
use crate::spec::ExperimentSpec;

/// Predictions at a measured load kept in memory: a report, `tolerant show` or the results page asked again for
/// the same experiment costs no simulations (each is 40 seeded runs per condition).
pub const CACHED: usize = 256;

static CACHE: parking_lot::Mutex<VecDeque<(u64, Prediction)>> =
    parking_lot::const_mutex(VecDeque::new());

/// What the runs of a condition measured of the two inputs the model takes from the spec but the testbed
/// decides: the load's checkout rate, and how long each service up the checkout's chain took to answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredLoad {
    /// Checkouts per second (the runs' `checkout_rate`).
    pub checkout_rate: f64,
    /// Per breaker up the chain (`frontend->checkout`): its dependency's mean latency, milliseconds (the runs'
    /// `dependency_mean_ms`); a breaker not listed is simulated with none.
    pub latency_ms: Vec<(String, f64)>,
}

/// The callers of `chain` with the latencies of `load` (none without it).
pub(super) fn with_latencies(
    chain: Vec<(String, Caller)>,
    load: Option<&MeasuredLoad>,
) -> Vec<Caller> {
    chain
        .into_iter()
        .map(|(name, mut caller)| {
            let measured =
                load.and_then(|load| load.latency_ms.iter().find(|(breaker, _)| *breaker == name));
            if let Some((_, ms)) = measured {
                caller.latency = Duration::from_secs_f64(ms / 1000.0);
            }
            caller
        })
        .collect()
}

/// Lowest and highest checkout rate [`predict_at_load`] simulates: a measured rate outside it is no load the
/// simulator's window can hold.
pub const AT_RATE_BOUNDS: (f64, f64) = (0.01, 10_000.0);
/// Highest latency of a service up the chain [`predict_at_load`] simulates, milliseconds (a caller's timeout
/// bound: an answer slower than that is a timeout).
pub const MAX_LATENCY_MS: f64 = 600_000.0;

/// The prediction of condition `condition` (its index) at the load its runs measured — `load`'s checkouts per
/// second (an open model, the other tasks in the mix's proportion) and its latencies up the chain — everything
/// else as [`predict`] has it: the model given the load that ran rather than the load the spec was expected to
/// make. `None` when the model does not cover the condition, or a figure of `load` is outside
/// [`AT_RATE_BOUNDS`] or [`MAX_LATENCY_MS`].
pub fn predict_at_load(
    spec: &ExperimentSpec,
    condition: usize,
    load: &MeasuredLoad,
) -> Option<Prediction> {
    let (low, high) = AT_RATE_BOUNDS;
    let latencies_fit = (load.latency_ms.iter()).all(|(_, ms)| (0.0..=MAX_LATENCY_MS).contains(ms));
    if !(low..=high).contains(&load.checkout_rate) || !latencies_fit {
        return None;
    }
    let key = cache_key(spec, condition, load);
    let cached = (CACHE.lock().iter())
        .find(|(k, _)| *k == key)
        .map(|(_, prediction)| prediction.clone());
    if let Some(prediction) = cached {
        return Some(prediction);
    }
    let index = condition;
    let condition = spec.conditions().into_iter().nth(index)?;
    let prediction = super::predict_condition(spec, &condition, Some(load))?;
    let mut cache = CACHE.lock();
    if cache.len() >= CACHED {
        cache.pop_front();
    }
    cache.push_back((key, prediction.clone()));
    Some(prediction)
}

/// What a prediction at a measured load depends on: the spec (all of it, as parsed), the condition, the load.
fn cache_key(spec: &ExperimentSpec, condition: usize, load: &MeasuredLoad) -> u64 {
    let mut hasher = DefaultHasher::new();
    format!("{spec:?}").hash(&mut hasher);
    condition.hash(&mut hasher);
    load.checkout_rate.to_bits().hash(&mut hasher);
    for (breaker, ms) in &load.latency_ms {
        breaker.hash(&mut hasher);
        ms.to_bits().hash(&mut hasher);
    }
    hasher.finish()
}
