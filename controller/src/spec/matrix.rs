//! Expands a spec into conditions (fault kind × fault rate × breaker mode) and the run plan
//! (every condition once per round, the order shuffled per round from the seed).
//!
//! The shuffle uses its own SplitMix64 generator and a Fisher–Yates pass rather than `rand`, so a
//! plan is a pure function of `(spec, seed)` that no dependency upgrade can change: a resumed
//! experiment must find exactly the plan it started with.

use serde::Serialize;

use std::time::Duration;

use super::experiment::ExperimentSpec;
use super::model::{BreakerMode, ConditionFault, Order};
use super::schedule::scaled_schedule;

/// One cell of the factorial design.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Condition {
    /// Position in expansion order (stable across rounds; the key runs are grouped by).
    pub index: usize,
    pub fault: ConditionFault,
    pub fault_rate: f64,
    pub breaker_mode: BreakerMode,
    /// The `[[fault.profiles]]` level (index), when the spec has profiles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault_profile: Option<usize>,
    /// The `[[breaker.configs]]` level (index), when the spec has several configs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker_config: Option<usize>,
}

impl Condition {
    /// Short human label, e.g. `error 500 @ 25% / enforce`.
    pub fn label(&self) -> String {
        let fault = match self.fault {
            ConditionFault::Error { status } => format!("error {status}"),
            ConditionFault::Hang => "hang".to_owned(),
            ConditionFault::Delay { delay, .. } => {
                format!("delay {}", humantime::format_duration(delay))
            }
            ConditionFault::Reset => "reset".to_owned(),
            ConditionFault::Kill { signal } => format!("kill {signal}"),
            ConditionFault::NetDelay { delay } => {
                format!("net_delay {}", humantime::format_duration(delay))
            }
            ConditionFault::NetLoss => "net_loss".to_owned(),
            ConditionFault::Pause | ConditionFault::Stop | ConditionFault::Restart => {
                self.fault.name().as_str().to_owned()
            }
        };
        let mut label = format!(
            "{fault} @ {}% / {}",
            self.fault_rate * 100.0,
            self.breaker_mode.as_str()
        );
        // Levels a spec names are numbered here (1-based); [`label_in`] gives their names.
        if let Some(profile) = self.fault_profile {
            label.push_str(&format!(" · profile {}", profile + 1));
        }
        if let Some(config) = self.breaker_config {
            label.push_str(&format!(" · config {}", config + 1));
        }
        label
    }
}

/// One run of the plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlannedRun {
    /// Position in the whole plan, 0-based.
    pub sequence: usize,
    /// Round, 0-based.
    pub round: u32,
    pub condition: Condition,
}

/// Conditions in expansion order: kind × (rate or fault profile) × (breaker config) × mode.
pub(super) fn conditions(spec: &ExperimentSpec) -> Vec<Condition> {
    let levels: Vec<(f64, Option<usize>)> = if spec.fault.profiles.is_empty() {
        spec.fault.rates.iter().map(|&rate| (rate, None)).collect()
    } else {
        spec.fault
            .profiles
            .iter()
            .enumerate()
            .map(|(i, profile)| (profile.rate, Some(i)))
            .collect()
    };
    let configs: Vec<Option<usize>> = if spec.breaker.configs.is_empty() {
        vec![None]
    } else {
        (0..spec.breaker.configs.len()).map(Some).collect()
    };
    let mut conditions = Vec::new();
    for fault in &spec.fault.kinds {
        for &(fault_rate, fault_profile) in &levels {
            for &breaker_config in &configs {
                for &breaker_mode in &spec.breaker.modes {
                    conditions.push(Condition {
                        index: conditions.len(),
                        fault: *fault,
                        fault_rate,
                        breaker_mode,
                        fault_profile,
                        breaker_config,
                    });
                }
            }
        }
    }
    conditions
}

/// The label of a condition of `spec` with its levels' names: `partial-25: error 500 @ 25% / enforce / current`.
pub fn label_in(spec: &ExperimentSpec, condition: &Condition) -> String {
    let plain = Condition {
        fault_profile: None,
        breaker_config: None,
        ..*condition
    };
    let mut label = plain.label();
    if let Some(profile) = condition
        .fault_profile
        .and_then(|i| spec.fault.profiles.get(i))
    {
        label = format!("{}: {label}", profile.name);
    }
    if let Some(named) = condition
        .breaker_config
        .and_then(|i| spec.breaker.configs.get(i))
    {
        label = format!("{label} / {}", named.name);
    }
    label
}

pub(super) fn plan(spec: &ExperimentSpec) -> Vec<PlannedRun> {
    let conditions = conditions(spec);
    let mut plan = Vec::with_capacity(conditions.len() * spec.rounds as usize);
    for round in 0..spec.rounds {
        let mut order: Vec<usize> = (0..conditions.len()).collect();
        if spec.order == Order::Randomized {
            shuffle_seeded(&mut order, round_seed(spec.seed, round));
        }
        for index in order {
            plan.push(PlannedRun {
                sequence: plan.len(),
                round,
                condition: conditions[index],
            });
        }
    }
    plan
}

/// Seed of one round's shuffle: independent of the other rounds.
fn round_seed(seed: u64, round: u32) -> u64 {
    seed ^ (u64::from(round) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Fisher–Yates shuffle driven by SplitMix64 from `seed`: the same seed always gives the same order.
pub fn shuffle_seeded<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
impl ExperimentSpec {
    /// The written schedule of a condition's fault (its `[[fault.profiles]]` level's, or `fault.schedule`);
    /// `None`: on for the whole run.
    pub fn written_schedule_of(&self, condition: &Condition) -> Option<breaker::sim::Schedule> {
        match condition.fault_profile {
            Some(index) => self.fault.profiles.get(index).and_then(|p| p.schedule),
            None => self.fault.schedule,
        }
    }

    /// [`ExperimentSpec::fault_schedule`] of one condition: its profile's schedule, scaled, when it has one.
    pub fn fault_schedule_of(&self, condition: &Condition) -> breaker::sim::Schedule {
        match self.written_schedule_of(condition) {
            Some(schedule) => scaled_schedule(&schedule, self.time_scale),
            None => breaker::sim::Schedule::Once {
                start: Duration::ZERO,
                length: self.run_warmup() + self.run_duration(),
            },
        }
    }

    /// [`ExperimentSpec::fault_periods`] of one condition.
    pub fn fault_periods_of(&self, condition: &Condition) -> Vec<(Duration, Duration)> {
        self.periods_of(self.fault_schedule_of(condition))
    }

    /// [`ExperimentSpec::breaker_config`] of one condition: its `[[breaker.configs]]` level's config when it has
    /// one, in the condition's mode, windows scaled.
    pub fn breaker_config_of(
        &self,
        condition: &Condition,
    ) -> Result<breaker::BreakerConfig, breaker::ConfigError> {
        match condition
            .breaker_config
            .and_then(|index| self.breaker.configs.get(index))
        {
            Some(named) => named
                .config
                .clone()
                .with_mode(condition.breaker_mode)
                .time_scaled(self.time_scale),
            None => self.breaker_config(condition.breaker_mode),
        }
    }

    /// The conditions (fault kind × fault rate × breaker mode), in expansion order.
    pub fn conditions(&self) -> Vec<Condition> {
        conditions(self)
    }

    /// Every run of the experiment in execution order: each round holds every condition once,
    /// shuffled per round from the seed when `order = "randomized"`.
    pub fn plan(&self) -> Vec<PlannedRun> {
        plan(self)
    }
}
