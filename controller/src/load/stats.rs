//! Per-endpoint latency histograms (HDR) and outcome counts, per second and per run.
//!
//! Every completed request is recorded once into the run's [`Recorder`] (owned by the run loop, fed once a
//! second from the users' own logs, see `user_log`): into the histogram of the second it completed in and,
//! past the warmup, into the run's totals. A second that has closed is
//! compacted at once (summary percentiles plus the histogram serialised in HDR's V2 format, a few
//! hundred bytes) and the live histogram reused, so a 30-minute run holds 1 800 small records rather
//! than 1 800 full histograms.

use std::time::Duration;

use hdrhistogram::Histogram;
use hdrhistogram::serialization::{DeserializeError, Deserializer, Serializer, V2Serializer};
use serde::Serialize;

use super::outcome::{OutcomeCounts, RequestOutcome};

/// Highest latency a histogram holds, in microseconds (one hour); larger values are clamped.
pub const MAX_LATENCY_US: u64 = 3_600_000_000;
/// Significant decimal digits every histogram keeps (0.1 % value resolution).
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency histogram in microseconds with the crate's bounds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, SIGNIFICANT_DIGITS)
        .expect("constant histogram bounds are valid")
}

/// Latency in whole microseconds, clamped to the histogram's range.
pub fn latency_us(latency: Duration) -> u64 {
    u64::try_from(latency.as_micros())
        .unwrap_or(u64::MAX)
        .min(MAX_LATENCY_US)
}

/// Serialises a histogram in HDR's V2 format (plain, not deflated).
pub fn serialize_histogram(histogram: &Histogram<u64>) -> Vec<u8> {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(histogram, &mut bytes)
        .expect("serialising into a Vec cannot fail");
    bytes
}

/// Reads a histogram written by [`serialize_histogram`] (or any V2 / V2-deflate encoder).
pub fn deserialize_histogram(bytes: &[u8]) -> Result<Histogram<u64>, DeserializeError> {
    Deserializer::new().deserialize(&mut &bytes[..])
}

/// What every histogram [`serialize_histogram`] writes begins with: HDR's plain V2 cookie, the payload's
/// length, the normalising offset, the significant digits, the lowest and highest values, the ratio.
pub const HISTOGRAM_HEADER: usize = 40;
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;

/// Checks that `bytes` hold a plain V2 histogram with exactly this crate's bounds and nothing after it, before
/// anything is allocated for it (a header with other bounds would make the reader allocate what it says).
pub fn check_histogram_header(bytes: &[u8]) -> Result<(), String> {
    let word = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    let long = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if bytes.len() < HISTOGRAM_HEADER {
        return Err(format!(
            "{} bytes are shorter than a histogram's header",
            bytes.len()
        ));
    }
    if word(0) != V2_COOKIE {
        return Err("not a plain HDR V2 histogram".to_owned());
    }
    if word(4) as usize != bytes.len() - HISTOGRAM_HEADER {
        return Err("the histogram's length is not the length given".to_owned());
    }
    let reference = new_histogram();
    if word(12) != u32::from(SIGNIFICANT_DIGITS)
        || long(16) != reference.low()
        || long(24) != reference.high()
    {
        return Err(format!(
            "the histogram's bounds are not 1 ..= {MAX_LATENCY_US} µs at {SIGNIFICANT_DIGITS} digits"
        ));
    }
    Ok(())
}

/// Latency percentiles of a histogram, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
}

impl LatencySummary {
    pub fn of(histogram: &Histogram<u64>) -> Self {
        if histogram.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            count: histogram.len(),
            p50_us: histogram.value_at_quantile(0.50),
            p95_us: histogram.value_at_quantile(0.95),
            p99_us: histogram.value_at_quantile(0.99),
            max_us: histogram.max(),
            mean_us: histogram.mean(),
        }
    }
}

/// One endpoint's live figures: outcome counts and the latency of every completed request.
#[derive(Debug, Clone)]
pub struct EndpointStats {
    pub outcomes: OutcomeCounts,
    /// Latency of every request, whatever its outcome (timeouts at the time they were given up).
    pub latency: Histogram<u64>,
    /// Latency of the requests whose outcome was `ok`.
    pub latency_ok: Histogram<u64>,
    /// Latency of the requests that were not `ok` (failed, rejected, timed out, …): a fast rejection
    /// is kept apart from the successes' latency.
    pub latency_failed: Histogram<u64>,
}

impl Default for EndpointStats {
    fn default() -> Self {
        EndpointStats {
            outcomes: OutcomeCounts::default(),
            latency: new_histogram(),
            latency_ok: new_histogram(),
            latency_failed: new_histogram(),
        }
    }
}

impl EndpointStats {
    /// Records one request. `expected_interval_us` (open model) back-fills the samples a stalled
    /// request hid (coordinated-omission correction, `record_correct`); `0` records the value alone.
    pub fn record(&mut self, outcome: RequestOutcome, latency_us: u64, expected_interval_us: u64) {
        self.outcomes.add(outcome);
        let value = latency_us.min(MAX_LATENCY_US);
        // Bounds are fixed and the value clamped, so recording cannot fail.
        let _ = self.latency.record_correct(value, expected_interval_us);
        if outcome == RequestOutcome::Ok {
            let _ = self.latency_ok.record_correct(value, expected_interval_us);
        } else {
            let _ = self
                .latency_failed
                .record_correct(value, expected_interval_us);
        }
    }

    pub fn reset(&mut self) {
        self.outcomes = OutcomeCounts::default();
        self.latency.reset();
        self.latency_ok.reset();
        self.latency_failed.reset();
    }
}

/// One endpoint in one closed second: counts, summary and the serialised histogram.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EndpointSecond {
    /// Index into the workload's endpoint names.
    pub endpoint: usize,
    pub outcomes: OutcomeCounts,
    pub latency: LatencySummary,
    /// Latency of the second's `ok` requests only.
    pub latency_ok: LatencySummary,
    /// Latency of the second's other requests (failed, rejected, timed out).
    pub latency_failed: LatencySummary,
    /// The second's latency histogram (all outcomes), HDR V2.
    #[serde(skip)]
    pub histogram_v2: Vec<u8>,
    /// The `ok` and the other requests' histograms too, HDR V2, when the recorder keeps them (a load worker's,
    /// whose seconds are merged with other workers' into the run's: [`Recorder::keep_outcome_histograms`]).
    #[serde(skip)]
    pub outcome_histograms_v2: Option<OutcomeHistograms>,
}

impl EndpointSecond {
    /// `stats` of `endpoint` as a closed second, with the `ok` and other requests' histograms when
    /// `keep_outcome_histograms` (a load worker's seconds, merged at the controller).
    pub fn of(endpoint: usize, stats: &EndpointStats, keep_outcome_histograms: bool) -> Self {
        EndpointSecond {
            endpoint,
            outcomes: stats.outcomes,
            latency: LatencySummary::of(&stats.latency),
            latency_ok: LatencySummary::of(&stats.latency_ok),
            latency_failed: LatencySummary::of(&stats.latency_failed),
            histogram_v2: serialize_histogram(&stats.latency),
            outcome_histograms_v2: keep_outcome_histograms.then(|| OutcomeHistograms {
                ok: serialize_histogram(&stats.latency_ok),
                failed: serialize_histogram(&stats.latency_failed),
            }),
        }
    }
}

/// A second's histograms of its `ok` and its other requests, HDR V2.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeHistograms {
    pub ok: Vec<u8>,
    pub failed: Vec<u8>,
}

/// Everything one second of a run saw.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SecondStats {
    /// Seconds since the run started (0-based); requests are placed by completion time.
    pub second: u64,
    /// Whether this second lies in the warmup (cut from every run figure).
    pub warmup: bool,
    /// Endpoints that completed at least one request in this second.
    pub endpoints: Vec<EndpointSecond>,
}

impl SecondStats {
    pub fn outcomes(&self) -> OutcomeCounts {
        let mut total = OutcomeCounts::default();
        for endpoint in &self.endpoints {
            total.merge(&endpoint.outcomes);
        }
        total
    }
}

/// Where closed seconds go.
pub type SecondSink = tokio::sync::mpsc::UnboundedSender<SecondStats>;

/// One run's per-second and total figures. The load driver's run loop owns it and records the users'
/// samples into it once a second ([`super::UserLogs::collect`]); no user ever waits on it.
pub struct Recorder {
    warmup_seconds: u64,
    warmup: Duration,
    current_second: u64,
    current: Vec<EndpointStats>,
    totals: Vec<EndpointStats>,
    closed: Vec<SecondStats>,
    sink: Option<SecondSink>,
    keep_outcome_histograms: bool,
}

impl Recorder {
    /// A recorder for `endpoints` endpoints; seconds before `warmup` are marked warmup and left out
    /// of the totals. Closed seconds go to `sink` if given, else they are kept for the report.
    pub fn new(endpoints: usize, warmup: Duration, sink: Option<SecondSink>) -> Self {
        Recorder {
            warmup_seconds: warmup.as_secs() + u64::from(warmup.subsec_nanos() > 0),
            warmup,
            current_second: 0,
            current: (0..endpoints).map(|_| EndpointStats::default()).collect(),
            totals: (0..endpoints).map(|_| EndpointStats::default()).collect(),
            closed: Vec::new(),
            sink,
            keep_outcome_histograms: false,
        }
    }

    /// Every closed second carries its `ok` and other requests' histograms as well
    /// ([`EndpointSecond::outcome_histograms_v2`]).
    pub fn keep_outcome_histograms(&mut self) {
        self.keep_outcome_histograms = true;
    }

    /// Records a request to `endpoint` that completed `since_start` after the run started.
    pub fn record(
        &mut self,
        endpoint: usize,
        since_start: Duration,
        outcome: RequestOutcome,
        latency: Duration,
        expected_interval: Duration,
    ) {
        let second = since_start.as_secs();
        self.advance_to(second);
        let latency_us = latency_us(latency);
        let interval_us = latency_us_of_interval(expected_interval);
        self.current[endpoint].record(outcome, latency_us, interval_us);
        if since_start >= self.warmup {
            self.totals[endpoint].record(outcome, latency_us, interval_us);
        }
    }

    /// Closes every second before `second` (a request from an older second lands in the current one).
    pub fn advance_to(&mut self, second: u64) {
        while self.current_second < second {
            self.close_current();
            self.current_second += 1;
        }
    }

    fn close_current(&mut self) {
        let keep = self.keep_outcome_histograms;
        let endpoints = self
            .current
            .iter_mut()
            .enumerate()
            .filter(|(_, stats)| stats.outcomes.total() > 0)
            .map(|(endpoint, stats)| {
                let second = EndpointSecond::of(endpoint, stats, keep);
                stats.reset();
                second
            })
            .collect();
        let second = SecondStats {
            second: self.current_second,
            warmup: self.current_second < self.warmup_seconds,
            endpoints,
        };
        match &self.sink {
            Some(sink) => {
                // A consumer that went away only loses the live feed; the totals stay complete.
                let _ = sink.send(second);
            }
            None => self.closed.push(second),
        }
    }

    /// Closes the seconds up to `end_second` (exclusive) and returns the kept seconds and totals.
    pub fn finish(mut self, end_second: u64) -> (Vec<SecondStats>, Vec<EndpointStats>) {
        self.advance_to(end_second);
        (self.closed, self.totals)
    }
}

fn latency_us_of_interval(interval: Duration) -> u64 {
    if interval.is_zero() {
        0
    } else {
        latency_us(interval).max(1)
    }
}
