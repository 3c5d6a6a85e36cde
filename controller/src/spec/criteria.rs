//! Release-gate criteria as a spec's `[[validate]]` tables write them: "checkout p95 at 100 % with breaker
//! enforce < 200 ms", typed, each value checked; `crate::stats` judges them on the 95 % interval.
//!
//! ```toml
//! [[validate]]
//! metric = "p95_ms"          # a MetricName
//! endpoint = "checkout"      # per-endpoint metrics only: a stored name or an alias
//! fault_rate = 1.0
//! breaker = "enforce"
//! comparison = "<"           # <, <=, >, >=
//! threshold = 200
//! # fault_kind = "error"     # needed only when the experiment has several fault kinds
//! # name = "checkout stays fast when payment is down"
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

use super::model::{BreakerMode, FaultKindName};
use crate::metric::{MetricKey, MetricName, resolve_endpoint};

/// How a metric's interval must compare with the threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CriterionComparison {
    #[serde(rename = "<")]
    Below,
    #[serde(rename = "<=")]
    AtMost,
    #[serde(rename = ">")]
    Above,
    #[serde(rename = ">=")]
    AtLeast,
}

impl CriterionComparison {
    pub fn symbol(self) -> &'static str {
        match self {
            CriterionComparison::Below => "<",
            CriterionComparison::AtMost => "≤",
            CriterionComparison::Above => ">",
            CriterionComparison::AtLeast => "≥",
        }
    }

    /// Whether the whole interval `[low, high]` satisfies `value <op> threshold`.
    pub fn holds_for_interval(self, low: f64, high: f64, threshold: f64) -> bool {
        match self {
            CriterionComparison::Below => high < threshold,
            CriterionComparison::AtMost => high <= threshold,
            CriterionComparison::Above => low > threshold,
            CriterionComparison::AtLeast => low >= threshold,
        }
    }
}

/// The TOML shape of one `[[validate]]` table, before its values are checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCriterion {
    name: Option<String>,
    metric: MetricName,
    endpoint: Option<String>,
    fault_kind: Option<FaultKindName>,
    fault_rate: f64,
    breaker: BreakerMode,
    comparison: CriterionComparison,
    threshold: f64,
}

/// One check of the validation gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawCriterion")]
pub struct Criterion {
    /// Free text shown in the report.
    pub name: Option<String>,
    pub metric: MetricKey,
    /// Needed only when the experiment has several fault kinds.
    pub fault_kind: Option<FaultKindName>,
    pub fault_rate: f64,
    pub breaker: BreakerMode,
    pub comparison: CriterionComparison,
    pub threshold: f64,
}

impl TryFrom<RawCriterion> for Criterion {
    type Error = String;

    fn try_from(raw: RawCriterion) -> Result<Self, Self::Error> {
        if !(0.0..=1.0).contains(&raw.fault_rate) {
            return Err(format!(
                "fault_rate: {} is not a fraction between 0 and 1",
                raw.fault_rate
            ));
        }
        if !raw.threshold.is_finite() {
            return Err(format!(
                "threshold: {} is not a finite number",
                raw.threshold
            ));
        }
        let metric = match (raw.metric.per_endpoint(), raw.endpoint) {
            (true, Some(endpoint)) => MetricKey::endpoint(raw.metric, resolve_endpoint(&endpoint)),
            (true, None) => {
                return Err(format!(
                    "endpoint: metric {} is per endpoint; name one (e.g. \"checkout\" or \"GET /cart\")",
                    raw.metric
                ));
            }
            (false, Some(_)) => {
                return Err(format!(
                    "endpoint: metric {} is per run, it takes no endpoint",
                    raw.metric
                ));
            }
            (false, None) => MetricKey::run(raw.metric),
        };
        Ok(Criterion {
            name: raw.name,
            metric,
            fault_kind: raw.fault_kind,
            fault_rate: raw.fault_rate,
            breaker: raw.breaker,
            comparison: raw.comparison,
            threshold: raw.threshold,
        })
    }
}

impl fmt::Display for Criterion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at ", self.metric)?;
        if let Some(kind) = self.fault_kind {
            write!(f, "{} ", kind.as_str())?;
        }
        write!(
            f,
            "{}% / {} {} {}",
            self.fault_rate * 100.0,
            self.breaker.as_str(),
            self.comparison.symbol(),
            self.threshold
        )
    }
}

/// A `[[validate]]` table that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CriterionError {
    /// A wrong, unknown or missing value; `field` is its path, e.g. `validate[1].comparison`.
    #[error("{field}: {message}")]
    Field { field: String, message: String },
    /// The criterion names a condition the experiment does not run.
    #[error("validate[{index}]: {message}")]
    NotInSpec { index: usize, message: String },
}

/// Criteria from the value of a spec's `validate` key (an array of tables).
pub fn parse_criteria(value: toml::Value) -> Result<Vec<Criterion>, CriterionError> {
    serde_path_to_error::deserialize::<_, Vec<Criterion>>(value).map_err(|error| {
        let path = error.path().to_string();
        let mut field = if path == "." {
            "validate".to_owned()
        } else {
            format!("validate{path}")
        };
        let mut message = error.into_inner().to_string();
        // A value check (`TryFrom`) fails at the table; its message starts with the field name.
        if let Some((name, rest)) = message.split_once(": ") {
            if RAW_FIELDS.contains(&name) {
                field = format!("{field}.{name}");
                message = rest.to_owned();
            }
        }
        CriterionError::Field { field, message }
    })
}

/// Fields of a `[[validate]]` table.
const RAW_FIELDS: [&str; 8] = [
    "name",
    "metric",
    "endpoint",
    "fault_kind",
    "fault_rate",
    "breaker",
    "comparison",
    "threshold",
];

/// Criteria from a whole spec text (only its `validate` key is read; none when it is absent).
pub fn criteria_of_spec(source: &str) -> Result<Vec<Criterion>, CriterionError> {
    let table: toml::Table =
        source
            .parse()
            .map_err(|error: toml::de::Error| CriterionError::Field {
                field: "validate".to_owned(),
                message: error.to_string(),
            })?;
    match table.get("validate") {
        Some(value) => parse_criteria(value.clone()),
        None => Ok(Vec::new()),
    }
}
