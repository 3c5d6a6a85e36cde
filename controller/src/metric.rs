//! The metrics a run is measured by: names, units, and keys (a metric, per endpoint where it applies).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::load::endpoint;

/// One figure per run. Latency percentiles and the failure rate are per endpoint, some figures per breaker; the
/// rest per run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricName {
    /// ok / all requests of the measured window (a breaker rejection counts as a failure).
    Availability,
    /// Successful requests per second of the measured window.
    ThroughputOk,
    /// Requests a breaker rejected (the `x-tolerant-rejected` header).
    Rejected,
    /// Share of checkouts that did not succeed (observed checkout failure, 1 − ok / all).
    CheckoutFailure,
    /// Transitions to `open` in the measured window, every breaker counted (shadow ones too).
    BreakerOpens,
    /// Seconds breakers spent open in the measured window, summed over breakers.
    TimeOpenS,
    /// Median latency of one endpoint, milliseconds (all outcomes).
    P50Ms,
    /// 95th percentile latency of one endpoint, milliseconds (all outcomes).
    P95Ms,
    /// 99th percentile latency of one endpoint, milliseconds (all outcomes).
    P99Ms,
    /// 95th percentile latency of one endpoint's successful (`ok`) requests, milliseconds: the latency a
    /// user who got an answer waited, which a fast rejection cannot pull down.
    P95OkMs,
    /// 95th percentile latency of one endpoint's requests that did not succeed (failed, rejected, timed
    /// out), milliseconds.
    P95FailedMs,
    /// Mean items per cart in the first fifth of the measured window.
    CartItemsStart,
    /// Mean items per cart in the last fifth of the measured window.
    CartItemsEnd,
    /// Mean `GET /cart` latency in the first fifth of the measured window, milliseconds.
    CartLatencyStartMs,
    /// Mean `GET /cart` latency in the last fifth of the measured window, milliseconds.
    CartLatencyEndMs,
    /// Energy of the run (measured or modelled), joules.
    EnergyJ,
    /// Mean power over the run, watts (energy / measured seconds).
    PowerW,
    /// Energy per successful request, joules (computed per run, then averaged).
    EnergyPerOkJ,
    /// Most half-open probes reaching the fault agent's service in one sampled second of the measured window
    /// (`tolerant_agent_probes_total` of every sampled service): the probe storm's height.
    ProbesPeakPerS,
    /// Half-open probes reaching the fault agent's service per second, over the measured window.
    ProbesMeanPerS,
    /// Mean latency with which one breaker's dependency answered in the measured window (from the dependency's
    /// own `/metrics`: every request it served), milliseconds; per breaker only, never summed.
    DependencyMeanMs,
    /// Most half-open probes the fault agent counted in one 10 ms bucket of the measured window (its
    /// `GET /_agent/probes`, summed over agents): the storm's height at the agent's resolution. Its JSON name is
    /// its name everywhere else (snake case alone would write `probes_peak_per10ms`, which is still read).
    #[serde(rename = "probes_peak_per_10ms", alias = "probes_peak_per10ms")]
    ProbesPeakPer10ms,
    /// Most half-open probes the fault agent counted in any 1 s (100 consecutive 10 ms buckets) of the measured
    /// window, not only in the sampler's seconds.
    ProbesPeakPerSExact,
    /// Seconds from the fault's scheduled start to the first time a sampled worker pool was full (every worker
    /// taken), from the pool's own millisecond stamps; of the pool that filled first.
    PoolExhaustionS,
    /// Seconds that pool spent full in the measured window.
    PoolFullS,
    /// Times that pool became full in the measured window (each half-open that lets every caller through can
    /// fill it again).
    PoolFills,
    /// Requests refused by a full pool and its full queue (503) in the measured window, every sampled pool.
    PoolRefused,
    /// Sampled pools already full at the fault's scheduled start (filled by load, not by the fault).
    PoolsFullAtFault,
    /// Checkouts the load attempted per second of the measured window (every outcome, rejections too; with
    /// `[[load.tasks]]` its critical task's): the rate at which the modelled breaker is called, set beside the
    /// rate the prediction assumed.
    CheckoutRate,
    /// Share of one endpoint's requests that did not succeed in the measured window (failed, rejected, refused
    /// by a full pool, timed out): 1 − ok / all of that endpoint; shows an endpoint that never calls the faulty
    /// dependency failing all the same (a pool that fills refuses it too).
    FailureRate,
}

impl MetricName {
    pub const ALL: [MetricName; 30] = [
        MetricName::Availability,
        MetricName::ThroughputOk,
        MetricName::Rejected,
        MetricName::CheckoutFailure,
        MetricName::BreakerOpens,
        MetricName::TimeOpenS,
        MetricName::P50Ms,
        MetricName::P95Ms,
        MetricName::P99Ms,
        MetricName::P95OkMs,
        MetricName::P95FailedMs,
        MetricName::CartItemsStart,
        MetricName::CartItemsEnd,
        MetricName::CartLatencyStartMs,
        MetricName::CartLatencyEndMs,
        MetricName::EnergyJ,
        MetricName::PowerW,
        MetricName::EnergyPerOkJ,
        MetricName::ProbesPeakPerS,
        MetricName::ProbesMeanPerS,
        MetricName::DependencyMeanMs,
        MetricName::ProbesPeakPer10ms,
        MetricName::ProbesPeakPerSExact,
        MetricName::PoolExhaustionS,
        MetricName::PoolFullS,
        MetricName::PoolFills,
        MetricName::PoolRefused,
        MetricName::PoolsFullAtFault,
        MetricName::CheckoutRate,
        MetricName::FailureRate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MetricName::Availability => "availability",
            MetricName::ThroughputOk => "throughput_ok",
            MetricName::Rejected => "rejected",
            MetricName::CheckoutFailure => "checkout_failure",
            MetricName::BreakerOpens => "breaker_opens",
            MetricName::TimeOpenS => "time_open_s",
            MetricName::P50Ms => "p50_ms",
            MetricName::P95Ms => "p95_ms",
            MetricName::P99Ms => "p99_ms",
            MetricName::P95OkMs => "p95_ok_ms",
            MetricName::P95FailedMs => "p95_failed_ms",
            MetricName::CartItemsStart => "cart_items_start",
            MetricName::CartItemsEnd => "cart_items_end",
            MetricName::CartLatencyStartMs => "cart_latency_start_ms",
            MetricName::CartLatencyEndMs => "cart_latency_end_ms",
            MetricName::EnergyJ => "energy_j",
            MetricName::PowerW => "power_w",
            MetricName::EnergyPerOkJ => "energy_per_ok_j",
            MetricName::ProbesPeakPerS => "probes_peak_per_s",
            MetricName::ProbesMeanPerS => "probes_mean_per_s",
            MetricName::DependencyMeanMs => "dependency_mean_ms",
            MetricName::ProbesPeakPer10ms => "probes_peak_per_10ms",
            MetricName::ProbesPeakPerSExact => "probes_peak_per_s_exact",
            MetricName::PoolExhaustionS => "pool_exhaustion_s",
            MetricName::PoolFullS => "pool_full_s",
            MetricName::PoolFills => "pool_fills",
            MetricName::PoolRefused => "pool_refused",
            MetricName::PoolsFullAtFault => "pools_full_at_fault",
            MetricName::CheckoutRate => "checkout_rate",
            MetricName::FailureRate => "failure_rate",
        }
    }

    pub fn parse(text: &str) -> Option<MetricName> {
        MetricName::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// Whether the metric is per endpoint (and so needs one).
    pub fn per_endpoint(self) -> bool {
        matches!(
            self,
            MetricName::P50Ms
                | MetricName::P95Ms
                | MetricName::P99Ms
                | MetricName::P95OkMs
                | MetricName::P95FailedMs
                | MetricName::FailureRate
        )
    }

    /// Unit for tables and axes.
    pub fn unit(self) -> &'static str {
        match self {
            MetricName::Availability | MetricName::CheckoutFailure | MetricName::FailureRate => {
                "fraction"
            }
            MetricName::ThroughputOk => "ok/s",
            MetricName::Rejected => "requests",
            MetricName::BreakerOpens => "opens",
            MetricName::TimeOpenS => "s",
            MetricName::P50Ms
            | MetricName::P95Ms
            | MetricName::P99Ms
            | MetricName::P95OkMs
            | MetricName::P95FailedMs
            | MetricName::CartLatencyStartMs
            | MetricName::CartLatencyEndMs
            | MetricName::DependencyMeanMs => "ms",
            MetricName::CartItemsStart | MetricName::CartItemsEnd => "items",
            MetricName::EnergyJ => "J",
            MetricName::PowerW => "W",
            MetricName::EnergyPerOkJ => "J/ok",
            MetricName::ProbesPeakPerS | MetricName::ProbesMeanPerS => "probes/s",
            MetricName::ProbesPeakPer10ms | MetricName::ProbesPeakPerSExact => "probes",
            MetricName::PoolExhaustionS | MetricName::PoolFullS => "s",
            MetricName::PoolFills => "fills",
            MetricName::PoolRefused => "requests",
            MetricName::PoolsFullAtFault => "pools",
            MetricName::CheckoutRate => "checkouts/s",
        }
    }
}

impl fmt::Display for MetricName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A metric, with the endpoint or the breaker it is about when it is per endpoint or per breaker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct MetricKey {
    pub metric: MetricName,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The breaker (`caller->dependency`) of a per-breaker figure; the run-wide figure is their sum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breaker: Option<String>,
}

impl MetricKey {
    pub fn run(metric: MetricName) -> MetricKey {
        MetricKey {
            metric,
            endpoint: None,
            breaker: None,
        }
    }

    /// A figure of one breaker (`caller->dependency`).
    pub fn breaker(metric: MetricName, breaker: impl Into<String>) -> MetricKey {
        MetricKey {
            metric,
            endpoint: None,
            breaker: Some(breaker.into()),
        }
    }

    /// The run-wide key of the same metric (a per-breaker figure's sum, a per-endpoint figure's whole run).
    pub fn whole(&self) -> MetricKey {
        MetricKey::run(self.metric)
    }

    pub fn endpoint(metric: MetricName, endpoint: impl Into<String>) -> MetricKey {
        MetricKey {
            metric,
            endpoint: Some(endpoint.into()),
            breaker: None,
        }
    }
}

impl fmt::Display for MetricKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.endpoint, &self.breaker) {
            (Some(endpoint), _) => write!(f, "{}[{endpoint}]", self.metric),
            (None, Some(breaker)) => write!(f, "{}[{breaker}]", self.metric),
            (None, None) => write!(f, "{}", self.metric),
        }
    }
}

/// The stored name of the checkout endpoint.
pub fn checkout_endpoint() -> &'static str {
    endpoint::NAMES[endpoint::CHECKOUT]
}

/// The stored name of the cart view endpoint (`GET /cart`).
pub fn cart_view_endpoint() -> &'static str {
    endpoint::NAMES[endpoint::VIEW_CART]
}

/// Short names accepted for the Online Boutique endpoints, with the stored names they stand for.
pub const ENDPOINT_ALIASES: [(&str, usize); 6] = [
    ("index", endpoint::INDEX),
    ("set_currency", endpoint::SET_CURRENCY),
    ("product", endpoint::PRODUCT),
    ("add_to_cart", endpoint::ADD_TO_CART),
    ("view_cart", endpoint::VIEW_CART),
    ("checkout", endpoint::CHECKOUT),
];

/// The stored endpoint name for `name`: a stored name as is, or one of [`ENDPOINT_ALIASES`].
pub fn resolve_endpoint(name: &str) -> String {
    ENDPOINT_ALIASES
        .iter()
        .find(|(alias, _)| *alias == name)
        .map_or_else(
            || name.to_owned(),
            |(_, id)| endpoint::NAMES[*id].to_owned(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    // A metric has one name: the JSON of a report, the CSV, `[[validate]]` and the docs all use `as_str`'s.
    #[test]
    fn every_metric_is_written_and_read_in_json_by_its_one_name() {
        for metric in MetricName::ALL {
            let json = serde_json::to_string(&metric).unwrap();
            assert_eq!(json, format!("\"{}\"", metric.as_str()));
            assert_eq!(serde_json::from_str::<MetricName>(&json).unwrap(), metric);
            assert_eq!(MetricName::parse(metric.as_str()), Some(metric));
        }
        // What earlier reports wrote for the 10 ms peak is still read.
        assert_eq!(
            serde_json::from_str::<MetricName>("\"probes_peak_per10ms\"").unwrap(),
            MetricName::ProbesPeakPer10ms
        );
    }
}
