//! The breaker configuration as written, nothing checked: the wire and file shape ([`RawBreakerConfig`] and its
//! tables), with its serde attributes. The checked config and its parts are made from these by `TryFrom`.

use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::config::{
    DEFAULT_CONSECUTIVE_FAILURES, DEFAULT_OPEN_BASE, DEFAULT_OPEN_MAX, DEFAULT_PROBES,
    DEFAULT_SUCCESSES_TO_CLOSE, Mode,
};

/// The whole breaker configuration as written, nothing checked yet: the wire and file shape. The breaker takes only
/// a [`BreakerConfig`](crate::config::BreakerConfig), made from this by `BreakerConfig::try_from`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBreakerConfig {
    /// Enforce, shadow, forced-open or disabled.
    #[serde(default)]
    pub mode: Mode,
    /// Detectors; any one that fires trips the breaker. A missing `[trip]` table means consecutive failures = 5.
    #[serde(default)]
    pub trip: RawTripConfig,
    /// How long the breaker stays open.
    #[serde(default)]
    pub open: RawOpenConfig,
    /// How the breaker probes for recovery.
    #[serde(default)]
    pub half_open: RawHalfOpenConfig,
}

impl Default for RawBreakerConfig {
    /// The study's breaker: 5 consecutive failures, 30 s open, 1 probe, 2 successes to close.
    fn default() -> Self {
        RawBreakerConfig {
            mode: Mode::Enforce,
            trip: RawTripConfig::default(),
            open: RawOpenConfig::default(),
            half_open: RawHalfOpenConfig::default(),
        }
    }
}

/// Detectors. Inside a `[trip]` table a detector that is not written is off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTripConfig {
    /// Trip after this many failures in a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consecutive_failures: Option<u32>,
    /// Trip when the failure rate over a sliding window reaches a threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_rate: Option<RawFailureRateConfig>,
    /// Trip when the failure rate over the last `calls` calls reaches a threshold (a count-based window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_calls: Option<RawLastCallsConfig>,
    /// Trip when the rate of slow calls over a sliding window reaches a threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_call: Option<RawSlowCallConfig>,
}

impl Default for RawTripConfig {
    fn default() -> Self {
        RawTripConfig {
            consecutive_failures: Some(DEFAULT_CONSECUTIVE_FAILURES),
            failure_rate: None,
            last_calls: None,
            slow_call: None,
        }
    }
}

/// Failure rate over a sliding time window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFailureRateConfig {
    /// Failures / calls at or above which the breaker trips, in (0, 1].
    pub threshold: f64,
    /// Length of the sliding window (divided into [`WINDOW_BUCKETS`](crate::config::WINDOW_BUCKETS) buckets).
    #[serde(with = "humantime_serde_duration")]
    pub window: Duration,
    /// Calls (successes + failures) the window must hold before the rate counts.
    pub min_calls: u32,
}

/// Failure rate over the last `calls` calls (a count-based sliding window: Resilience4j's `COUNT_BASED`, recloser's
/// ring), divided into [`WINDOW_BUCKETS`](crate::config::WINDOW_BUCKETS) buckets of calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLastCallsConfig {
    /// Failures / calls at or above which the breaker trips, in (0, 1].
    pub threshold: f64,
    /// How many of the latest calls the window holds.
    pub calls: u32,
    /// Calls (successes + failures) the window must hold before the rate counts, at most `calls`.
    pub min_calls: u32,
}

/// Slow-call rate over a sliding time window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSlowCallConfig {
    /// A call that takes at least this long is slow.
    #[serde(with = "humantime_serde_duration")]
    pub duration: Duration,
    /// Slow calls / calls at or above which the breaker trips, in (0, 1].
    pub rate: f64,
    /// Length of the sliding window.
    #[serde(with = "humantime_serde_duration")]
    pub window: Duration,
    /// Calls the window must hold before the rate counts.
    pub min_calls: u32,
}

/// The open window: `base × backoff^(trips without a close)`, capped at `max`, with seeded uniform jitter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOpenConfig {
    /// Window after the first trip.
    #[serde(default = "default_open_base", with = "humantime_serde_duration")]
    pub base: Duration,
    /// Multiplier per repeated trip without a close (1.0 = fixed).
    #[serde(default = "default_backoff")]
    pub backoff: f64,
    /// Cap on the window (jitter included).
    #[serde(default = "default_open_max", with = "humantime_serde_duration")]
    pub max: Duration,
    /// Fraction of the window drawn uniformly in `[-jitter, +jitter]`, in [0, 1).
    #[serde(default)]
    pub jitter: f64,
    /// Seed of the jitter draw; when absent the registry's seed is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
}

fn default_open_base() -> Duration {
    DEFAULT_OPEN_BASE
}
fn default_open_max() -> Duration {
    DEFAULT_OPEN_MAX
}
fn default_backoff() -> f64 {
    1.0
}

impl Default for RawOpenConfig {
    fn default() -> Self {
        RawOpenConfig {
            base: DEFAULT_OPEN_BASE,
            backoff: 1.0,
            max: DEFAULT_OPEN_MAX,
            jitter: 0.0,
            seed: None,
        }
    }
}

/// Half-open probing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHalfOpenConfig {
    /// Probes admitted at once: an integer ≥ 1, or "all" (admits every caller, to demonstrate the herd).
    #[serde(default)]
    pub probes: Probes,
    /// Probe successes that close the breaker.
    #[serde(default = "default_successes_to_close")]
    pub successes_to_close: u32,
}

fn default_successes_to_close() -> u32 {
    DEFAULT_SUCCESSES_TO_CLOSE
}

impl Default for RawHalfOpenConfig {
    fn default() -> Self {
        RawHalfOpenConfig {
            probes: Probes::default(),
            successes_to_close: DEFAULT_SUCCESSES_TO_CLOSE,
        }
    }
}

/// How many half-open probes may be in flight at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Probes {
    /// At most this many.
    Limited(NonZeroU32),
    /// Every caller (the herd).
    All,
}

impl Probes {
    /// At most `n` probes; `None` when `n` is 0.
    pub fn limited(n: u32) -> Option<Self> {
        NonZeroU32::new(n).map(Probes::Limited)
    }
}

impl Default for Probes {
    fn default() -> Self {
        Probes::Limited(NonZeroU32::new(DEFAULT_PROBES).unwrap_or(NonZeroU32::MIN))
    }
}

impl fmt::Display for Probes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Probes::Limited(n) => write!(f, "{n}"),
            Probes::All => f.write_str("all"),
        }
    }
}

impl Serialize for Probes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Probes::Limited(n) => serializer.serialize_u32(n.get()),
            Probes::All => serializer.serialize_str("all"),
        }
    }
}

impl<'de> Deserialize<'de> for Probes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ProbesVisitor;
        impl Visitor<'_> for ProbesVisitor {
            type Value = Probes;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer of at least 1 or \"all\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Probes, E> {
                u32::try_from(v)
                    .ok()
                    .and_then(Probes::limited)
                    .ok_or_else(|| {
                        E::custom(format!(
                            "must be at least 1 and at most {}, got {v}",
                            u32::MAX
                        ))
                    })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Probes, E> {
                self.visit_i64(i64::try_from(v).unwrap_or(i64::MAX))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Probes, E> {
                if v == "all" {
                    Ok(Probes::All)
                } else {
                    Err(E::custom(format!(
                        "expected an integer of at least 1 or \"all\", got \"{v}\""
                    )))
                }
            }
        }
        deserializer.deserialize_any(ProbesVisitor)
    }
}

/// Durations as humantime strings ("30s", "250ms", "5m").
pub(crate) mod humantime_serde_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&humantime::format_duration(*d).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format!(
                "invalid duration \"{text}\" ({e}); write e.g. \"30s\""
            ))
        })
    }
}
