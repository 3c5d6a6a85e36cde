//! Injection agent: per-request HTTP faults with leases, a control API, a tower layer and a sidecar proxy.
//!
//! - `fault_table/` is the pure core: the faults by id with their leases, and the per-request decision
//!   (`decide(request, now)`), time passed in.
//! - [`Agent`] is its shell: reads the clock, draws per request from a seeded stream, reaps expired leases
//!   (`reaper.rs`) and publishes events and counters; `refusal.rs` holds the caps a fault is checked against.
//! - [`FaultLayer`] is a tower layer for embedding in a service (Payment in the boutique uses it):
//!   `FaultLayer::new(agent)`.
//! - [`fault_api::router`] serves the fault API (control of faults) under `/_agent/`: `fault_api::router(agent)`.
//! - [`sidecar`] is the standalone reverse proxy behind `tolerant agent`.
//! - [`probes`] keeps each probe's arrival in 10 ms buckets (`GET /_agent/probes`).
//! - [`api`] holds the wire types shared with the controller.
//!
//! # Order in which faults are checked
//!
//! Active faults are checked in ascending id order (byte-wise). For each live fault whose match rule covers the
//! request one draw is made from the request's stream ([`rng::RequestRng`], fixed by the seed and the request's
//! index); the first fault whose draw fires is applied and the walk stops. Two faults at 0.5 on the same route
//! therefore fire on 50 % and 25 % of requests. Requests under `/_agent/` are never faulted nor counted.
//!
//! See `README.md` for the fault kinds, the control API and what each kind does on the wire.

mod agent;
pub mod api;
mod config;
pub mod fault_api;
mod fault_table;
pub mod inject;
mod metrics;
pub mod probes;
mod reaper;
mod refusal;
pub mod rng;
pub mod sidecar;

pub use agent::{Agent, FAULT_API_PREFIX, PutOutcome};
pub use config::{
    AgentConfig, AgentConfigError, DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_MAX_LEASE,
    MAX_AGENT_DURATION, MAX_TOKEN_BYTES, RawAgentConfig,
};
pub use fault_api::PROMETHEUS_CONTENT_TYPE;
pub use fault_table::MAX_FAULTS;
pub use inject::{FaultBody, FaultLayer, FaultService};
pub use refusal::AgentError;

/// Header a caller puts on a call that holds a half-open probe slot of its breaker (value `1`). The fault layer
/// counts such requests (`tolerant_agent_probes_total`), so the probes reaching a dependency can be measured —
/// the probe storm of many callers leaving their open window together.
pub const PROBE_HEADER: &str = "x-tolerant-probe";
