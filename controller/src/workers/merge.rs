//! The run's seconds and totals from its workers' records, exactly: a merged second's counts are the sum of the
//! workers' and its histograms the HDR sum of theirs (the same buckets, so the merged p95 is the p95 of one
//! histogram of every worker's samples), compacted as the one-process driver compacts its own seconds.
//!
//! A second closes once every worker of the run has sent it, ended, or was lost. A lost worker's users are
//! missing from the second after the last one it sent to the end of the run ([`LostShare`]); what it had in
//! flight never reached a closed second of its own and is not counted. Its part of the totals is what its
//! measured seconds held (a finished worker sends its own totals, which also cut a warmup that ends inside a
//! second exactly; a lost one's measured seconds begin at the first whole second after the warmup).
//!
//! Pure: no clock, no I/O. The drive feeds it what the connections bring.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::wire::{WorkerEndpoint, WorkerSecond, WorkerTotals};
use crate::load::{
    DriverFailures, EndpointReport, EndpointSecond, EndpointStats, LoadReport, SecondStats,
};

/// A worker that was lost mid-run and the users missing because of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostShare {
    pub worker: String,
    pub users: u32,
    /// The seconds `from_second .. to_second` lack its users.
    pub from_second: u64,
    pub to_second: u64,
}

/// One worker's part of a run: its users, the requests its part of the run's totals holds (the measured part:
/// its own totals, or a lost worker's measured seconds) and the requests of every second it sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerShare {
    pub worker: String,
    pub users: u32,
    pub requests: u64,
    pub in_seconds: u64,
}

/// What one worker has brought so far.
#[derive(Debug)]
struct WorkerState {
    name: String,
    users: u32,
    requests: u64,
    in_seconds: u64,
    /// The last second it sent.
    last_second: Option<u64>,
    /// Its measured seconds summed (kept only until its own totals arrive), per endpoint.
    measured: Vec<Option<EndpointStats>>,
    ended: End,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Running,
    Done,
    Lost,
}

/// The merge of one run's workers; see the module documentation.
#[derive(Debug)]
pub struct Merge {
    endpoint_names: Vec<String>,
    task_names: Vec<String>,
    warmup_seconds: u64,
    workers: Vec<WorkerState>,
    /// Seconds some worker sent that have not closed yet, per endpoint.
    open: BTreeMap<u64, Vec<Option<EndpointStats>>>,
    /// The next second to close.
    next: u64,
    totals: Vec<EndpointStats>,
    tasks: Vec<u64>,
    driver_failures: DriverFailures,
    measured: Duration,
}

impl Merge {
    /// A merge of the workers `(name, users)` of a run of a workload with these endpoint and task names.
    pub fn new(
        endpoint_names: Vec<String>,
        task_names: Vec<String>,
        warmup: Duration,
        workers: &[(String, u32)],
    ) -> Self {
        let endpoints = endpoint_names.len();
        Merge {
            warmup_seconds: warmup.as_secs() + u64::from(warmup.subsec_nanos() > 0),
            workers: workers
                .iter()
                .map(|(name, users)| WorkerState {
                    name: name.clone(),
                    users: *users,
                    requests: 0,
                    in_seconds: 0,
                    last_second: None,
                    measured: (0..endpoints).map(|_| None).collect(),
                    ended: End::Running,
                })
                .collect(),
            open: BTreeMap::new(),
            next: 0,
            totals: (0..endpoints).map(|_| EndpointStats::default()).collect(),
            tasks: vec![0; task_names.len()],
            endpoint_names,
            task_names,
            driver_failures: DriverFailures::default(),
            measured: Duration::ZERO,
        }
    }

    /// Worker `worker`'s second; returns the seconds that closed with it. An error (a second out of order, not
    /// of the workload, a histogram that is not the crate's) says what was wrong; nothing of it is merged.
    pub fn second(
        &mut self,
        worker: usize,
        second: &WorkerSecond,
        last_second: u64,
    ) -> Result<Vec<SecondStats>, String> {
        let endpoints = self.endpoint_names.len();
        second.check(endpoints, last_second)?;
        let state = &self.workers[worker];
        if state.ended != End::Running {
            return Err("a second after its end".to_owned());
        }
        if state.last_second.is_some_and(|last| second.second <= last) || second.second < self.next
        {
            return Err(format!("second {} out of order", second.second));
        }
        let read = read_all(&second.endpoints)?;
        let measured = second.second >= self.warmup_seconds;
        let open = self
            .open
            .entry(second.second)
            .or_insert_with(|| (0..endpoints).map(|_| None).collect());
        for (endpoint, histograms) in second.endpoints.iter().zip(&read) {
            add(&mut open[endpoint.endpoint], endpoint, histograms);
            if measured {
                add(
                    &mut self.workers[worker].measured[endpoint.endpoint],
                    endpoint,
                    histograms,
                );
            }
        }
        let state = &mut self.workers[worker];
        state.last_second = Some(second.second);
        state.in_seconds += (second.endpoints.iter())
            .map(|e| e.outcomes.total())
            .sum::<u64>();
        Ok(self.close_ready())
    }

    /// Worker `worker`'s totals: its share of the load ended. Returns the seconds that closed with it.
    pub fn done(
        &mut self,
        worker: usize,
        totals: &WorkerTotals,
    ) -> Result<Vec<SecondStats>, String> {
        totals.check(self.endpoint_names.len(), self.task_names.len())?;
        if self.workers[worker].ended != End::Running {
            return Err("totals after its end".to_owned());
        }
        let read = read_all(&totals.endpoints)?;
        for (endpoint, histograms) in totals.endpoints.iter().zip(&read) {
            let mut total = Some(std::mem::take(&mut self.totals[endpoint.endpoint]));
            add(&mut total, endpoint, histograms);
            self.totals[endpoint.endpoint] = total.unwrap_or_default();
        }
        for (sum, count) in self.tasks.iter_mut().zip(&totals.tasks) {
            *sum = sum.saturating_add(*count);
        }
        self.driver_failures.count =
            (self.driver_failures.count).saturating_add(totals.driver_failures.count);
        if self.driver_failures.first.is_none() {
            self.driver_failures.first = totals.driver_failures.first.clone();
        }
        self.measured = self.measured.max(Duration::from_millis(totals.measured_ms));
        let state = &mut self.workers[worker];
        state.requests = (totals.endpoints.iter()).map(|e| e.outcomes.total()).sum();
        state.ended = End::Done;
        state.measured.clear();
        Ok(self.close_ready())
    }

    /// Worker `worker` is gone: its measured seconds become its part of the totals. Returns the seconds that
    /// closed with it (nothing when it had already ended).
    pub fn lost(&mut self, worker: usize) -> Vec<SecondStats> {
        let state = &mut self.workers[worker];
        if state.ended != End::Running {
            return Vec::new();
        }
        state.ended = End::Lost;
        let measured = std::mem::take(&mut state.measured);
        state.requests = (measured.iter().flatten())
            .map(|part| part.outcomes.total())
            .sum();
        for (total, part) in self.totals.iter_mut().zip(measured) {
            if let Some(part) = part {
                merge_stats(total, &part);
            }
        }
        self.close_ready()
    }

    /// The workers that were lost, and which seconds lack their users in a run of `end_second` seconds.
    pub fn lost_shares(&self, end_second: u64) -> Vec<LostShare> {
        (0..self.workers.len())
            .filter_map(|worker| self.lost_share(worker, end_second))
            .collect()
    }

    /// Worker `worker`'s missing users in a run of `end_second` seconds, if it was lost.
    pub fn lost_share(&self, worker: usize, end_second: u64) -> Option<LostShare> {
        let state = self.workers.get(worker)?;
        (state.ended == End::Lost).then(|| LostShare {
            worker: state.name.clone(),
            users: state.users,
            from_second: state.last_second.map_or(0, |last| last + 1),
            to_second: end_second,
        })
    }

    /// Every worker's users and the requests its seconds held.
    pub fn shares(&self) -> Vec<WorkerShare> {
        (self.workers.iter())
            .map(|state| WorkerShare {
                worker: state.name.clone(),
                users: state.users,
                requests: state.requests,
                in_seconds: state.in_seconds,
            })
            .collect()
    }

    /// The workers still running.
    pub fn running(&self) -> impl Iterator<Item = usize> + '_ {
        (self.workers.iter().enumerate())
            .filter(|(_, state)| state.ended == End::Running)
            .map(|(index, _)| index)
    }

    /// Ends the merge: every worker still running is lost, every open second closes up to `end_second`
    /// (exclusive). Returns those seconds, the run's report (its seconds empty: they went out as they closed)
    /// and the lost shares.
    pub fn finish(
        mut self,
        end_second: u64,
    ) -> (
        Vec<SecondStats>,
        LoadReport,
        Vec<LostShare>,
        Vec<WorkerShare>,
    ) {
        let mut closed = Vec::new();
        for worker in 0..self.workers.len() {
            closed.extend(self.lost(worker));
        }
        while self.next < end_second || !self.open.is_empty() {
            closed.push(self.close_next());
        }
        let lost = self.lost_shares(end_second.max(self.next));
        let shares = self.shares();
        let report = LoadReport {
            endpoints: (self.endpoint_names.into_iter())
                .zip(self.totals)
                .map(|(name, stats)| EndpointReport { name, stats })
                .collect(),
            seconds: Vec::new(),
            tasks: self.task_names.into_iter().zip(self.tasks).collect(),
            measured: self.measured,
            driver_failures: self.driver_failures,
        };
        (closed, report, lost, shares)
    }

    /// Closes every second every running worker has sent.
    fn close_ready(&mut self) -> Vec<SecondStats> {
        let mut closed = Vec::new();
        loop {
            let next = self.next;
            let sent_by_all = self.workers.iter().all(|state| {
                state.ended != End::Running || state.last_second.is_some_and(|last| last >= next)
            });
            let any_open = self.open.range(next..).next().is_some();
            let all_ended = self.workers.iter().all(|state| state.ended != End::Running);
            // Once every worker ended, only what some worker sent is left to close.
            if !sent_by_all || (all_ended && !any_open) {
                return closed;
            }
            closed.push(self.close_next());
        }
    }

    fn close_next(&mut self) -> SecondStats {
        let second = self.next;
        self.next += 1;
        let merged = self.open.remove(&second).unwrap_or_default();
        SecondStats {
            second,
            warmup: second < self.warmup_seconds,
            endpoints: merged
                .into_iter()
                .enumerate()
                .filter_map(|(endpoint, stats)| {
                    let stats = stats?;
                    (stats.outcomes.total() > 0)
                        .then(|| EndpointSecond::of(endpoint, &stats, false))
                })
                .collect(),
        }
    }
}

fn read_all(endpoints: &[WorkerEndpoint]) -> Result<Vec<[Histogram<u64>; 3]>, String> {
    endpoints
        .iter()
        .map(|endpoint| {
            let read = endpoint.histograms.read()?;
            // The counts are the histograms' own: a record whose counts and histogram disagree is not merged.
            if read[0].len() < endpoint.outcomes.total() {
                return Err(format!(
                    "endpoint {}: {} requests but {} latencies",
                    endpoint.endpoint,
                    endpoint.outcomes.total(),
                    read[0].len()
                ));
            }
            Ok(read)
        })
        .collect()
}

/// Adds one endpoint's record to `into` (made on first use).
fn add(into: &mut Option<EndpointStats>, endpoint: &WorkerEndpoint, read: &[Histogram<u64>; 3]) {
    let stats = into.get_or_insert_with(EndpointStats::default);
    stats.outcomes.merge(&endpoint.outcomes);
    let [all, ok, failed] = read;
    // Same bounds (checked from the header before reading), so adding cannot fail.
    let _ = stats.latency.add(all);
    let _ = stats.latency_ok.add(ok);
    let _ = stats.latency_failed.add(failed);
}

fn merge_stats(into: &mut EndpointStats, part: &EndpointStats) {
    into.outcomes.merge(&part.outcomes);
    let _ = into.latency.add(&part.latency);
    let _ = into.latency_ok.add(&part.latency_ok);
    let _ = into.latency_failed.add(&part.latency_failed);
}

#[cfg(test)]
mod tests;
