//! Controller: experiment specs, the load driver, storage and the runner that ties them together.

pub mod actions;
pub mod advisor;
pub mod clock;
pub mod docker;
pub mod energy;
pub mod exposition;
pub mod kubernetes;
pub mod lease;
pub mod load;
pub mod metric;
pub mod observe;
pub mod panic;
pub mod predict;
pub mod report;
pub mod roster;
pub mod runner;
pub mod sources;
pub mod spec;
pub mod stats;
pub mod store;
pub mod target;
pub mod task;
#[cfg(any(test, feature = "test-util"))]
pub mod test_support;
pub mod testbed;
pub mod workers;
