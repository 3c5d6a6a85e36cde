//! The advisor's input as serde reads it from TOML: every table with `deny_unknown_fields`, every value spanned
//! so a check can name its line.

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawInput {
    pub(super) name: Option<Spanned<String>>,
    pub(super) traffic: Spanned<RawTraffic>,
    pub(super) profiles: Spanned<Vec<Spanned<RawProfile>>>,
    pub(super) costs: Option<RawCosts>,
    pub(super) constraints: Option<RawConstraints>,
    pub(super) search: Option<RawSearch>,
    pub(super) verify: Option<RawVerify>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTraffic {
    pub(super) rate: Option<Spanned<f64>>,
    pub(super) users: Option<Spanned<u32>>,
    pub(super) think_min: Option<Spanned<String>>,
    pub(super) think_max: Option<Spanned<String>>,
    pub(super) share: Option<Spanned<f64>>,
    pub(super) latency: Option<Spanned<String>>,
    pub(super) timeout: Spanned<String>,
    pub(super) workers: Option<Spanned<u32>>,
    pub(super) instances: Option<Spanned<u32>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum KindName {
    Blips,
    Partial,
    Hang,
    Outage,
    Baseline,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProfile {
    pub(super) name: Spanned<String>,
    pub(super) kind: Spanned<KindName>,
    pub(super) weight: Option<Spanned<f64>>,
    pub(super) rate: Option<Spanned<f64>>,
    pub(super) length: Option<Spanned<String>>,
    pub(super) every: Option<Spanned<String>>,
    pub(super) window: Option<Spanned<String>>,
    /// How a failing call of blips or a partial failure fails: `error` (at once, the default) or `hang`.
    pub(super) fault: Option<Spanned<FailingCall>>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(super) enum FailingCall {
    Error,
    Hang,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCosts {
    pub(super) rejected_success: Option<Spanned<f64>>,
    pub(super) blocked_second: Option<Spanned<f64>>,
    pub(super) refused: Option<Spanned<f64>>,
    pub(super) detect_second: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConstraints {
    pub(super) detect_within: Option<Spanned<String>>,
    pub(super) false_trips_per_hour: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSearch {
    pub(super) seed: Option<u64>,
    pub(super) max_candidates: Option<Spanned<u32>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVerify {
    pub(super) top: Option<Spanned<u32>>,
    pub(super) rounds: Option<Spanned<u32>>,
    pub(super) time_scale: Option<Spanned<f64>>,
    pub(super) spec: Option<Spanned<String>>,
}
