//! Why a runner stopped: storage, the testbed, a run's setup, its load, a cancel, a failed run.

use super::SetupError;
use crate::store::{RunId, StoreError};
use crate::testbed::AdminError;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error("testbed: {0}")]
    Testbed(String),
    /// The spec asks for what the testbed refuses (a fault lease over the agent's cap …): a mistake in the spec,
    /// found by the preflight before anything is stored; the text names the field.
    #[error("{0}")]
    Spec(String),
    /// A stream or a foreign source a run needs did not start.
    #[error("testbed: {0}")]
    Setup(#[from] SetupError),
    #[error("testbed admin call: {0}")]
    Admin(#[from] AdminError),
    #[error("load: {0}")]
    Load(#[from] crate::load::LoadError),
    /// The spec's breaker config for a condition, scaled, is out of bounds (a parsed spec never is).
    #[error("breaker.{0}")]
    BreakerConfig(#[from] breaker::ConfigError),
    /// The run was cancelled (an abort, Ctrl-C): its fault is off, its tasks ended, nothing stored.
    #[error("cancelled")]
    Cancelled,
    /// The run panicked or its load generator failed: its fault is off, its tasks ended, and it is
    /// stored as failed with `reason`. Not a verdict on the system: the experiment ends there.
    #[error("run {run} failed: {reason}")]
    RunFailed { run: RunId, reason: String },
}
