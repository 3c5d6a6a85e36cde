//! Why a report could not be made or written.

use crate::stats::StatsError;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Stats(#[from] StatsError),
    #[error("format `{0}`: expected md, csv or json")]
    Format(String),
    #[error("drawing a plot: {0}")]
    Plot(String),
    #[error("writing CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error("writing JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("writing {path}: {source}")]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
}
