//! What computing an experiment's figures can fail with.

use crate::store::{ExperimentId, RunId, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("experiment {0} does not exist")]
    NoExperiment(ExperimentId),
    #[error("run {run}, endpoint `{endpoint}`: stored histogram is unreadable: {message}")]
    Histogram {
        run: RunId,
        endpoint: String,
        message: String,
    },
}
