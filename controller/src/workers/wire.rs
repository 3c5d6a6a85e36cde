//! What a load worker and the controller say to each other over their one WebSocket (`GET /workers`, the token
//! as `Authorization: Bearer`), one JSON message per text frame: the worker's hello, the controller's welcome or
//! refusal, a run's assignment, the worker's closed seconds with their HDR histograms (V2, as stored) and its
//! totals at the end. Both ends use these types; what is read is checked by [`WorkerSecond::check`] and
//! [`WorkerTotals::check`] before anything is merged.

use serde::{Deserialize, Serialize};

use crate::load::{
    DriverFailures, EndpointStats, OutcomeCounts, SecondStats, check_histogram_header,
    deserialize_histogram, serialize_histogram,
};

/// The path workers connect to.
pub const WORKERS_PATH: &str = "/workers";
/// A worker is refused when its version differs from the controller's.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Largest message either end reads (a second of a workload with many endpoints, three histograms each).
pub const MAX_MESSAGE_BYTES: usize = 8 << 20;
/// Longest a worker's name may be.
pub const MAX_NAME_BYTES: usize = 128;
/// Most users a worker may state it can hold (the spec's own bound on a run's users).
pub const MAX_CAPACITY: u32 = crate::spec::MAX_USERS;

/// What a worker sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum FromWorker {
    /// First message: who it is, its version and how many users it can hold.
    Hello {
        name: String,
        version: String,
        capacity: u32,
    },
    /// One closed second of the run it was assigned.
    Second(WorkerSecond),
    /// The run's load ended: its totals.
    Done(WorkerTotals),
}

/// What the controller sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToWorker {
    Welcome,
    /// The connection is refused; it is closed after this.
    Refused {
        reason: String,
    },
    /// Run a share of a run's users.
    Assign(Assignment),
    /// End the current run's load now (a stop condition, an abort): in-flight requests are not counted.
    Stop {
        run: i64,
    },
    /// The experiment is over; the connection closes.
    Finished,
}

/// A worker's share of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assignment {
    pub run: i64,
    /// The experiment's spec as written: the worker builds the run's load from it as the controller would.
    pub spec: String,
    /// The run's position in the plan (its seed is derived from the spec's and this).
    pub sequence: usize,
    /// Where the controller's testbed loads (`IP:PORT`); a worker may be told another address of it.
    pub target: String,
    /// Users `first_user .. first_user + users` of the run's `of`.
    pub first_user: u32,
    pub users: u32,
    pub of: u32,
    /// Start this long after the assignment arrives, so every worker starts together.
    pub start_in_ms: u64,
}

/// One endpoint's histograms, HDR V2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Histograms {
    pub latency: Vec<u8>,
    pub latency_ok: Vec<u8>,
    pub latency_failed: Vec<u8>,
}

impl Histograms {
    /// Each of the three checked and read.
    pub fn read(&self) -> Result<[hdrhistogram::Histogram<u64>; 3], String> {
        let mut read = Vec::with_capacity(3);
        for bytes in [&self.latency, &self.latency_ok, &self.latency_failed] {
            check_histogram_header(bytes)?;
            read.push(
                deserialize_histogram(bytes).map_err(|error| format!("histogram: {error:?}"))?,
            );
        }
        let [all, ok, failed]: [_; 3] = read.try_into().expect("three histograms");
        Ok([all, ok, failed])
    }
}

/// One endpoint in a worker's second or totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerEndpoint {
    pub endpoint: usize,
    pub outcomes: OutcomeCounts,
    pub histograms: Histograms,
}

/// A worker's closed second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerSecond {
    pub run: i64,
    pub second: u64,
    pub endpoints: Vec<WorkerEndpoint>,
}

impl WorkerSecond {
    /// A closed second of the driver as a worker sends it. Its recorder kept the outcome histograms
    /// ([`crate::load::Recorder::keep_outcome_histograms`]); `None` when it did not.
    pub fn of(run: i64, second: &SecondStats) -> Option<Self> {
        let endpoints = second
            .endpoints
            .iter()
            .map(|endpoint| {
                let split = endpoint.outcome_histograms_v2.as_ref()?;
                Some(WorkerEndpoint {
                    endpoint: endpoint.endpoint,
                    outcomes: endpoint.outcomes,
                    histograms: Histograms {
                        latency: endpoint.histogram_v2.clone(),
                        latency_ok: split.ok.clone(),
                        latency_failed: split.failed.clone(),
                    },
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(WorkerSecond {
            run,
            second: second.second,
            endpoints,
        })
    }

    /// Checks what the controller cannot take: an endpoint outside the workload, one given twice, a second past
    /// `last_second`.
    pub fn check(&self, endpoints: usize, last_second: u64) -> Result<(), String> {
        if self.second > last_second {
            return Err(format!(
                "second {} is past the run's last ({last_second})",
                self.second
            ));
        }
        check_endpoints(self.endpoints.iter().map(|e| e.endpoint), endpoints)
    }
}

/// A worker's totals over the measured part of its share.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerTotals {
    pub run: i64,
    /// Per endpoint in the workload's order.
    pub endpoints: Vec<WorkerEndpoint>,
    /// Tasks started per task, in the workload's order.
    pub tasks: Vec<u64>,
    pub measured_ms: u64,
    pub driver_failures: DriverFailures,
}

impl WorkerTotals {
    /// The totals of a driver's report.
    pub fn of(run: i64, report: &crate::load::LoadReport) -> Self {
        WorkerTotals {
            run,
            endpoints: report
                .endpoints
                .iter()
                .enumerate()
                .map(|(endpoint, report)| WorkerEndpoint {
                    endpoint,
                    outcomes: report.stats.outcomes,
                    histograms: histograms_of(&report.stats),
                })
                .collect(),
            tasks: report.tasks.iter().map(|(_, count)| *count).collect(),
            measured_ms: u64::try_from(report.measured.as_millis()).unwrap_or(u64::MAX),
            driver_failures: report.driver_failures.clone(),
        }
    }

    /// Checks the totals have one entry per endpoint and per task, each once.
    pub fn check(&self, endpoints: usize, tasks: usize) -> Result<(), String> {
        if self.tasks.len() != tasks {
            return Err(format!(
                "{} task counts for {tasks} tasks",
                self.tasks.len()
            ));
        }
        if self.endpoints.len() != endpoints {
            return Err(format!(
                "{} endpoint totals for {endpoints} endpoints",
                self.endpoints.len()
            ));
        }
        check_endpoints(self.endpoints.iter().map(|e| e.endpoint), endpoints)
    }
}

/// An endpoint's three histograms as sent.
pub fn histograms_of(stats: &EndpointStats) -> Histograms {
    Histograms {
        latency: serialize_histogram(&stats.latency),
        latency_ok: serialize_histogram(&stats.latency_ok),
        latency_failed: serialize_histogram(&stats.latency_failed),
    }
}

fn check_endpoints(indices: impl Iterator<Item = usize>, endpoints: usize) -> Result<(), String> {
    let mut seen = vec![false; endpoints];
    for index in indices {
        match seen.get_mut(index) {
            None => {
                return Err(format!(
                    "endpoint {index} is not one of the workload's {endpoints}"
                ));
            }
            Some(true) => return Err(format!("endpoint {index} is given twice")),
            Some(slot) => *slot = true,
        }
    }
    Ok(())
}
