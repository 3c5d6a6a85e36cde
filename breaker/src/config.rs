//! Breaker configuration in the Resilience4j-like vocabulary of the design (TOML, durations as "30s" / "250ms").
//!
//! A [`BreakerConfig`] can only be built valid: it is made from the unchecked [`RawBreakerConfig`] (the wire and
//! file shape) by `TryFrom`, which serde uses too, so deserialising an invalid config fails. Parsing rejects unknown
//! keys, and every error — a parse error or a failed check — names the field it is about
//! (`half_open.probes: must be at least 1`), so a mistyped experiment file fails loudly.

use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

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

/// The whole breaker configuration as written, nothing checked yet: the wire and file shape. The breaker takes only
/// a [`BreakerConfig`], made from this by `BreakerConfig::try_from`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBreakerConfig {
    /// Enforce, shadow, forced-open or disabled.
    #[serde(default)]
    pub mode: Mode,
    /// Detectors; any one that fires trips the breaker. A missing `[trip]` table means consecutive failures = 5.
    #[serde(default)]
    pub trip: TripConfig,
    /// How long the breaker stays open.
    #[serde(default)]
    pub open: OpenConfig,
    /// How the breaker probes for recovery.
    #[serde(default)]
    pub half_open: HalfOpenConfig,
}

impl Default for RawBreakerConfig {
    /// The study's breaker: 5 consecutive failures, 30 s open, 1 probe, 2 successes to close.
    fn default() -> Self {
        RawBreakerConfig {
            mode: Mode::Enforce,
            trip: TripConfig::default(),
            open: OpenConfig::default(),
            half_open: HalfOpenConfig::default(),
        }
    }
}

/// A checked breaker configuration: every value within its bounds. Serialises exactly as its [`RawBreakerConfig`];
/// deserialising checks it, and an invalid one is an error naming the field.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(try_from = "RawBreakerConfig")]
pub struct BreakerConfig(RawBreakerConfig);

impl TryFrom<RawBreakerConfig> for BreakerConfig {
    type Error = ConfigError;

    /// Check every value; the error names the first offending field.
    fn try_from(raw: RawBreakerConfig) -> Result<Self, ConfigError> {
        check(&raw)?;
        Ok(BreakerConfig(raw))
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
        config.0
    }
}

impl Serialize for BreakerConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Detectors. Inside a `[trip]` table a detector that is not written is off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TripConfig {
    /// Trip after this many failures in a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consecutive_failures: Option<u32>,
    /// Trip when the failure rate over a sliding window reaches a threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_rate: Option<FailureRateConfig>,
    /// Trip when the rate of slow calls over a sliding window reaches a threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_call: Option<SlowCallConfig>,
}

impl Default for TripConfig {
    fn default() -> Self {
        TripConfig {
            consecutive_failures: Some(DEFAULT_CONSECUTIVE_FAILURES),
            failure_rate: None,
            slow_call: None,
        }
    }
}

/// Failure rate over a sliding time window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureRateConfig {
    /// Failures / calls at or above which the breaker trips, in (0, 1].
    pub threshold: f64,
    /// Length of the sliding window (divided into [`WINDOW_BUCKETS`] buckets).
    #[serde(with = "humantime_serde_duration")]
    pub window: Duration,
    /// Calls (successes + failures) the window must hold before the rate counts.
    pub min_calls: u32,
}

/// Slow-call rate over a sliding time window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlowCallConfig {
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
pub struct OpenConfig {
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

impl Default for OpenConfig {
    fn default() -> Self {
        OpenConfig {
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
pub struct HalfOpenConfig {
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

impl Default for HalfOpenConfig {
    fn default() -> Self {
        HalfOpenConfig {
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
mod humantime_serde_duration {
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
        toml::to_string(&self.0).unwrap_or_default()
    }

    /// Enforce, shadow, forced-open or disabled.
    pub fn mode(&self) -> Mode {
        self.0.mode
    }

    /// The detectors (at least one is set).
    pub fn trip(&self) -> &TripConfig {
        &self.0.trip
    }

    /// The open window.
    pub fn open(&self) -> &OpenConfig {
        &self.0.open
    }

    /// Half-open probing.
    pub fn half_open(&self) -> &HalfOpenConfig {
        &self.0.half_open
    }

    /// The same config in another mode (every mode is valid with every config).
    pub fn with_mode(self, mode: Mode) -> Self {
        BreakerConfig(RawBreakerConfig { mode, ..self.0 })
    }

    /// The config's values, to change and check again with `BreakerConfig::try_from`.
    pub fn into_raw(self) -> RawBreakerConfig {
        self.0
    }

    /// The config with its time windows divided by `time_scale` (open durations and detector windows shrink with
    /// a sped-up study; the slow-call threshold does not, service latencies do not scale), checked again: the error
    /// names the field a window fell out of bounds in. A non-positive or NaN scale saturates every window.
    pub fn time_scaled(&self, time_scale: f64) -> Result<Self, ConfigError> {
        let scale = |duration: Duration| scale_duration(duration, time_scale);
        let mut raw = self.0.clone();
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

/// Check every value of `config`; the error names the first offending field.
fn check(config: &RawBreakerConfig) -> Result<(), ConfigError> {
    let trip = &config.trip;
    if trip.consecutive_failures.is_none()
        && trip.failure_rate.is_none()
        && trip.slow_call.is_none()
    {
        return Err(ConfigError::new(
            "trip",
            "at least one detector is needed (consecutive_failures, failure_rate or slow_call)",
        ));
    }
    if trip.consecutive_failures == Some(0) {
        return Err(ConfigError::new(
            "trip.consecutive_failures",
            "must be at least 1",
        ));
    }
    if let Some(rate) = &trip.failure_rate {
        check_fraction("trip.failure_rate.threshold", rate.threshold)?;
        check_window("trip.failure_rate.window", rate.window)?;
        check_min_calls("trip.failure_rate.min_calls", rate.min_calls)?;
    }
    if let Some(slow) = &trip.slow_call {
        if slow.duration.is_zero() || slow.duration > MAX_WINDOW {
            return Err(ConfigError::new(
                "trip.slow_call.duration",
                "must be greater than zero and at most a day",
            ));
        }
        check_fraction("trip.slow_call.rate", slow.rate)?;
        check_window("trip.slow_call.window", slow.window)?;
        check_min_calls("trip.slow_call.min_calls", slow.min_calls)?;
    }
    check_open(&config.open)?;
    check_half_open(&config.half_open)
}

fn check_open(open: &OpenConfig) -> Result<(), ConfigError> {
    if open.base < Duration::from_millis(1) {
        return Err(ConfigError::new("open.base", "must be at least 1ms"));
    }
    if !(open.backoff.is_finite() && open.backoff >= 1.0) {
        return Err(ConfigError::new(
            "open.backoff",
            format!("must be a number ≥ 1.0, got {}", open.backoff),
        ));
    }
    if open.max < open.base {
        return Err(ConfigError::new("open.max", "must be at least open.base"));
    }
    if open.max > Duration::from_secs(365 * 24 * 3600) {
        return Err(ConfigError::new("open.max", "must be at most a year"));
    }
    if !(open.jitter.is_finite() && (0.0..1.0).contains(&open.jitter)) {
        return Err(ConfigError::new(
            "open.jitter",
            format!("must be in [0, 1), got {}", open.jitter),
        ));
    }
    Ok(())
}

fn check_half_open(half_open: &HalfOpenConfig) -> Result<(), ConfigError> {
    if half_open.successes_to_close == 0 {
        return Err(ConfigError::new(
            "half_open.successes_to_close",
            "must be at least 1",
        ));
    }
    if half_open.successes_to_close > MAX_SUCCESSES_TO_CLOSE {
        return Err(ConfigError::new(
            "half_open.successes_to_close",
            format!("must be at most {MAX_SUCCESSES_TO_CLOSE}"),
        ));
    }
    if let Probes::Limited(n) = half_open.probes {
        if n.get() > MAX_PROBES {
            return Err(ConfigError::new(
                "half_open.probes",
                format!("must be at most {MAX_PROBES} (or \"all\")"),
            ));
        }
    }
    Ok(())
}

/// Largest limited probe count (the in-flight count has 20 bits in the state word).
pub const MAX_PROBES: u32 = (1 << 20) - 2;
/// Largest `successes_to_close` (20 bits in the state word).
pub const MAX_SUCCESSES_TO_CLOSE: u32 = (1 << 20) - 1;

fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}

fn check_fraction(field: &str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && value > 0.0 && value <= 1.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be in (0, 1], got {value}"),
        ))
    }
}

/// Longest detector window (and slow-call threshold): a day.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);

fn check_window(field: &str, window: Duration) -> Result<(), ConfigError> {
    if window < Duration::from_millis(u64::from(WINDOW_BUCKETS)) {
        Err(ConfigError::new(
            field,
            format!("must be at least {WINDOW_BUCKETS}ms"),
        ))
    } else if window > MAX_WINDOW {
        Err(ConfigError::new(field, "must be at most a day"))
    } else {
        Ok(())
    }
}

fn check_min_calls(field: &str, min_calls: u32) -> Result<(), ConfigError> {
    if min_calls == 0 {
        Err(ConfigError::new(field, "must be at least 1"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
