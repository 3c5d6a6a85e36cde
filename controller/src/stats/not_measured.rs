//! What an experiment's targets could not measure, and why: one statement per missing capability (and per
//! scrape interval of a foreign breaker), with the metrics it leaves out. The report, `tolerant show` and the
//! dashboard all state these, and a metric a statement names is left out of the figures instead of read as 0.

use serde::{Serialize, Serializer};

use crate::metric::MetricName;
use crate::spec::{ExperimentSpec, SourceSpec};

/// One thing that was not measured (or measured only in part), and the metrics it leaves out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotMeasured {
    /// The sentence the report and the dashboard show.
    pub statement: String,
    /// Metrics left out of every figure because of it (absent, never 0); empty when none is.
    pub metrics: Vec<MetricName>,
}

impl NotMeasured {
    fn new(statement: String, metrics: &[MetricName]) -> NotMeasured {
        NotMeasured {
            statement,
            metrics: metrics.to_vec(),
        }
    }
}

/// Serialized as its sentence: the JSON report lists the statements as strings.
impl Serialize for NotMeasured {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.statement)
    }
}

/// Whether any breaker of the experiment was watched: a target's own stream or a `[[sources]]` entry.
pub fn observes_breakers(spec: &ExperimentSpec) -> bool {
    spec.targets.is_empty()
        || !spec.sources.is_empty()
        || spec.offers.values().any(|offers| offers.breaker_stream)
}

/// What an experiment's targets could not measure, and why, one statement each (empty on the embedded stack,
/// which offers everything); and how often foreign breakers were scraped (a state shorter than that may be
/// missed).
pub fn not_measured_statements(spec: &ExperimentSpec) -> Vec<NotMeasured> {
    let mut lines = Vec::new();
    if !spec.targets.is_empty() {
        let offered_by_any =
            |capability: &str| spec.offers.values().any(|offers| offers.has(capability));
        let lacking = |capability: &str| {
            let names: Vec<&str> = spec
                .offers
                .iter()
                .filter(|(_, offers)| !offers.has(capability))
                .map(|(name, _)| name.as_str())
                .collect();
            names.join(", ")
        };
        let cart = [MetricName::CartItemsStart, MetricName::CartItemsEnd];
        for (capability, what, metrics) in [
            ("reset", "state was not reset between runs", &[][..]),
            (
                "breaker-config",
                "the breaker config and modes of the spec were not applied (the breakers ran with their own settings)",
                &[],
            ),
            (
                "breaker-stream",
                "no Tolerant breaker transitions were streamed",
                &[],
            ),
            ("pool", "worker-pool occupancy was not measured", &[]),
            (
                "cart-metrics",
                "cart sizes (cart inflation) were not measured",
                &cart,
            ),
        ] {
            if !offered_by_any(capability) {
                lines.push(NotMeasured::new(
                    format!(
                        "{what}: no target offers `{capability}` (lacking: {})",
                        lacking(capability)
                    ),
                    metrics,
                ));
            }
        }
        if !observes_breakers(spec) {
            lines.push(NotMeasured::new(
                "breaker opens and time open were not measured: no target offers `breaker-stream` and the spec has \
                 no [[sources]]"
                    .to_owned(),
                &[MetricName::BreakerOpens, MetricName::TimeOpenS],
            ));
        }
    }
    for source in &spec.sources {
        if let SourceSpec::Prometheus(scrape) = source {
            lines.push(NotMeasured::new(
                format!(
                    "foreign breakers of {} were scraped every {}: a state shorter than that may be missed; only \
                     what a scrape showed is counted",
                    scrape.url,
                    humantime::format_duration(scrape.interval)
                ),
                &[],
            ));
        }
    }
    lines
}

/// [`not_measured_statements`]' sentences.
pub fn not_measured(spec: &ExperimentSpec) -> Vec<String> {
    not_measured_statements(spec)
        .into_iter()
        .map(|line| line.statement)
        .collect()
}

/// The statement that left `metric` out, if one did.
pub fn left_out(statements: &[NotMeasured], metric: MetricName) -> Option<&NotMeasured> {
    statements
        .iter()
        .find(|statement| statement.metrics.contains(&metric))
}
