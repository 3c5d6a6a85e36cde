//! `[[load.tasks]]` and `[load.values]`: a workload of the user's shape (see `load::custom`), checked field by
//! field with the line of the problem.

mod limits;
mod raw;
mod request;
mod tasks;
mod values;

#[cfg(test)]
pub(super) use limits::{MAX_HEADER_VALUE, MAX_HEADERS};
pub(super) use raw::{RawOnStart, RawTask, RawValuesTable};
pub use tasks::parse_workload;
pub(super) use tasks::{custom, shared};
