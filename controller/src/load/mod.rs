//! Load driver: virtual users as tokio tasks, each with its own connection and cookies, following a
//! workload (the Online Boutique mix) with think time (closed model) or at a constant arrival rate
//! (open model), recording every request into per-endpoint HDR histograms per second and per run.
//!
//! Closed model: a user runs a task, thinks (uniform in the think-time range), runs the next one.
//! A slow response delays the user's next request, which hides latency (coordinated omission).
//! Open model: every user is paced at `users / rate` seconds per task whatever the responses do, and
//! a request that took longer than the pace is recorded with `record_correct`, which back-fills the
//! samples the stall kept from being sent.

mod budget;
mod config;
mod custom;
mod driver;
mod error;
mod mix;
mod outcome;
mod report;
mod session;
mod stats;
mod step;
#[cfg(test)]
mod tests;
mod user_log;

#[cfg(test)]
use driver::PANICKING_PATH;

pub use budget::{
    DESCRIPTOR_RESERVE, DescriptorCost, DescriptorLimit, EMBEDDED_COST, EXTERNAL_COST,
    check_descriptor_budget, check_users, check_users_fit, open_descriptors,
    raise_descriptor_limit, users_within,
};
pub use config::{LoadConfig, LoadSettings, UserShare};
pub use custom::{
    CustomTask, CustomWorkload, JsonTemplate, RequestTemplate, Template, TemplateError, Values,
};
pub use driver::{run, run_until};
pub use error::LoadError;
pub use mix::{
    CURRENCIES, InvalidPath, ONLINE_BOUTIQUE_TOML, PRODUCT_IDS, PreparedWorkload, Workload,
    endpoint, luhn_valid, online_boutique,
};
pub use outcome::{OutcomeCounts, REJECTED_HEADER, RequestOutcome};
pub use report::{DriverFailures, EndpointReport, EndpointSummary, LoadReport};
pub use session::{
    Body, ClientSession, CookieJar, DriverError, OutgoingRequest, Target, is_drivers_own,
};
pub use stats::{
    EndpointSecond, EndpointStats, HISTOGRAM_HEADER, LatencySummary, MAX_LATENCY_US,
    OutcomeHistograms, Recorder, SecondSink, SecondStats, check_histogram_header,
    deserialize_histogram, latency_us, new_histogram, serialize_histogram,
};
pub use step::Step;
pub use user_log::{Sample, UserLog, UserLogs};
