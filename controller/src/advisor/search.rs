//! The search: every candidate against every profile on `breaker::sim` (the pass without a breaker run once per
//! profile), each run priced by the cost model and checked against the constraints, then ranked.
//!
//! The cost model, per profile and per hour of it (a profile's window is scaled to an hour): requests rejected
//! that would have succeeded × `costs.rejected_success`, caller-seconds blocked on hanging calls ×
//! `costs.blocked_second`, requests refused by a full pool × `costs.refused`, and for a full outage or hang the
//! seconds from its start to the first open (its length when the breaker never opens) × `costs.detect_second`.
//! The total is the profiles' weighted mean. A candidate is feasible when every sustained failure opens it within
//! `constraints.detect_within` and the baseline trips it at most `constraints.false_trips_per_hour`.

use breaker::BreakerConfig;
use breaker::sim::{self, Counterfactual, Totals};
use serde::Serialize;

use crate::advisor::candidates::label;
use crate::advisor::input::{Profile, ProfileKind, TuneInput};

/// What one candidate does in one profile, per hour of that profile.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileFigures {
    pub profile: String,
    /// Requests the breaker rejected.
    pub rejected: f64,
    /// Of those, the ones the dependency would have answered.
    pub rejected_success: f64,
    /// Caller-seconds blocked on hanging calls, with the breaker.
    pub blocked_s: f64,
    /// Caller-seconds blocked without a breaker minus with it.
    pub blocked_saved_s: f64,
    /// Requests refused by a full worker pool.
    pub refused: f64,
    /// Transitions into open.
    pub opens: f64,
    /// Seconds from the (first) fault's start to the first open during it; `None` when it did not open then.
    pub detect_s: Option<f64>,
}

/// The cost terms of a candidate: each the profiles' weighted mean per hour, in the input's cost unit.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct CostTerms {
    pub rejected_success: f64,
    pub blocked_second: f64,
    pub refused: f64,
    pub detect_second: f64,
    pub total: f64,
}

impl CostTerms {
    /// The terms by name, in the order the input lists them.
    pub fn named(&self) -> [(&'static str, f64); 4] {
        [
            ("rejected_success", self.rejected_success),
            ("blocked_second", self.blocked_second),
            ("refused", self.refused),
            ("detect_second", self.detect_second),
        ]
    }
}

/// A constraint a candidate does not keep.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "constraint", rename_all = "snake_case")]
pub enum Violation {
    /// A sustained failure was not detected within `constraints.detect_within` (`detect_s: None`: never).
    DetectWithin {
        profile: String,
        detect_s: Option<f64>,
    },
    /// The baseline tripped it more often than `constraints.false_trips_per_hour`.
    FalseTripsPerHour { profile: String, per_hour: f64 },
}

impl Violation {
    /// The constraint's name in the input.
    pub fn constraint(&self) -> &'static str {
        match self {
            Violation::DetectWithin { .. } => "detect_within",
            Violation::FalseTripsPerHour { .. } => "false_trips_per_hour",
        }
    }
}

/// One candidate, simulated and priced.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    pub label: String,
    pub config: BreakerConfig,
    pub cost: CostTerms,
    /// Caller-seconds saved per hour, the profiles' weighted mean (the front's other axis).
    pub saved_s: f64,
    pub per_profile: Vec<ProfileFigures>,
    pub violations: Vec<Violation>,
}

impl Evaluation {
    pub fn feasible(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Every profile's scenario pieces, prepared once for many candidates.
pub struct Prepared<'a> {
    input: &'a TuneInput,
    counterfactuals: Vec<Counterfactual>,
}

/// A profile that cannot be simulated with the traffic (a bound of the simulator), naming the profile.
#[derive(Debug, thiserror::Error)]
#[error("profiles[{index}] ({name}): {source}")]
pub struct ProfileError {
    pub index: usize,
    pub name: String,
    #[source]
    pub source: breaker::sim::ScenarioError,
}

impl<'a> Prepared<'a> {
    /// Run each profile once without a breaker.
    pub fn new(input: &'a TuneInput) -> Result<Prepared<'a>, ProfileError> {
        let mut counterfactuals = Vec::with_capacity(input.profiles.len());
        for (index, profile) in input.profiles.iter().enumerate() {
            let scenario = profile
                .scenario(&input.traffic, BreakerConfig::default(), input.search.seed)
                .map_err(|source| ProfileError {
                    index,
                    name: profile.name.clone(),
                    source,
                })?;
            counterfactuals.push(Counterfactual::of(&scenario));
        }
        Ok(Prepared {
            input,
            counterfactuals,
        })
    }

    /// Simulate and price one candidate against every profile.
    pub fn evaluate(&self, config: &BreakerConfig) -> Evaluation {
        let input = self.input;
        let mut per_profile = Vec::with_capacity(input.profiles.len());
        for (profile, without) in input.profiles.iter().zip(&self.counterfactuals) {
            let figures = match profile.scenario(&input.traffic, config.clone(), input.search.seed)
            {
                Ok(scenario) => figures(
                    input,
                    profile,
                    &sim::simulate_with(&scenario, without).totals,
                ),
                // Every candidate is a checked config and the profile ran without a breaker: not reached.
                Err(_) => ProfileFigures {
                    profile: profile.name.clone(),
                    rejected: 0.0,
                    rejected_success: 0.0,
                    blocked_s: 0.0,
                    blocked_saved_s: 0.0,
                    refused: 0.0,
                    opens: 0.0,
                    detect_s: None,
                },
            };
            per_profile.push(figures);
        }
        price(input, config.clone(), per_profile)
    }
}

/// One profile's totals as per-hour figures.
fn figures(input: &TuneInput, profile: &Profile, totals: &Totals) -> ProfileFigures {
    let per_hour = 3600.0 / profile.window.as_secs_f64();
    let timeout_s = input.traffic.timeout.as_secs_f64();
    let latency_s = input.traffic.latency.as_secs_f64();
    let blocked_with = totals.slow_failures as f64 * timeout_s;
    let blocked_without = (totals.caller_seconds_without
        - totals.successful_without_breaker as f64 * latency_s)
        .max(0.0);
    let (start, end) = profile.first_fault_s();
    let detect_s = totals
        .first_open_s
        .filter(|at| *at >= start && *at <= end)
        .map(|at| at - start);
    ProfileFigures {
        profile: profile.name.clone(),
        rejected: totals.never_made as f64 * per_hour,
        rejected_success: totals.rejected_would_succeed as f64 * per_hour,
        blocked_s: blocked_with * per_hour,
        blocked_saved_s: (blocked_without - blocked_with) * per_hour,
        refused: totals.refused_with as f64 * per_hour,
        opens: totals.opens as f64 * per_hour,
        detect_s,
    }
}

/// The cost terms and the constraints kept, from the per-profile figures.
fn price(input: &TuneInput, config: BreakerConfig, per_profile: Vec<ProfileFigures>) -> Evaluation {
    let costs = &input.costs;
    let total_weight = input.total_weight().max(f64::MIN_POSITIVE);
    let mut cost = CostTerms::default();
    let mut saved_s = 0.0;
    let mut violations = Vec::new();
    for (profile, figures) in input.profiles.iter().zip(&per_profile) {
        let share = profile.weight / total_weight;
        let per_hour = 3600.0 / profile.window.as_secs_f64();
        cost.rejected_success += share * costs.rejected_success * figures.rejected_success;
        cost.blocked_second += share * costs.blocked_second * figures.blocked_s;
        cost.refused += share * costs.refused * figures.refused;
        if profile.is_full_outage() {
            let (start, end) = profile.first_fault_s();
            let detect = figures.detect_s.unwrap_or(end - start);
            cost.detect_second += share * costs.detect_second * detect * per_hour;
        }
        saved_s += share * figures.blocked_saved_s;
        if let Some(within) = input.constraints.detect_within {
            if profile.must_be_detected()
                && figures.detect_s.is_none_or(|d| d > within.as_secs_f64())
            {
                violations.push(Violation::DetectWithin {
                    profile: profile.name.clone(),
                    detect_s: figures.detect_s,
                });
            }
        }
        if let (Some(allowed), ProfileKind::Baseline { .. }) =
            (input.constraints.false_trips_per_hour, profile.kind)
        {
            if figures.opens > allowed {
                violations.push(Violation::FalseTripsPerHour {
                    profile: profile.name.clone(),
                    per_hour: figures.opens,
                });
            }
        }
    }
    cost.total = cost.rejected_success + cost.blocked_second + cost.refused + cost.detect_second;
    Evaluation {
        label: label(&config),
        config,
        cost,
        saved_s,
        per_profile,
        violations,
    }
}

/// Every candidate evaluated, feasible ones first, each group by total cost (then label, for a stable order).
pub fn rank(prepared: &Prepared<'_>, candidates: &[BreakerConfig]) -> Vec<Evaluation> {
    let mut evaluations: Vec<Evaluation> =
        candidates.iter().map(|c| prepared.evaluate(c)).collect();
    evaluations.sort_by(|a, b| {
        b.feasible()
            .cmp(&a.feasible())
            .then(a.violations.len().cmp(&b.violations.len()))
            .then(a.cost.total.total_cmp(&b.cost.total))
            // Equal costs (often: none trips): the shorter open window and the fewer probes risk less.
            .then(a.config.open().base().cmp(&b.config.open().base()))
            .then_with(|| a.label.cmp(&b.label))
    });
    evaluations
}

/// The Pareto front of the feasible candidates: rejection cost (lower is better) against caller-seconds saved
/// (higher is better), each point not dominated by another, ordered by rejection cost.
pub fn front(evaluations: &[Evaluation]) -> Vec<&Evaluation> {
    let mut feasible: Vec<&Evaluation> = evaluations.iter().filter(|e| e.feasible()).collect();
    feasible.sort_by(|a, b| {
        a.cost
            .rejected_success
            .total_cmp(&b.cost.rejected_success)
            .then(b.saved_s.total_cmp(&a.saved_s))
            .then(a.cost.total.total_cmp(&b.cost.total))
    });
    let mut front: Vec<&Evaluation> = Vec::new();
    let mut best_saved = f64::NEG_INFINITY;
    for evaluation in feasible {
        // Sorted by rejection cost: a point is on the front when it saves more than every cheaper one.
        if evaluation.saved_s > best_saved + 1e-9 || front.is_empty() {
            best_saved = best_saved.max(evaluation.saved_s);
            front.push(evaluation);
        }
    }
    front
}

/// Whether `other` dominates `point` on the front's axes (no worse on both, better on one).
pub fn dominates(other: &Evaluation, point: &Evaluation) -> bool {
    let no_worse = other.cost.rejected_success <= point.cost.rejected_success + 1e-9
        && other.saved_s + 1e-9 >= point.saved_s;
    let better = other.cost.rejected_success + 1e-9 < point.cost.rejected_success
        || other.saved_s > point.saved_s + 1e-9;
    no_worse && better
}
