//! What a verification plans and finds: the candidates it runs, the experiment's plan, each candidate's predicted
//! and measured cost, the verdict's fields, and its errors.

use std::time::Duration;

use breaker::BreakerConfig;
use serde::Serialize;

use crate::spec::SpecError;
use crate::stats::Summary;
use crate::store::StoreError;

/// A verification that cannot be planned or read.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("verify: {0}")]
    Input(String),
    #[error("verify: the generated spec does not validate: {0}")]
    Spec(#[from] SpecError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One config the experiment runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlannedCandidate {
    /// Its `[[breaker.configs]]` name: `current`, `recommended`, `candidate-3`, …
    pub name: String,
    pub label: String,
    pub config: BreakerConfig,
    /// What the search predicted it costs (its own traffic model), per hour.
    pub searched_cost: f64,
}

/// The experiment to run and what each of its levels is.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub spec_toml: String,
    pub candidates: Vec<PlannedCandidate>,
    /// Each profile's weight share and the share of calls its fault fails over a run.
    pub(super) profiles: Vec<(f64, f64, bool)>,
    pub(super) costs: crate::advisor::Costs,
    /// What a hanging call blocks its caller for: the testbed's call timeout (the input's `traffic.timeout` on a
    /// testbed of one's own).
    pub(super) call_timeout: Duration,
}

/// One candidate's predicted and measured cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerifiedCandidate {
    pub name: String,
    pub label: String,
    pub searched_cost: f64,
    /// The spec's prediction, per hour (`None`: the prediction's model does not cover the spec).
    pub predicted: Option<f64>,
    /// Over the rounds, per hour.
    pub measured: Option<Summary>,
}

/// What the experiment showed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    pub experiment: i64,
    pub candidates: Vec<VerifiedCandidate>,
    /// The candidate whose measured cost is lowest.
    pub pick: Option<String>,
    /// Whether the prediction ranks the candidates in the measured order.
    pub same_ranking: bool,
    /// What ranked them: `"prediction"`, or `"search"` when the prediction does not cover every candidate.
    pub ranked_by: &'static str,
    /// Whether the pick's interval lies below every other candidate's (the intervals separate).
    pub separated: bool,
    /// The candidates whose interval lies wholly above the pick's (the pick is measurably cheaper than each).
    pub separated_from: Vec<String>,
}
