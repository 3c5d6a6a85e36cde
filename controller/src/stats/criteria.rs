//! The validation gate: each `[[validate]]` criterion (`crate::spec::Criterion`) judged on the 95 % interval —
//! a criterion passes only if the whole interval satisfies it, so a lucky mean with a wide interval does not pass
//! a release.

use serde::Serialize;

use super::condition::{ConditionStats, ExperimentStats};
use super::student::Summary;
use crate::spec::Criterion;

/// What a criterion came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionOutcome {
    /// The whole 95 % interval satisfies the comparison.
    Pass,
    /// Some of the interval does not.
    Fail,
    /// No interval to judge (no such condition, no values, or fewer than two rounds): not a pass.
    Unevaluable,
}

impl CriterionOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CriterionOutcome::Pass => "pass",
            CriterionOutcome::Fail => "fail",
            CriterionOutcome::Unevaluable => "cannot evaluate",
        }
    }
}

/// One criterion judged on an experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CriterionResult {
    pub criterion: Criterion,
    pub outcome: CriterionOutcome,
    /// Label of the condition judged, when one matched.
    pub condition: Option<String>,
    pub summary: Option<Summary>,
    /// Why, in words.
    pub explanation: String,
}

/// Every criterion judged.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationReport {
    pub results: Vec<CriterionResult>,
}

impl ValidationReport {
    /// True when every criterion passed (vacuously true without criteria).
    pub fn passed(&self) -> bool {
        self.results
            .iter()
            .all(|r| r.outcome == CriterionOutcome::Pass)
    }

    /// The validation gate's exit status: 0 when every criterion passed, 1 otherwise (a spec that
    /// cannot be read or names conditions it does not run is the caller's 2).
    pub fn exit_code(&self) -> i32 {
        if self.passed() { 0 } else { 1 }
    }
}

/// Judges every criterion on `stats`.
pub fn evaluate(criteria: &[Criterion], stats: &ExperimentStats) -> ValidationReport {
    ValidationReport {
        results: criteria
            .iter()
            .map(|criterion| evaluate_one(criterion, stats))
            .collect(),
    }
}

fn evaluate_one(criterion: &Criterion, stats: &ExperimentStats) -> CriterionResult {
    let matching: Vec<&ConditionStats> = stats
        .conditions
        .iter()
        .filter(|c| {
            let key = &c.condition;
            (key.fault_rate - criterion.fault_rate).abs() < 1e-9
                && key.breaker_mode == criterion.breaker.as_str()
                && criterion
                    .fault_kind
                    .is_none_or(|kind| key.fault_kind == kind.as_str())
        })
        .collect();
    let unevaluable = |condition: Option<String>, explanation: String| CriterionResult {
        criterion: criterion.clone(),
        outcome: CriterionOutcome::Unevaluable,
        condition,
        summary: None,
        explanation,
    };
    let condition = match matching.as_slice() {
        [] => {
            return unevaluable(None, "the experiment has no such condition".to_owned());
        }
        [one] => *one,
        _ => {
            return unevaluable(
                None,
                "several fault kinds match: give fault_kind".to_owned(),
            );
        }
    };
    let label = Some(condition.condition.label.clone());
    let Some(summary) = condition.summary(&criterion.metric) else {
        return unevaluable(
            label,
            format!("no run of the condition has {}", criterion.metric),
        );
    };
    let Some((low, high)) = summary.interval() else {
        return CriterionResult {
            summary: Some(*summary),
            ..unevaluable(
                label,
                format!("n = {}: an interval needs at least two rounds", summary.n),
            )
        };
    };
    let passes = criterion
        .comparison
        .holds_for_interval(low, high, criterion.threshold);
    let explanation = format!(
        "95 % CI [{low:.6}, {high:.6}] (mean {:.6}, n = {}) {} {} {}",
        summary.mean,
        summary.n,
        if passes {
            "lies wholly"
        } else {
            "does not lie wholly"
        },
        criterion.comparison.symbol(),
        criterion.threshold
    );
    CriterionResult {
        criterion: criterion.clone(),
        outcome: if passes {
            CriterionOutcome::Pass
        } else {
            CriterionOutcome::Fail
        },
        condition: label,
        summary: Some(*summary),
        explanation,
    }
}
