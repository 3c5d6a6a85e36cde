//! Per-run metrics, computed from the rows storage keeps for one finished run.
//!
//! The measured window is what follows the warmup: `warmup_ms` to `warmup_ms + duration_ms` after the
//! load started. Per-second rows are placed in it by their second (the load driver's seconds count
//! from the load's start; seconds before `ceil(warmup)` are warmup, as the recorder marks them).
//! Breaker transitions carry wall-clock times, so they are placed by `started_at_ms + warmup_ms`:
//! this assumes a run's `started_at_ms` is when its load started.
//!
//! The "first and last fifth" of the window are the measured seconds whose midpoint lies in the
//! first or last fifth of the measured duration.

use std::collections::BTreeMap;

use breaker::State;
use hdrhistogram::Histogram;
use serde::Serialize;

use super::error::StatsError;
use crate::load::{deserialize_histogram, new_histogram};
use crate::metric::{MetricKey, MetricName, cart_view_endpoint, checkout_endpoint};
use crate::store::{
    EndpointHistogramRow, EndpointSecondRow, EnergySource, RunId, RunRow, SampleRow,
    TransitionRecord,
};

/// At most this many time bins per run in the cart-over-time timeline.
pub const TIMELINE_BINS: usize = 30;

/// Everything storage holds about one run that the metrics need.
#[derive(Debug, Clone)]
pub struct RunData {
    pub run: RunRow,
    pub samples: Vec<SampleRow>,
    pub endpoint_seconds: Vec<EndpointSecondRow>,
    pub endpoint_histograms: Vec<EndpointHistogramRow>,
    pub transitions: Vec<TransitionRecord>,
    /// The agents' probes per 10 ms bucket over the run (its `probes:buckets` event), if they were read.
    pub probe_buckets: Option<Vec<(i64, u64)>>,
}

/// One slice of a run's measured window: mean cart size and mean `GET /cart` latency in it (a condition's
/// timeline holds the same slices averaged over its runs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimelineBin {
    /// Seconds from the start of the measured window to the start / end of the bin.
    pub start_s: f64,
    pub end_s: f64,
    pub cart_items: Option<f64>,
    pub cart_latency_ms: Option<f64>,
}

/// The figures of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunMetrics {
    pub run_id: RunId,
    pub round: i64,
    pub condition_index: i64,
    /// Every metric the run's rows allowed computing.
    #[serde(serialize_with = "serialize_values")]
    pub values: BTreeMap<MetricKey, f64>,
    pub timeline: Vec<TimelineBin>,
    pub energy_source: Option<EnergySource>,
}

impl RunMetrics {
    pub fn get(&self, key: &MetricKey) -> Option<f64> {
        self.values.get(key).copied()
    }
}

/// Metric values as a list of `{metric, endpoint?, value}` (JSON objects need string keys).
fn serialize_values<S: serde::Serializer>(
    values: &BTreeMap<MetricKey, f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Entry<'a> {
        #[serde(flatten)]
        key: &'a MetricKey,
        value: f64,
    }
    serializer.collect_seq(values.iter().map(|(key, &value)| Entry { key, value }))
}

/// Where a second lies in the measured window.
#[derive(Debug, Clone, Copy)]
struct Window {
    warmup_s: i64,
    duration_s: f64,
}

impl Window {
    fn of(run: &RunRow) -> Window {
        let warmup_ms = run.warmup_ms.max(0);
        Window {
            // The recorder marks a second warmup while it starts before the warmup ends.
            warmup_s: (warmup_ms + 999) / 1000,
            duration_s: measured_seconds(run),
        }
    }

    /// Midpoint of `second` relative to the measured window's start, if the second is measured.
    fn midpoint(&self, second: i64) -> Option<f64> {
        let midpoint = (second - self.warmup_s) as f64 + 0.5;
        (midpoint > 0.0 && midpoint < self.duration_s.ceil()).then_some(midpoint)
    }

    fn first_fifth(&self, second: i64) -> bool {
        self.midpoint(second)
            .is_some_and(|m| m < self.duration_s / 5.0)
    }

    fn last_fifth(&self, second: i64) -> bool {
        self.midpoint(second)
            .is_some_and(|m| m > self.duration_s * 4.0 / 5.0)
    }

    fn bins(&self) -> usize {
        (self.duration_s.ceil() as usize).clamp(1, TIMELINE_BINS)
    }

    fn bin(&self, second: i64) -> Option<usize> {
        let midpoint = self.midpoint(second)?;
        let bins = self.bins();
        let bin = (midpoint / self.duration_s.max(f64::MIN_POSITIVE) * bins as f64) as usize;
        Some(bin.min(bins - 1))
    }
}

/// Seconds of a run's measured window.
pub(super) fn measured_seconds(run: &RunRow) -> f64 {
    run.duration_ms.max(0) as f64 / 1000.0
}

/// `count` per second of `run`'s measured window (`None` for a window of no length).
pub(super) fn per_measured_second(run: &RunRow, count: u64) -> Option<f64> {
    let seconds = measured_seconds(run);
    (seconds > 0.0).then(|| count as f64 / seconds)
}

fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values
        .into_iter()
        .fold((0.0, 0usize), |(sum, count), v| (sum + v, count + 1));
    (count > 0).then(|| sum / count as f64)
}

/// Computes a run's metrics from its rows.
pub fn run_metrics(data: &RunData) -> Result<RunMetrics, StatsError> {
    let run = &data.run;
    let window = Window::of(run);
    let mut values = BTreeMap::new();
    let mut put = |key: MetricKey, value: Option<f64>| {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            values.insert(key, value);
        }
    };

    let measured_s = window.duration_s;
    if let Some(outcomes) = &run.outcomes {
        put(
            MetricKey::run(MetricName::Availability),
            outcomes.availability(),
        );
        put(
            MetricKey::run(MetricName::ThroughputOk),
            (measured_s > 0.0).then(|| outcomes.ok as f64 / measured_s),
        );
        put(
            MetricKey::run(MetricName::Rejected),
            Some(outcomes.rejected as f64),
        );
        if let Some((joules, _)) = run.energy {
            put(MetricKey::run(MetricName::EnergyJ), Some(joules));
            put(
                MetricKey::run(MetricName::PowerW),
                (measured_s > 0.0).then(|| joules / measured_s),
            );
            put(
                MetricKey::run(MetricName::EnergyPerOkJ),
                (outcomes.ok > 0).then(|| joules / outcomes.ok as f64),
            );
        }
    }

    for row in &data.endpoint_histograms {
        put(
            MetricKey::endpoint(MetricName::FailureRate, row.endpoint.clone()),
            row.outcomes.availability().map(|ok| 1.0 - ok),
        );
        if row.endpoint == checkout_endpoint() {
            put(
                MetricKey::run(MetricName::CheckoutFailure),
                row.outcomes.availability().map(|ok| 1.0 - ok),
            );
            put(
                MetricKey::run(MetricName::CheckoutRate),
                per_measured_second(run, row.outcomes.total()),
            );
        }
        let histogram = histogram_of(run.id, &row.endpoint, &row.histogram_v2)?;
        if histogram.is_empty() {
            continue;
        }
        // Successful requests apart from the rest: every request is in `histogram` and the ok ones also
        // in `histogram_ok`, so the others are the difference.
        let ok = histogram_of(run.id, &row.endpoint, &row.histogram_ok_v2)?;
        let mut not_ok = histogram.clone();
        not_ok.subtract(&ok).map_err(|error| {
            histogram_error(
                run.id,
                &row.endpoint,
                format!("ok latencies are not a part of all latencies: {error:?}"),
            )
        })?;
        for (metric, part) in [
            (MetricName::P95OkMs, &ok),
            (MetricName::P95FailedMs, &not_ok),
        ] {
            put(
                MetricKey::endpoint(metric, row.endpoint.clone()),
                (!part.is_empty()).then(|| part.value_at_quantile(0.95) as f64 / 1000.0),
            );
        }
        for (metric, quantile) in [
            (MetricName::P50Ms, 0.50),
            (MetricName::P95Ms, 0.95),
            (MetricName::P99Ms, 0.99),
        ] {
            put(
                MetricKey::endpoint(metric, row.endpoint.clone()),
                Some(histogram.value_at_quantile(quantile) as f64 / 1000.0),
            );
        }
    }

    if let Some(start_ms) = run.started_at_ms {
        let from_ms = start_ms + run.warmup_ms.max(0);
        let to_ms = from_ms + run.duration_ms.max(0);
        if let Some(buckets) = &data.probe_buckets {
            put(
                MetricKey::run(MetricName::ProbesPeakPer10ms),
                Some(super::probes::peak_per_bucket(buckets, from_ms, to_ms) as f64),
            );
            put(
                MetricKey::run(MetricName::ProbesPeakPerSExact),
                Some(super::probes::peak_per_second(buckets, from_ms, to_ms) as f64),
            );
        }
        // Per breaker, and the run's figure as the sum of the same per-breaker figures.
        let per_breaker = per_breaker_time_open(&data.transitions, from_ms, to_ms);
        for (breaker, &(opens, open_ms)) in &per_breaker {
            put(
                MetricKey::breaker(MetricName::BreakerOpens, breaker.clone()),
                Some(opens as f64),
            );
            put(
                MetricKey::breaker(MetricName::TimeOpenS, breaker.clone()),
                Some(open_ms as f64 / 1000.0),
            );
        }
        let (opens, open_ms) = per_breaker
            .values()
            .fold((0, 0), |(o, ms), &(opens, open_ms)| {
                (o + opens, ms + open_ms)
            });
        put(MetricKey::run(MetricName::BreakerOpens), Some(opens as f64));
        for (breaker, rejected) in super::rejected::rejected_per_breaker(&data.samples, |second| {
            window.midpoint(second).is_some()
        }) {
            put(
                MetricKey::breaker(MetricName::Rejected, breaker),
                Some(rejected),
            );
        }
        put(
            MetricKey::run(MetricName::TimeOpenS),
            Some(open_ms as f64 / 1000.0),
        );
    }

    let measured = |second| window.midpoint(second).is_some();
    for (breaker, ms) in super::served::dependency_mean_ms(&data.samples, measured) {
        put(
            MetricKey::breaker(MetricName::DependencyMeanMs, breaker),
            Some(ms),
        );
    }

    let probes = probes_per_second(&data.samples, &window);
    put(
        MetricKey::run(MetricName::ProbesPeakPerS),
        probes.iter().copied().reduce(f64::max),
    );
    put(
        MetricKey::run(MetricName::ProbesMeanPerS),
        mean(probes.iter().copied()),
    );

    let cart_items = |in_part: &dyn Fn(i64) -> bool| {
        mean(
            data.samples
                .iter()
                .filter(|sample| in_part(sample.second))
                .filter_map(|sample| sample.collector.cart_mean_items),
        )
    };
    put(
        MetricKey::run(MetricName::CartItemsStart),
        cart_items(&|s| window.first_fifth(s)),
    );
    put(
        MetricKey::run(MetricName::CartItemsEnd),
        cart_items(&|s| window.last_fifth(s)),
    );

    let cart_seconds: Vec<&EndpointSecondRow> = data
        .endpoint_seconds
        .iter()
        .filter(|row| row.endpoint == cart_view_endpoint())
        .collect();
    let cart_latency = |in_part: &dyn Fn(i64) -> bool| -> Result<Option<f64>, StatsError> {
        let mut merged = new_histogram();
        for row in cart_seconds.iter().filter(|row| in_part(row.second)) {
            add_second(&mut merged, run.id, row)?;
        }
        Ok((!merged.is_empty()).then(|| merged.mean() / 1000.0))
    };
    put(
        MetricKey::run(MetricName::CartLatencyStartMs),
        cart_latency(&|s| window.first_fifth(s))?,
    );
    put(
        MetricKey::run(MetricName::CartLatencyEndMs),
        cart_latency(&|s| window.last_fifth(s))?,
    );

    let timeline = timeline(run.id, &window, &data.samples, &cart_seconds)?;

    Ok(RunMetrics {
        run_id: run.id,
        round: run.round_index,
        condition_index: run.condition_index,
        values,
        timeline,
        energy_source: run.energy.map(|(_, source)| source),
    })
}

/// The agent's probe counter in the services' `/metrics` as the sampler stored it.
const PROBES_SERIES: &str = "tolerant_agent_probes_total";

/// Probes that reached the agent in each measured second: the increase of [`PROBES_SERIES`] (summed over every
/// sampled service that exports it) from one sample to the next, where the two samples are consecutive seconds
/// and the counter did not go back (an agent restarted). Empty when no sample carries the counter.
fn probes_per_second(samples: &[SampleRow], window: &Window) -> Vec<f64> {
    let total = |sample: &SampleRow| -> Option<f64> {
        let metrics = sample
            .collector
            .extra
            .as_ref()?
            .get("metrics")?
            .as_object()?;
        let counters: Vec<f64> = metrics
            .values()
            .filter_map(|series| series.get(PROBES_SERIES)?.as_f64())
            .collect();
        (!counters.is_empty()).then(|| counters.iter().sum())
    };
    let mut ordered: Vec<&SampleRow> = samples.iter().collect();
    ordered.sort_by_key(|sample| sample.second);
    ordered
        .windows(2)
        .filter(|pair| pair[1].second == pair[0].second + 1)
        .filter(|pair| window.midpoint(pair[1].second).is_some())
        .filter_map(|pair| Some(total(pair[1])? - total(pair[0])?))
        .filter(|increase| *increase >= 0.0)
        .collect()
}

fn histogram_error(run: RunId, endpoint: &str, message: String) -> StatsError {
    StatsError::Histogram {
        run,
        endpoint: endpoint.to_owned(),
        message,
    }
}

fn histogram_of(run: RunId, endpoint: &str, bytes: &[u8]) -> Result<Histogram<u64>, StatsError> {
    deserialize_histogram(bytes).map_err(|error| histogram_error(run, endpoint, error.to_string()))
}

/// Adds a stored second's latency histogram into `merged`.
fn add_second(
    merged: &mut Histogram<u64>,
    run: RunId,
    row: &EndpointSecondRow,
) -> Result<(), StatsError> {
    let histogram = histogram_of(run, &row.endpoint, &row.histogram_v2)?;
    merged
        .add(&histogram)
        .map_err(|error| histogram_error(run, &row.endpoint, format!("{error:?}")))
}

fn timeline(
    run: RunId,
    window: &Window,
    samples: &[SampleRow],
    cart_seconds: &[&EndpointSecondRow],
) -> Result<Vec<TimelineBin>, StatsError> {
    let bins = window.bins();
    let mut items: Vec<Vec<f64>> = vec![Vec::new(); bins];
    for sample in samples {
        if let (Some(bin), Some(value)) =
            (window.bin(sample.second), sample.collector.cart_mean_items)
        {
            items[bin].push(value);
        }
    }
    let mut latency: Vec<Histogram<u64>> = (0..bins).map(|_| new_histogram()).collect();
    for row in cart_seconds {
        if let Some(bin) = window.bin(row.second) {
            add_second(&mut latency[bin], run, row)?;
        }
    }
    let width = window.duration_s / bins as f64;
    Ok((0..bins)
        .map(|bin| TimelineBin {
            start_s: bin as f64 * width,
            end_s: (bin + 1) as f64 * width,
            cart_items: mean(items[bin].iter().copied()),
            cart_latency_ms: (!latency[bin].is_empty()).then(|| latency[bin].mean() / 1000.0),
        })
        .collect())
}

/// Opens (transitions to `open`) in `[from_ms, to_ms)` and the milliseconds breakers spent open
/// in it, summed over breakers: the sum of [`per_breaker_time_open`].
pub fn breaker_time_open(transitions: &[TransitionRecord], from_ms: i64, to_ms: i64) -> (u64, i64) {
    per_breaker_time_open(transitions, from_ms, to_ms)
        .values()
        .fold((0, 0), |(o, ms), &(opens, open_ms)| {
            (o + opens, ms + open_ms)
        })
}

/// The name a breaker's figures are kept under: a further replica's breaker (`checkout#2->payment`, as its
/// transitions are stored) under its service's (`checkout->payment`), so a scaled service's opens and time open
/// sum its replicas', as its rejections (one `/metrics` series per replica, summed) and its predictions do.
pub fn service_breaker_name(breaker: &str) -> String {
    match breaker.split_once("->") {
        Some((caller, dependency)) => match crate::target::split_replica(caller) {
            Some((service, _)) => format!("{service}->{dependency}"),
            None => breaker.to_owned(),
        },
        None => breaker.to_owned(),
    }
}

/// Per breaker name (`caller->dependency`, replicas under their service's: [`service_breaker_name`]): opens in
/// `[from_ms, to_ms)` and milliseconds open in it. A breaker instance is its service and name (each replica's
/// are its own); a name's figures sum its instances'. An instance's state when the window starts is the target
/// of its last earlier transition (closed if it has none).
pub fn per_breaker_time_open(
    transitions: &[TransitionRecord],
    from_ms: i64,
    to_ms: i64,
) -> BTreeMap<String, (u64, i64)> {
    let mut by_breaker: BTreeMap<(&str, &str), Vec<&TransitionRecord>> = BTreeMap::new();
    for transition in transitions {
        by_breaker
            .entry((transition.service.as_str(), transition.breaker.as_str()))
            .or_default()
            .push(transition);
    }
    let mut figures: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    for ((_, name), mut list) in by_breaker {
        let (opens, open_ms) = figures.entry(service_breaker_name(name)).or_default();
        list.sort_by_key(|t| (t.at_ms, t.seq));
        let mut open_since = None;
        for transition in list {
            let at = transition.at_ms.clamp(from_ms, to_ms);
            if transition.at_ms >= from_ms
                && transition.at_ms < to_ms
                && transition.to == State::Open
            {
                *opens += 1;
            }
            if transition.at_ms >= to_ms {
                break;
            }
            match (open_since, transition.to == State::Open) {
                (None, true) => open_since = Some(at),
                (Some(since), false) => {
                    *open_ms += at - since;
                    open_since = None;
                }
                _ => {}
            }
        }
        if let Some(since) = open_since {
            *open_ms += to_ms - since;
        }
    }
    figures
}
