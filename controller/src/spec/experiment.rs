//! The checked experiment spec: every factor and setting as a run uses it, with the durations as written and
//! their scaled values. Parsing it is `raw`'s; its conditions and plan are `matrix`'s; when its fault is on is
//! `schedule`'s.

use std::collections::BTreeMap;
use std::time::Duration;

use super::criteria::Criterion;
use super::model::{
    BreakerMode, BreakerSpec, FaultFactor, LoadSpec, Order, StopSpec, scale_duration,
};
use super::sources::SourceSpec;
use super::targets::Offers;
use crate::target::ServiceId;

/// A validated experiment spec. Durations are as written; use [`ExperimentSpec::scaled`] for the
/// durations a run really uses.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentSpec {
    pub name: String,
    pub rounds: u32,
    /// Measured time of every run, after the warmup (unscaled).
    pub duration: Duration,
    /// Time at the start of every run that is cut from every figure (unscaled).
    pub warmup: Duration,
    /// Divides every duration, breaker window and think time.
    pub time_scale: f64,
    pub order: Order,
    pub seed: u64,
    pub load: LoadSpec,
    pub fault: FaultFactor,
    pub breaker: BreakerSpec,
    pub stop: Option<StopSpec>,
    /// External targets by service name (or `agent`); empty = the embedded stack.
    pub targets: BTreeMap<ServiceId, String>,
    /// What each target (the agent aside) offers; empty = the embedded stack, which offers everything.
    pub offers: BTreeMap<ServiceId, Offers>,
    /// Where the states of breakers Tolerant did not write come from (`[[sources]]`).
    pub sources: Vec<SourceSpec>,
    /// Release-gate criteria from `[[validate]]` tables, judged by `tolerant validate`.
    pub validate: Vec<Criterion>,
    /// The spec text as given (stored with the experiment).
    pub source: String,
}

impl ExperimentSpec {
    /// What target `name` offers: as `[targets]` says, or everything a Tolerant service offers on the embedded
    /// stack (no `[targets]`).
    pub fn offers_of(&self, name: &str) -> Offers {
        if self.targets.is_empty() {
            Offers::tolerant_service(name)
        } else {
            self.offers.get(name).copied().unwrap_or_default()
        }
    }

    /// A duration as a run really uses it: divided by `time_scale`.
    pub fn scaled(&self, duration: Duration) -> Duration {
        scale_duration(duration, self.time_scale)
    }

    /// Scaled warmup of every run.
    pub fn run_warmup(&self) -> Duration {
        self.scaled(self.warmup)
    }

    /// Scaled measured time of every run (after the warmup).
    pub fn run_duration(&self) -> Duration {
        self.scaled(self.duration)
    }

    /// The breaker config a condition with `mode` applies, with its windows scaled
    /// ([`breaker::BreakerConfig::time_scaled`]). Parsing checked the scaled config, so a parsed spec never
    /// fails here; the error names the field a window fell out of bounds in.
    pub fn breaker_config(
        &self,
        mode: BreakerMode,
    ) -> Result<breaker::BreakerConfig, breaker::ConfigError> {
        self.breaker.config_for(mode).time_scaled(self.time_scale)
    }

    /// Scaled think-time range.
    pub fn think_time(&self) -> (Duration, Duration) {
        (
            self.scaled(self.load.think_time.0),
            self.scaled(self.load.think_time.1),
        )
    }
}
