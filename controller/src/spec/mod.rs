//! Experiment spec: the TOML file that says what to run (conditions, rounds, load, fault, breaker, stop).
//!
//! Parsing is two steps: `toml` deserialises into raw structs that keep every value's span
//! (`toml::Spanned`), then [`ExperimentSpec::parse`] checks every value and builds the plain, valid
//! spec. Every problem — an unknown field, an impossible value, an unknown target — becomes a
//! [`SpecError`] naming the dotted field and its line, before anything runs or is stored.
//!
//! Where: the checked spec (`experiment.rs`) and its parts (`model.rs`), the raw tables and their checks
//! (`raw/`), conditions and plan (`matrix.rs`), fault schedules (`schedule.rs`), targets, sources, workloads
//! and `[[validate]]` criteria (`criteria.rs`) each in its file. This file only names them.

mod bounds;
pub(crate) mod checker;
mod criteria;
mod error;
mod experiment;
mod matrix;
mod model;
mod raw;
mod schedule;
mod sources;
mod targets;
#[cfg(test)]
mod tests;
mod workload;

/// The documented bounds and defaults a valid spec keeps to.
pub use bounds::{
    DEFAULT_LEASE, DEFAULT_STOP_WINDOW, DEFAULT_TIMEOUT, MAX_FAULT_DELAY, MAX_LEASE,
    MAX_NAME_BYTES, MAX_PATH_PREFIX_BYTES, MAX_RATE_LEVELS, MAX_ROUNDS, MAX_RUN_DURATION, MAX_RUNS,
    MAX_STOP_WINDOW, MAX_THINK_TIME, MAX_TIMEOUT, MAX_USERS, MAX_WORKERS, MAX_WRITTEN_DURATION,
    MIN_RUN_DURATION, RATE_RANGE, TIME_SCALE_RANGE,
};
pub use criteria::{
    Criterion, CriterionComparison, CriterionError, criteria_of_spec, parse_criteria,
};
pub use error::{Location, SpecError};
pub use experiment::ExperimentSpec;
pub use matrix::{Condition, PlannedRun, label_in, shuffle_seeded};
pub use model::{
    BreakerMode, BreakerSpec, ConditionFault, FaultFactor, FaultKindName, FaultProfile, LoadSpec,
    LoadWorkers, MatchRule, Mix, NamedBreakerConfig, Order, StopSpec, scale_duration,
};
pub use raw::check_against_spec;
pub use schedule::{MAX_PERIODS as MAX_SCHEDULE_PERIODS, MIN_PERIOD as MIN_SCHEDULE_PERIOD};
pub use sources::{
    DEFAULT_SCRAPE_INTERVAL, MAX_SCRAPE_INTERVAL, MAX_SOURCES, MIN_SCRAPE_INTERVAL, ScrapeSpec,
    SourceSpec,
};
pub use targets::{AGENT_TARGET, MAX_TARGET_NAME, MAX_TARGETS, Offers, SERVICE_NAMES};
pub use workload::parse_workload;
