//! `tolerant tune --verify`: the current config and the top candidates as one experiment — conditions are
//! config × failure profile (`[[breaker.configs]]` × `[[fault.profiles]]`, each profile a fault schedule) on the
//! embedded testbed, or on the user's own `[targets]` and load when the input names a spec (`verify.spec`), run
//! through `tolerant run`'s code path — then per candidate the predicted cost beside the
//! measured one with its 95 % interval over the rounds, the pick by measured cost, and whether the prediction
//! ranked the candidates the same way.
//!
//! Both sides price what the testbed measures, with the same estimator: rejected requests × (1 − the share of
//! calls the fault fails over the run) as requests that would have succeeded, and for hanging profiles the
//! failed calls × the testbed's call timeout as caller-seconds blocked, each per hour and weighted over the
//! profiles as the search weighs them. The prediction is `controller::predict`'s model of the same spec (the
//! Online Boutique mix, one checkout in nineteen calling Payment), averaged over its seeds; a spec of one's own
//! that model does not cover is ranked by the search's own cost instead, and the report says so.

mod measure;
mod model;
mod plan;
mod verdict;

pub use measure::measured;
pub use model::{Plan, PlannedCandidate, Verification, VerifiedCandidate, VerifyError};
pub use plan::plan;
