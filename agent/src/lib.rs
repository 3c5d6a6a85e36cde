//! Injection agent: per-request HTTP faults with leases, a control API, a tower layer and a sidecar proxy.
//!
//! - [`Agent`] holds the fault table, draws per request from a seeded stream, reaps expired leases and publishes
//!   events and counters.
//! - [`Agent::layer`] is a tower layer for embedding in a service (Payment in the boutique uses it).
//! - [`Agent::fault_api_router`] serves the fault API (control of faults) of `design.md` under `/_agent/`.
//! - [`sidecar`] is the standalone reverse proxy behind `tolerant agent`.
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
mod fault_api;
pub mod inject;
mod metrics;
pub mod rng;
pub mod sidecar;

pub use agent::{Agent, AgentError, FAULT_API_PREFIX, MAX_FAULTS, PutOutcome};
pub use config::{
    AgentConfig, AgentConfigError, DEFAULT_LEASE, DEFAULT_MAX_HOLD, DEFAULT_MAX_LEASE,
    MAX_AGENT_DURATION, MAX_TOKEN_BYTES, RawAgentConfig,
};
pub use fault_api::PROMETHEUS_CONTENT_TYPE;
pub use inject::{FaultBody, FaultLayer, FaultService};

/// Header a caller puts on a call that holds a half-open probe slot of its breaker (value `1`). The fault layer
/// counts such requests (`tolerant_agent_probes_total`), so the probes reaching a dependency can be measured —
/// the probe storm of many callers leaving their open window together.
pub const PROBE_HEADER: &str = "x-tolerant-probe";
