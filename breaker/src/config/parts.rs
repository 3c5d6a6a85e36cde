//! The checked parts of a breaker configuration — detectors, open window, half-open probing — each made only
//! valid from its raw table by `TryFrom` (the error names the field, e.g. `open.base: must be at least 1ms`), its
//! values read through accessors. Each serialises as its raw table and checks what it deserialises.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::raw::{
    RawFailureRateConfig, RawHalfOpenConfig, RawLastCallsConfig, RawOpenConfig, RawSlowCallConfig,
    RawTripConfig,
};
use crate::config::{
    ConfigError, DEFAULT_CONSECUTIVE_FAILURES, MAX_LAST_CALLS, MAX_PROBES, MAX_SUCCESSES_TO_CLOSE,
    MAX_WINDOW, Probes, WINDOW_BUCKETS,
};

/// The detectors, at least one set; any one that fires trips the breaker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawTripConfig", into = "RawTripConfig")]
pub struct TripConfig {
    consecutive_failures: Option<u32>,
    failure_rate: Option<FailureRateConfig>,
    last_calls: Option<LastCallsConfig>,
    slow_call: Option<SlowCallConfig>,
}

impl TripConfig {
    /// Trip after this many failures in a row (at least 1).
    pub fn consecutive_failures(&self) -> Option<u32> {
        self.consecutive_failures
    }

    /// Trip when the failure rate over a sliding window reaches a threshold.
    pub fn failure_rate(&self) -> Option<&FailureRateConfig> {
        self.failure_rate.as_ref()
    }

    /// Trip when the failure rate over the last `calls` calls reaches a threshold.
    pub fn last_calls(&self) -> Option<&LastCallsConfig> {
        self.last_calls.as_ref()
    }

    /// Trip when the rate of slow calls over a sliding window reaches a threshold.
    pub fn slow_call(&self) -> Option<&SlowCallConfig> {
        self.slow_call.as_ref()
    }
}

impl Default for TripConfig {
    /// Consecutive failures = [`DEFAULT_CONSECUTIVE_FAILURES`], as a missing `[trip]` table.
    fn default() -> Self {
        TripConfig {
            consecutive_failures: Some(DEFAULT_CONSECUTIVE_FAILURES),
            failure_rate: None,
            last_calls: None,
            slow_call: None,
        }
    }
}

impl TryFrom<RawTripConfig> for TripConfig {
    type Error = ConfigError;

    fn try_from(raw: RawTripConfig) -> Result<Self, ConfigError> {
        if raw.consecutive_failures.is_none()
            && raw.failure_rate.is_none()
            && raw.last_calls.is_none()
            && raw.slow_call.is_none()
        {
            return Err(ConfigError::new(
                "trip",
                "at least one detector is needed (consecutive_failures, failure_rate, last_calls or slow_call)",
            ));
        }
        if raw.consecutive_failures == Some(0) {
            return Err(ConfigError::new(
                "trip.consecutive_failures",
                "must be at least 1",
            ));
        }
        Ok(TripConfig {
            consecutive_failures: raw.consecutive_failures,
            failure_rate: raw
                .failure_rate
                .map(FailureRateConfig::try_from)
                .transpose()?,
            last_calls: raw.last_calls.map(LastCallsConfig::try_from).transpose()?,
            slow_call: raw.slow_call.map(SlowCallConfig::try_from).transpose()?,
        })
    }
}

impl From<TripConfig> for RawTripConfig {
    fn from(trip: TripConfig) -> Self {
        RawTripConfig {
            consecutive_failures: trip.consecutive_failures,
            failure_rate: trip.failure_rate.map(|rate| rate.0),
            last_calls: trip.last_calls.map(|last| last.0),
            slow_call: trip.slow_call.map(|slow| slow.0),
        }
    }
}

/// Failure rate over a sliding time window: threshold in (0, 1], window of 10ms to a day, at least one call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawFailureRateConfig", into = "RawFailureRateConfig")]
pub struct FailureRateConfig(RawFailureRateConfig);

impl FailureRateConfig {
    /// Failures / calls at or above which the breaker trips, in (0, 1].
    pub fn threshold(&self) -> f64 {
        self.0.threshold
    }

    /// Length of the sliding window (divided into [`WINDOW_BUCKETS`] buckets).
    pub fn window(&self) -> Duration {
        self.0.window
    }

    /// Calls (successes + failures) the window must hold before the rate counts.
    pub fn min_calls(&self) -> u32 {
        self.0.min_calls
    }
}

impl TryFrom<RawFailureRateConfig> for FailureRateConfig {
    type Error = ConfigError;

    fn try_from(raw: RawFailureRateConfig) -> Result<Self, ConfigError> {
        check_rate_window(
            "trip.failure_rate",
            "threshold",
            raw.threshold,
            raw.window,
            raw.min_calls,
        )?;
        Ok(FailureRateConfig(raw))
    }
}

impl From<FailureRateConfig> for RawFailureRateConfig {
    fn from(rate: FailureRateConfig) -> Self {
        rate.0
    }
}

/// Failure rate over the last `calls` calls: threshold in (0, 1], 1 to [`MAX_LAST_CALLS`] calls, 1 to `calls`
/// minimum calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawLastCallsConfig", into = "RawLastCallsConfig")]
pub struct LastCallsConfig(RawLastCallsConfig);

impl LastCallsConfig {
    /// Failures / calls at or above which the breaker trips, in (0, 1].
    pub fn threshold(&self) -> f64 {
        self.0.threshold
    }

    /// How many of the latest calls the window holds.
    pub fn calls(&self) -> u32 {
        self.0.calls
    }

    /// Calls the window must hold before the rate counts.
    pub fn min_calls(&self) -> u32 {
        self.0.min_calls
    }
}

impl TryFrom<RawLastCallsConfig> for LastCallsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawLastCallsConfig) -> Result<Self, ConfigError> {
        check_rate("trip.last_calls.threshold", raw.threshold)?;
        if !(1..=MAX_LAST_CALLS).contains(&raw.calls) {
            return Err(ConfigError::new(
                "trip.last_calls.calls",
                format!("must be between 1 and {MAX_LAST_CALLS}, got {}", raw.calls),
            ));
        }
        if !(1..=raw.calls).contains(&raw.min_calls) {
            return Err(ConfigError::new(
                "trip.last_calls.min_calls",
                format!(
                    "must be at least 1 and at most calls ({}), got {}",
                    raw.calls, raw.min_calls
                ),
            ));
        }
        Ok(LastCallsConfig(raw))
    }
}

impl From<LastCallsConfig> for RawLastCallsConfig {
    fn from(last: LastCallsConfig) -> Self {
        last.0
    }
}

/// Slow-call rate over a sliding time window: a slow call lasts more than zero and at most a day, the rate and
/// window as for [`FailureRateConfig`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawSlowCallConfig", into = "RawSlowCallConfig")]
pub struct SlowCallConfig(RawSlowCallConfig);

impl SlowCallConfig {
    /// A call that takes at least this long is slow.
    pub fn duration(&self) -> Duration {
        self.0.duration
    }

    /// Slow calls / calls at or above which the breaker trips, in (0, 1].
    pub fn rate(&self) -> f64 {
        self.0.rate
    }

    /// Length of the sliding window.
    pub fn window(&self) -> Duration {
        self.0.window
    }

    /// Calls the window must hold before the rate counts.
    pub fn min_calls(&self) -> u32 {
        self.0.min_calls
    }
}

impl TryFrom<RawSlowCallConfig> for SlowCallConfig {
    type Error = ConfigError;

    fn try_from(raw: RawSlowCallConfig) -> Result<Self, ConfigError> {
        if raw.duration.is_zero() || raw.duration > MAX_WINDOW {
            return Err(ConfigError::new(
                "trip.slow_call.duration",
                "must be greater than zero and at most a day",
            ));
        }
        check_rate_window(
            "trip.slow_call",
            "rate",
            raw.rate,
            raw.window,
            raw.min_calls,
        )?;
        Ok(SlowCallConfig(raw))
    }
}

impl From<SlowCallConfig> for RawSlowCallConfig {
    fn from(slow: SlowCallConfig) -> Self {
        slow.0
    }
}

/// A window detector's numbers (`{detector}.{rate_name}`, `.window`, `.min_calls`): the rate in (0, 1], the
/// window from [`WINDOW_BUCKETS`] ms to a day, at least one call.
fn check_rate_window(
    detector: &str,
    rate_name: &str,
    rate: f64,
    window: Duration,
    min_calls: u32,
) -> Result<(), ConfigError> {
    check_rate(&format!("{detector}.{rate_name}"), rate)?;
    if window < Duration::from_millis(u64::from(WINDOW_BUCKETS)) {
        return Err(ConfigError::new(
            format!("{detector}.window"),
            format!("must be at least {WINDOW_BUCKETS}ms"),
        ));
    }
    if window > MAX_WINDOW {
        return Err(ConfigError::new(
            format!("{detector}.window"),
            "must be at most a day",
        ));
    }
    if min_calls == 0 {
        return Err(ConfigError::new(
            format!("{detector}.min_calls"),
            "must be at least 1",
        ));
    }
    Ok(())
}

/// A rate threshold in (0, 1], or an error naming `field`.
fn check_rate(field: &str, rate: f64) -> Result<(), ConfigError> {
    if rate.is_finite() && rate > 0.0 && rate <= 1.0 {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("must be in (0, 1], got {rate}"),
        ))
    }
}

/// The open window: `base × backoff^(trips without a close)`, capped at `max`, with seeded uniform jitter. The base
/// is at least 1ms, the backoff at least 1, the cap between the base and a year, the jitter in [0, 1).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "RawOpenConfig", into = "RawOpenConfig")]
pub struct OpenConfig(RawOpenConfig);

impl OpenConfig {
    /// Window after the first trip.
    pub fn base(&self) -> Duration {
        self.0.base
    }

    /// Multiplier per repeated trip without a close (1.0 = fixed).
    pub fn backoff(&self) -> f64 {
        self.0.backoff
    }

    /// Cap on the window (jitter included).
    pub fn max(&self) -> Duration {
        self.0.max
    }

    /// Fraction of the window drawn uniformly in `[-jitter, +jitter]`, in [0, 1).
    pub fn jitter(&self) -> f64 {
        self.0.jitter
    }

    /// Seed of the jitter draw; when absent the registry's seed is used.
    pub fn seed(&self) -> Option<u64> {
        self.0.seed
    }
}

impl TryFrom<RawOpenConfig> for OpenConfig {
    type Error = ConfigError;

    fn try_from(open: RawOpenConfig) -> Result<Self, ConfigError> {
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
        Ok(OpenConfig(open))
    }
}

impl From<OpenConfig> for RawOpenConfig {
    fn from(open: OpenConfig) -> Self {
        open.0
    }
}

/// Half-open probing: at most [`MAX_PROBES`] probes at once (or all), 1 to [`MAX_SUCCESSES_TO_CLOSE`] successes to
/// close.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(try_from = "RawHalfOpenConfig", into = "RawHalfOpenConfig")]
pub struct HalfOpenConfig(RawHalfOpenConfig);

impl HalfOpenConfig {
    /// Probes admitted at once.
    pub fn probes(&self) -> Probes {
        self.0.probes
    }

    /// Probe successes that close the breaker.
    pub fn successes_to_close(&self) -> u32 {
        self.0.successes_to_close
    }
}

impl TryFrom<RawHalfOpenConfig> for HalfOpenConfig {
    type Error = ConfigError;

    fn try_from(half_open: RawHalfOpenConfig) -> Result<Self, ConfigError> {
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
        Ok(HalfOpenConfig(half_open))
    }
}

impl From<HalfOpenConfig> for RawHalfOpenConfig {
    fn from(half_open: HalfOpenConfig) -> Self {
        half_open.0
    }
}
