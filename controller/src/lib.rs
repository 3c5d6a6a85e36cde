//! Controller: experiment specs, the load driver, storage and the runner that ties them together.

pub mod spec;
