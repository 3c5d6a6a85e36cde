//! Injection agent: per-request HTTP faults with leases, a control API, a tower layer and a sidecar proxy.
//!
//! - [`Agent`] holds the fault table, draws per request from a seeded stream, reaps expired leases and publishes
//!   events and counters. See the [`agent`](crate::Agent) docs for the order faults are checked in.
//! - [`Agent::layer`] is a tower layer for embedding in a service (Payment in the boutique uses it).
//! - [`Agent::control_router`] serves the control API of `design.md` under `/_agent/`.
//! - [`sidecar`] is the standalone reverse proxy behind `tolerant agent`.
//! - [`api`] holds the wire types shared with the controller.

mod agent;
pub mod api;
mod control;
pub mod inject;
mod metrics;
pub mod rng;
pub mod sidecar;

pub use agent::{
    Agent, AgentConfig, AgentError, CONTROL_PATH_PREFIX, DEFAULT_LEASE, DEFAULT_MAX_HOLD,
    DEFAULT_MAX_LEASE, PutOutcome,
};
pub use control::PROMETHEUS_CONTENT_TYPE;
pub use inject::{FaultBody, FaultLayer, FaultService};
