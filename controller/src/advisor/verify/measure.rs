//! Pricing a run with the estimator both sides share, the prediction of every condition, and the measured
//! cost of every candidate read from the stored experiment.

use std::collections::BTreeMap;

use breaker::sim;

use super::model::{Plan, Verification, VerifiedCandidate, VerifyError};
use crate::spec::ExperimentSpec;
use crate::stats::Summary;
use crate::store::{ExperimentId, Status, Store};

/// The estimator both sides share, per hour of a run: rejections that would have succeeded and, for hanging
/// profiles, failed calls as caller-seconds blocked at the testbed's call timeout.
fn priced(plan: &Plan, profile: usize, rejected: f64, failed: f64, measured_s: f64) -> f64 {
    let (_, failing_share, hang) = plan.profiles[profile];
    let per_hour = 3600.0 / measured_s.max(f64::MIN_POSITIVE);
    let blocked = if hang {
        failed * plan.call_timeout.as_secs_f64()
    } else {
        0.0
    };
    (plan.costs.rejected_success * rejected * (1.0 - failing_share)
        + plan.costs.blocked_second * blocked)
        * per_hour
}

/// The prediction of every (candidate, profile) condition of the plan's spec, weighted per candidate; `None`
/// for a candidate with a condition the model does not cover.
fn predicted(plan: &Plan, spec: &ExperimentSpec) -> Vec<Option<f64>> {
    let mut by_candidate = vec![Some(0.0); plan.candidates.len()];
    let measured_s = spec.run_duration().as_secs_f64();
    for condition in spec.conditions() {
        let (Some(candidate), Some(profile)) = (condition.breaker_config, condition.fault_profile)
        else {
            continue;
        };
        let mut total = 0.0;
        let mut runs = 0.0;
        for seed in 0..crate::predict::SEEDS {
            let Some(scenario) =
                crate::predict::scenario(spec, &condition, spec.seed.wrapping_add(seed))
            else {
                continue;
            };
            let totals = sim::simulate(&scenario).totals;
            // Failures of calls that reached the dependency: the testbed's `failed` (rejections are their own).
            let failed = totals
                .failed_with_breaker
                .saturating_sub(totals.never_made + totals.refused_with)
                as f64;
            total += priced(plan, profile, totals.never_made as f64, failed, measured_s);
            runs += 1.0;
        }
        by_candidate[candidate] = match by_candidate[candidate] {
            Some(sum) if runs > 0.0 => Some(sum + plan.profiles[profile].0 * total / runs),
            _ => None,
        };
    }
    by_candidate
}

/// The experiment's finished runs priced, per candidate over the rounds, beside the prediction.
pub async fn measured(
    store: &Store,
    experiment: ExperimentId,
    plan: &Plan,
) -> Result<Verification, VerifyError> {
    let spec = ExperimentSpec::parse(&plan.spec_toml)?;
    let conditions = spec.conditions();
    let predicted = predicted(plan, &spec);
    // (candidate, round) → the weighted cost summed over its profiles, and how many profiles it has.
    let mut per_round: BTreeMap<(usize, i64), (f64, usize)> = BTreeMap::new();
    for run in store.runs(experiment).await? {
        if run.status != Status::Finished {
            continue;
        }
        let Some(outcomes) = run.outcomes else {
            continue;
        };
        let Some(condition) = usize::try_from(run.condition_index)
            .ok()
            .and_then(|i| conditions.get(i))
        else {
            continue;
        };
        let (Some(candidate), Some(profile)) = (condition.breaker_config, condition.fault_profile)
        else {
            continue;
        };
        let measured_s = run.duration_ms as f64 / 1000.0;
        let cost = priced(
            plan,
            profile,
            outcomes.rejected as f64,
            outcomes.failed as f64,
            measured_s,
        );
        let entry = per_round.entry((candidate, run.round_index)).or_default();
        entry.0 += plan.profiles[profile].0 * cost;
        entry.1 += 1;
    }
    let profiles = plan.profiles.len();
    let candidates: Vec<VerifiedCandidate> = plan
        .candidates
        .iter()
        .enumerate()
        .map(|(index, candidate)| {
            let rounds: Vec<f64> = per_round
                .iter()
                .filter(|((c, _), (_, n))| *c == index && *n == profiles)
                .map(|(_, (cost, _))| *cost)
                .collect();
            VerifiedCandidate {
                name: candidate.name.clone(),
                label: candidate.label.clone(),
                searched_cost: candidate.searched_cost,
                predicted: predicted[index],
                measured: Summary::of(&rounds),
            }
        })
        .collect();
    Ok(Verification::judge(experiment.0, candidates))
}
