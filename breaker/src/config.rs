//! Breaker configuration in the Resilience4j-like vocabulary of the design (TOML, durations as "30s" / "250ms").
//!
//! A [`BreakerConfig`] can only be built valid: it is made from the unchecked [`RawBreakerConfig`] (the wire and
//! file shape, `raw.rs`) by `TryFrom`, which serde uses too, so deserialising an invalid config fails; so is each
//! of its parts (`parts.rs`: the detectors, the open window, half-open probing — private fields, read through
//! accessors). Parsing rejects unknown keys, and every error — a parse error or a failed check — names the field
//! it is about (`half_open.probes: must be at least 1`), so a mistyped experiment file fails loudly.

use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

mod parts;
mod raw;

pub use parts::{
    FailureRateConfig, HalfOpenConfig, LastCallsConfig, OpenConfig, SlowCallConfig, TripConfig,
};
pub use raw::{
    Probes, RawBreakerConfig, RawFailureRateConfig, RawHalfOpenConfig, RawLastCallsConfig,
    RawOpenConfig, RawSlowCallConfig, RawTripConfig,
};

/// Default consecutive-failure threshold (the study's breaker).
pub const DEFAULT_CONSECUTIVE_FAILURES: u32 = 5;
/// Default open window.
pub const DEFAULT_OPEN_BASE: Duration = Duration::from_secs(30);
/// Default cap on the open window.
pub const DEFAULT_OPEN_MAX: Duration = Duration::from_secs(300);
/// Default number of half-open probes admitted at once.
pub const DEFAULT_PROBES: u32 = 1;
/// Default number of probe successes that close the breaker.
pub const DEFAULT_SUCCESSES_TO_CLOSE: u32 = 2;
/// Number of buckets a sliding time window is divided into.
pub const WINDOW_BUCKETS: u32 = 10;

/// An invalid configuration; `Display` names the field, e.g. `half_open.probes: must be at least 1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// Dotted path of the offending field (`config` for the document as a whole).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// How the breaker acts on its decisions.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Detect, trip and reject.
    #[default]
    Enforce,
    /// Detect and emit the transitions it would make (`shadow: true`), but never reject ("breaker off").
    Shadow,
    /// Reject every call.
    ForcedOpen,
    /// Admit every call and detect nothing (counters still count).
    Disabled,
}

/// A mode name that is not one of [`Mode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mode: `{0}` is not one of enforce, shadow, forced-open, disabled")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| UnknownMode(name.to_owned()))
    }
}

impl Mode {
    /// Every mode, in the order an operator is offered them.
    pub const ALL: [Mode; 4] = [
        Mode::Enforce,
        Mode::Shadow,
        Mode::ForcedOpen,
        Mode::Disabled,
    ];

    /// The config-file spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Shadow => "shadow",
            Mode::ForcedOpen => "forced-open",
            Mode::Disabled => "disabled",
        }
    }
}

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

/// Largest limited probe count (the in-flight count has 20 bits in the state word).
pub const MAX_PROBES: u32 = (1 << 20) - 2;
/// Largest `successes_to_close` (20 bits in the state word).
pub const MAX_SUCCESSES_TO_CLOSE: u32 = (1 << 20) - 1;
/// Most calls a count-based window (`trip.last_calls.calls`) may hold.
pub const MAX_LAST_CALLS: u32 = 1_000_000;
/// Longest detector window (and slow-call threshold): a day.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}

#[cfg(test)]
mod tests;
