//! Live dashboard: the hub that fans events out to browsers, the controller HTTP API, the pages.

pub mod advisor;
pub mod api;
pub mod app;
pub mod assets;
pub mod auth;
pub mod automation_api;
pub mod container_fault;
pub mod dashboard;
pub mod error;
#[cfg(test)]
mod error_tests;
#[cfg(test)]
mod fault_proxy_tests;
pub mod hub;
pub mod live;
#[cfg(test)]
mod not_measured_tests;
pub mod operations;
pub mod pages;
pub mod push_listener;
pub mod results_summary;
#[cfg(test)]
mod routes_tests;
pub mod simulate;
pub mod simulation_pool;
pub mod state;
#[cfg(test)]
mod ws_origin_tests;

pub use app::router;
pub use dashboard::{ComposeProject, DashboardConfig, ExternalTestbed, RunningDashboard};
pub use operations::embedded::Orchestrator;
pub use state::AppState;
