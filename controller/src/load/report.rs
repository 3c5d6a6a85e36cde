//! What a load run saw: per endpoint and in all, the driver's own failures, and a summary per endpoint.

use std::time::Duration;

use serde::Serialize;

use super::outcome::OutcomeCounts;
use super::stats::{EndpointStats, LatencySummary, SecondStats};

/// One endpoint's figures over the measured part of a run.
#[derive(Debug, Clone)]
pub struct EndpointReport {
    pub name: String,
    pub stats: EndpointStats,
}

impl EndpointReport {
    pub fn summary(&self) -> LatencySummary {
        LatencySummary::of(&self.stats.latency)
    }
}

/// Everything a load run saw.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Per endpoint, measured part only (warmup excluded), in the workload's endpoint order.
    pub endpoints: Vec<EndpointReport>,
    /// Closed seconds, warmup included (empty when a second sink was given).
    pub seconds: Vec<SecondStats>,
    /// Tasks started per task name (warmup included).
    pub tasks: Vec<(String, u64)>,
    /// Length of the measured part.
    pub measured: Duration,
    /// Requests the driver itself failed, warmup included (in no outcome count).
    pub driver_failures: DriverFailures,
}

/// Requests the load generator itself failed — it could not open a connection for want of a
/// descriptor or port ([`DriverError`]), or the request's task panicked — counted apart from the
/// outcomes: they say nothing about the system under test, and a run with any is not a measurement of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DriverFailures {
    pub count: u64,
    /// The first one's reason.
    pub first: Option<String>,
}

impl DriverFailures {
    pub fn add(&mut self, reason: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(reason());
        }
    }
}

impl LoadReport {
    /// Outcomes over every endpoint (measured part).
    pub fn outcomes(&self) -> OutcomeCounts {
        let mut total = OutcomeCounts::default();
        for endpoint in &self.endpoints {
            total.merge(&endpoint.stats.outcomes);
        }
        total
    }

    /// Successful requests per second over the measured part.
    pub fn ok_per_second(&self) -> f64 {
        self.outcomes().ok as f64 / self.measured.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// Requests per second, any outcome, over the measured part.
    pub fn requests_per_second(&self) -> f64 {
        self.outcomes().total() as f64 / self.measured.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    pub fn endpoint(&self, name: &str) -> Option<&EndpointReport> {
        self.endpoints.iter().find(|e| e.name == name)
    }
}

/// Summary of a report for printing or JSON.
#[derive(Debug, Clone, Serialize)]
pub struct EndpointSummary {
    pub name: String,
    pub outcomes: OutcomeCounts,
    pub latency: LatencySummary,
}
