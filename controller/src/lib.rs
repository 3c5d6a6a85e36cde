//! Controller: experiment specs, the load driver, storage and the runner that ties them together.

pub mod docker;
pub mod energy;
pub mod kubernetes;
pub mod load;
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
