//! The simulator's inputs as a flat list of named settings — the `tolerant simulate` flags, the dashboard's sliders
//! and the `/api/simulate` query use the same names — turned into a [`Scenario`], with errors naming the setting.
//!
//! Durations are written as seconds (`30`, `0.25`) or with a unit (`30s`, `250ms`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::config::{
    BreakerConfig, MAX_PROBES, MAX_SUCCESSES_TO_CLOSE, Probes, RawBreakerConfig, RawTripConfig,
};
use crate::sim::checks::{check_count, check_duration};
use crate::sim::scenario::{
    CallFailure, MAX_WINDOW, Model, Pattern, RawScenario, Scenario, ScenarioError, Schedule,
    Upstream, Warmup, Workload,
};

/// Largest consecutive-failure threshold a setting may ask for.
pub const MAX_THRESHOLD: u32 = 1_000_000;

/// The half-open policy: the idealised model's "each arriving request may probe", or the breaker's own limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HalfOpen {
    /// Every arrival is let through while half-open (`every-arrival`).
    EveryArrival,
    /// At most this many probes in flight (`probes:N`).
    Probes(u32),
}

impl fmt::Display for HalfOpen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HalfOpen::EveryArrival => f.write_str("every-arrival"),
            HalfOpen::Probes(n) => write!(f, "probes:{n}"),
        }
    }
}

/// A half-open setting that is not `every-arrival` nor `probes:N` with N in 1..=[`MAX_PROBES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidHalfOpen {
    /// Neither `every-arrival` nor `probes:…`.
    #[error("expected every-arrival or probes:N, got \"{0}\"")]
    Unknown(String),
    /// `probes:` followed by something that is not a whole number.
    #[error("expected probes:N with N a whole number, got \"{0}\"")]
    NotANumber(String),
    /// `probes:N` with N outside 1..=MAX_PROBES.
    #[error("N must be between 1 and {MAX_PROBES}, got {0}")]
    OutOfRange(u32),
}

impl FromStr for HalfOpen {
    type Err = InvalidHalfOpen;
    fn from_str(text: &str) -> Result<Self, InvalidHalfOpen> {
        if text == "every-arrival" {
            return Ok(HalfOpen::EveryArrival);
        }
        let count = text
            .strip_prefix("probes:")
            .ok_or_else(|| InvalidHalfOpen::Unknown(text.to_owned()))?;
        let n: u32 = count
            .parse()
            .map_err(|_| InvalidHalfOpen::NotANumber(text.to_owned()))?;
        if n == 0 || n > MAX_PROBES {
            return Err(InvalidHalfOpen::OutOfRange(n));
        }
        Ok(HalfOpen::Probes(n))
    }
}

impl Serialize for HalfOpen {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HalfOpen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(de::Error::custom)
    }
}

/// A simulator duration that could not be read or is out of bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidDuration {
    /// Longer than a day.
    #[error("must be at most {} seconds", MAX_WINDOW.as_secs())]
    TooLong,
    /// A negative (or infinite) number of seconds.
    #[error("must be a duration of 0 or more, got {0}")]
    Negative(String),
    /// Neither a number of seconds nor a humantime duration.
    #[error("invalid duration \"{text}\" ({reason}); write e.g. 30 or \"30s\"")]
    Unreadable {
        /// The text as written.
        text: String,
        /// Why humantime refused it.
        reason: String,
    },
}

/// Parse a duration written as seconds (`30`, `0.5`) or with a unit (`30s`, `250ms`); at most a day.
pub fn parse_duration(text: &str) -> Result<Duration, InvalidDuration> {
    let text = text.trim();
    let duration = match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds >= 0.0 => {
            if seconds > MAX_WINDOW.as_secs_f64() {
                return Err(InvalidDuration::TooLong);
            }
            Duration::from_secs_f64(seconds)
        }
        Ok(seconds) => return Err(InvalidDuration::Negative(seconds.to_string())),
        Err(_) => humantime::parse_duration(text).map_err(|e| InvalidDuration::Unreadable {
            text: text.to_owned(),
            reason: e.to_string(),
        })?,
    };
    if duration > MAX_WINDOW {
        return Err(InvalidDuration::TooLong);
    }
    Ok(duration)
}

/// Durations as seconds (a number) or humantime text, both ways.
mod seconds {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        struct DurationVisitor;
        impl Visitor<'_> for DurationVisitor {
            type Value = Duration;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("seconds (a number) or a duration such as \"30s\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
                parse_duration(&v.to_string()).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
                parse_duration(&v.to_string()).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
                parse_duration(&v.to_string()).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
                parse_duration(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(DurationVisitor)
    }
}

/// Every input of a simulation, with the idealised model's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Simulated time.
    #[serde(with = "seconds")]
    pub window: Duration,
    /// When the outage starts.
    #[serde(with = "seconds")]
    pub outage_start: Duration,
    /// How long it lasts (each time, with `healthy`).
    #[serde(with = "seconds")]
    pub outage: Duration,
    /// Healthy time between outages: set, the outage repeats (on/off periods); zero = once.
    #[serde(with = "seconds")]
    pub healthy: Duration,
    /// Consecutive failures that trip the breaker.
    pub threshold: u32,
    /// How long the breaker stays open.
    #[serde(with = "seconds")]
    pub open_window: Duration,
    /// Multiplier of the open window per repeated trip (1 = fixed).
    pub backoff: f64,
    /// Probe successes that close it.
    pub successes_to_close: u32,
    /// Half-open policy.
    pub half_open: HalfOpen,
    /// Requests per second (over all instances); with `users`, ignored.
    pub rate: f64,
    /// Closed workload: this many users thinking `think_min`…`think_max` between requests (0 = constant rate).
    pub users: u32,
    /// Shortest think time.
    #[serde(with = "seconds")]
    pub think_min: Duration,
    /// Longest think time.
    #[serde(with = "seconds")]
    pub think_max: Duration,
    /// Share of requests that call the dependency.
    pub share: f64,
    /// The caller's timeout: what a hanging call costs.
    #[serde(with = "seconds")]
    pub timeout: Duration,
    /// What a successful call costs.
    #[serde(with = "seconds")]
    pub latency: Duration,
    /// How failing calls fail.
    pub fault: CallFailure,
    /// Share of calls that fail during the outage (1 = all).
    pub failure_rate: f64,
    /// Instances of the caller, one breaker each.
    pub instances: u32,
    /// Jitter of the open window, a fraction in [0, 1).
    pub jitter: f64,
    /// Workers per instance (0 = unbounded).
    pub workers: u32,
    /// Calls per second the dependency serves while warming up after an outage (0 = no warm-up).
    pub warm_capacity: f64,
    /// How long it warms up.
    #[serde(with = "seconds")]
    pub warmup: Duration,
    /// Seed of every draw.
    pub seed: u64,
    /// When the breaker learns a call's outcome (`at-timeout` or `published`).
    pub model: Model,
}

impl Default for Settings {
    /// The idealised model: 60 s, one 30 s hard outage from 10 s, 5 requests a second each failing after a 1 s
    /// timeout, a 5-consecutive-failures breaker open for 10 s, every arrival probing, 2 successes to close.
    fn default() -> Self {
        Settings {
            window: Duration::from_secs(60),
            outage_start: Duration::from_secs(10),
            outage: Duration::from_secs(30),
            healthy: Duration::ZERO,
            threshold: 5,
            open_window: Duration::from_secs(10),
            backoff: 1.0,
            successes_to_close: 2,
            half_open: HalfOpen::EveryArrival,
            rate: 5.0,
            users: 0,
            think_min: Duration::from_secs(1),
            think_max: Duration::from_secs(10),
            share: 1.0,
            timeout: Duration::from_secs(1),
            latency: Duration::ZERO,
            fault: CallFailure::Hang,
            failure_rate: 1.0,
            instances: 1,
            jitter: 0.0,
            workers: 0,
            warm_capacity: 0.0,
            warmup: Duration::from_secs(10),
            seed: 1,
            model: Model::AtTimeout,
        }
    }
}

impl Settings {
    /// The published simulator's defaults and model: 60 s, one 18 s hard outage from 20 s, 20 requests a second
    /// each failing after a 3 s timeout, a 5-consecutive-failures breaker open for 10 s, every arrival probing,
    /// 2 successes to close, outcomes seen at once.
    pub fn published() -> Self {
        Settings {
            outage_start: Duration::from_secs(20),
            outage: Duration::from_secs(18),
            rate: 20.0,
            timeout: Duration::from_secs(3),
            model: Model::Published,
            ..Settings::default()
        }
    }

    /// The defaults of `model`: [`Settings::published`] for the published model, [`Settings::default`] else.
    pub fn defaults_of(model: Model) -> Self {
        match model {
            Model::Published => Settings::published(),
            Model::AtTimeout => Settings::default(),
        }
    }

    /// The breaker these settings describe (consecutive-failure detector), unchecked: [`Settings::scenario`]
    /// checks it.
    pub fn breaker_config(&self) -> RawBreakerConfig {
        let mut config = RawBreakerConfig {
            trip: RawTripConfig {
                consecutive_failures: Some(self.threshold),
                failure_rate: None,
                last_calls: None,
                slow_call: None,
            },
            ..RawBreakerConfig::default()
        };
        config.open.base = self.open_window;
        config.open.backoff = self.backoff;
        // Room above the base for backoff and for jitter in both directions.
        let ceiling = self.open_window.as_secs_f64() * (1.0 + self.jitter) * self.backoff.powi(6);
        config.open.max =
            Duration::from_secs_f64(ceiling.min(MAX_WINDOW.as_secs_f64())).max(self.open_window);
        config.open.jitter = self.jitter;
        config.half_open.probes = match self.half_open {
            HalfOpen::EveryArrival => Probes::All,
            HalfOpen::Probes(n) => Probes::limited(n).unwrap_or_default(),
        };
        config.half_open.successes_to_close = self.successes_to_close;
        config
    }

    /// The scenario, every setting checked; the error names the setting.
    pub fn scenario(&self) -> Result<Scenario, ScenarioError> {
        check_count("threshold", self.threshold, MAX_THRESHOLD)?;
        check_duration(
            "open_window",
            self.open_window,
            Duration::from_millis(1),
            MAX_WINDOW,
        )?;
        if !(self.backoff.is_finite() && (1.0..=10.0).contains(&self.backoff)) {
            return Err(ScenarioError::new(
                "backoff",
                format!("must be between 1 and 10, got {}", self.backoff),
            ));
        }
        check_count(
            "successes_to_close",
            self.successes_to_close,
            MAX_SUCCESSES_TO_CLOSE,
        )?;
        if !(self.jitter.is_finite() && (0.0..1.0).contains(&self.jitter)) {
            return Err(ScenarioError::new(
                "jitter",
                format!("must be in [0, 1), got {}", self.jitter),
            ));
        }
        if !(self.warm_capacity.is_finite() && self.warm_capacity >= 0.0) {
            return Err(ScenarioError::new(
                "warm_capacity",
                "must be 0 (no warm-up) or more",
            ));
        }
        let workload = if self.users > 0 {
            Workload::Closed {
                users: self.users,
                think_min: self.think_min,
                think_max: self.think_max,
                share: self.share,
            }
        } else {
            Workload::Open {
                rate: self.rate,
                share: self.share,
            }
        };
        let schedule = if self.healthy.is_zero() {
            Schedule::Once {
                start: self.outage_start,
                length: self.outage,
            }
        } else {
            Schedule::Periodic {
                start: self.outage_start,
                on: self.outage,
                off: self.healthy,
            }
        };
        Scenario::try_from(RawScenario {
            window: self.window,
            workload,
            upstream: Upstream {
                schedule,
                failure_rate: self.failure_rate,
                pattern: Pattern::Random,
                kind: self.fault,
                timeout: self.timeout,
                latency: self.latency,
                warmup: (self.warm_capacity > 0.0).then_some(Warmup {
                    capacity: self.warm_capacity,
                    length: self.warmup,
                }),
            },
            breaker: BreakerConfig::try_from(self.breaker_config())
                .map_err(ScenarioError::of_breaker)?,
            instances: self.instances,
            workers: (self.workers > 0).then_some(self.workers),
            seed: self.seed,
            log_calls: false,
            model: self.model,
            callers: Vec::new(),
        })
    }
}

impl TryFrom<&Settings> for Scenario {
    type Error = ScenarioError;

    /// [`Settings::scenario`].
    fn try_from(settings: &Settings) -> Result<Self, ScenarioError> {
        settings.scenario()
    }
}
