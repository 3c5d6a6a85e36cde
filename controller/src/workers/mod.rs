//! Load beyond one process: load workers (`tolerant load-worker`) each drive a share of a run's virtual users
//! with the same driver and stream their closed seconds back, and the controller merges them into the run's
//! seconds exactly (counts summed, HDR histograms added), so a run driven by workers is stored in the same
//! shape as a one-process run.
//!
//! [`wire`] is what both ends say, [`pool`] where the controller waits for its workers (token, version,
//! duplicate and late workers refused), [`drive`] one run over them (users split by stated capacity, the seed
//! of every user the one-process run would give it), [`merge`] the exact merge and the lost workers' missing
//! users, [`worker`] the worker's side.

pub mod drive;
pub mod merge;
pub mod pool;
pub mod wire;
pub mod worker;

pub use drive::{WorkersError, WorkersLoad, WorkersRun, run_until, split_users};
pub use merge::{LostShare, Merge, WorkerShare};
pub use pool::{MissingWorkers, WorkerPool, WorkerStatus, WorkersView};
pub use worker::{WorkerError, WorkerOptions, run_worker};
