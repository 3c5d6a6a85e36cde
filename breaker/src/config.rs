//! Breaker configuration in the Resilience4j-like vocabulary of the design (TOML, durations as "30s" / "250ms").
//!
//! A [`BreakerConfig`] can only be built valid: it is made from the unchecked [`RawBreakerConfig`] (the wire and
//! file shape, `raw.rs`) by `TryFrom`, which serde uses too, so deserialising an invalid config fails; so is each
//! of its parts (`parts.rs`: the detectors, the open window, half-open probing — private fields, read through
//! accessors). Parsing rejects unknown keys, and every error — a parse error or a failed check — names the field
//! it is about (`half_open.probes: must be at least 1`), so a mistyped experiment file fails loudly.

use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

mod bounds;
mod error;
mod mode;
mod parts;
mod raw;

pub use bounds::{
    DEFAULT_CONSECUTIVE_FAILURES, DEFAULT_OPEN_BASE, DEFAULT_OPEN_MAX, DEFAULT_PROBES,
    DEFAULT_SUCCESSES_TO_CLOSE, MAX_LAST_CALLS, MAX_PROBES, MAX_SUCCESSES_TO_CLOSE, MAX_WINDOW,
    WINDOW_BUCKETS,
};
pub use error::ConfigError;
pub use mode::{Mode, UnknownMode};

pub use parts::{
    FailureRateConfig, HalfOpenConfig, LastCallsConfig, OpenConfig, SlowCallConfig, TripConfig,
};
pub use raw::{
    Probes, RawBreakerConfig, RawFailureRateConfig, RawHalfOpenConfig, RawLastCallsConfig,
    RawOpenConfig, RawSlowCallConfig, RawTripConfig,
};

/// A checked breaker configuration: every value within its bounds. Serialises exactly as its [`RawBreakerConfig`];
/// deserialising checks it, and an invalid one is an error naming the field.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(try_from = "RawBreakerConfig")]
pub struct BreakerConfig {
    mode: Mode,
    trip: TripConfig,
    open: OpenConfig,
    half_open: HalfOpenConfig,
}

impl TryFrom<RawBreakerConfig> for BreakerConfig {
    type Error = ConfigError;

    /// Check every part (trip, open, half-open, in that order); the error names the first offending field.
    fn try_from(raw: RawBreakerConfig) -> Result<Self, ConfigError> {
        Ok(BreakerConfig {
            mode: raw.mode,
            trip: raw.trip.try_into()?,
            open: raw.open.try_into()?,
            half_open: raw.half_open.try_into()?,
        })
    }
}

impl RawBreakerConfig {
    /// The checked config (`BreakerConfig::try_from(self)`); the error names the first offending field.
    pub fn build(self) -> Result<BreakerConfig, ConfigError> {
        BreakerConfig::try_from(self)
    }
}

impl From<BreakerConfig> for RawBreakerConfig {
    fn from(config: BreakerConfig) -> Self {
        RawBreakerConfig {
            mode: config.mode,
            trip: config.trip.into(),
            open: config.open.into(),
            half_open: config.half_open.into(),
        }
    }
}

impl Serialize for BreakerConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.clone().into_raw().serialize(serializer)
    }
}

impl BreakerConfig {
    /// Parse a TOML document and check it. Errors name the field.
    pub fn from_toml_str(s: &str) -> Result<Self, ConfigError> {
        let deserializer = toml::Deserializer::new(s);
        let raw: RawBreakerConfig =
            serde_path_to_error::deserialize(deserializer).map_err(|err| {
                let path = err.path().to_string();
                let field = if path == "." || path.is_empty() {
                    "config".to_string()
                } else {
                    path
                };
                ConfigError::new(field, first_line(err.inner().message()))
            })?;
        BreakerConfig::try_from(raw)
    }

    /// The config as a TOML document that [`BreakerConfig::from_toml_str`] reads back.
    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// Enforce, shadow, forced-open or disabled.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The detectors (at least one is set).
    pub fn trip(&self) -> &TripConfig {
        &self.trip
    }

    /// The open window.
    pub fn open(&self) -> &OpenConfig {
        &self.open
    }

    /// Half-open probing.
    pub fn half_open(&self) -> &HalfOpenConfig {
        &self.half_open
    }

    /// The same config in another mode (every mode is valid with every config).
    pub fn with_mode(self, mode: Mode) -> Self {
        BreakerConfig { mode, ..self }
    }

    /// The config's values, to change and check again with `BreakerConfig::try_from`.
    pub fn into_raw(self) -> RawBreakerConfig {
        self.into()
    }

    /// The config with its time windows divided by `time_scale` (open durations and detector windows shrink with
    /// a sped-up study; the slow-call threshold does not, service latencies do not scale), checked again: the error
    /// names the field a window fell out of bounds in. A non-positive or NaN scale saturates every window.
    pub fn time_scaled(&self, time_scale: f64) -> Result<Self, ConfigError> {
        let scale = |duration: Duration| scale_duration(duration, time_scale);
        let mut raw = self.clone().into_raw();
        raw.open.base = scale(raw.open.base);
        raw.open.max = scale(raw.open.max);
        if let Some(rate) = &mut raw.trip.failure_rate {
            rate.window = scale(rate.window);
        }
        if let Some(slow) = &mut raw.trip.slow_call {
            slow.window = scale(slow.window);
        }
        BreakerConfig::try_from(raw)
    }
}

/// `duration / time_scale`, saturating: never panics, whatever the numbers (a result too large for a `Duration`
/// is `Duration::MAX`, a non-positive or NaN scale gives `Duration::MAX` too).
pub fn scale_duration(duration: Duration, time_scale: f64) -> Duration {
    Duration::try_from_secs_f64(duration.as_secs_f64() / time_scale).unwrap_or(Duration::MAX)
}

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests;
