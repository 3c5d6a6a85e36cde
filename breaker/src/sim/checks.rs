//! The bounds of a simulation: every number of a [`RawScenario`] checked before anything is allocated, the error
//! naming the field it rejects.

use std::time::Duration;

use crate::clock::duration_nanos;
use crate::sim::scenario::{
    MAX_CALLERS, MAX_INSTANCES, MAX_PERIODS, MAX_RATE, MAX_REQUESTS, MAX_TIMEOUT, MAX_USERS,
    MAX_WARM_CAPACITY, MAX_WINDOW, MAX_WORKERS, MIN_THINK, MIN_WINDOW, RawScenario, Scenario,
    ScenarioError, Schedule, Workload,
};

/// `value` within `[min, max]`, or an error naming `field` and both bounds (`must be between 1ms and 10m`).
pub(crate) fn check_duration(
    field: &str,
    value: Duration,
    min: Duration,
    max: Duration,
) -> Result<(), ScenarioError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(ScenarioError::new(
            field,
            format!(
                "must be between {} and {}",
                humantime::format_duration(min),
                humantime::format_duration(max)
            ),
        ))
    }
}

/// A count of at least 1 and at most `max`, or an error naming `field` (`must be between 1 and 1000`).
pub(crate) fn check_count(field: &str, value: u32, max: u32) -> Result<(), ScenarioError> {
    if (1..=max).contains(&value) {
        Ok(())
    } else {
        Err(ScenarioError::new(
            field,
            format!("must be between 1 and {max}"),
        ))
    }
}

fn check_share(field: &str, value: f64, zero_allowed: bool) -> Result<(), ScenarioError> {
    let low_ok = if zero_allowed {
        value >= 0.0
    } else {
        value > 0.0
    };
    if value.is_finite() && low_ok && value <= 1.0 {
        Ok(())
    } else {
        let range = if zero_allowed { "[0, 1]" } else { "(0, 1]" };
        Err(ScenarioError::new(
            field,
            format!("must be in {range}, got {value}"),
        ))
    }
}

impl TryFrom<RawScenario> for Scenario {
    type Error = ScenarioError;

    /// Check every number against its bounds; the error names the first offending field.
    fn try_from(raw: RawScenario) -> Result<Self, ScenarioError> {
        raw.check()?;
        Ok(Scenario(raw))
    }
}

impl RawScenario {
    /// Check every number against its bounds; the error names the first offending field.
    fn check(&self) -> Result<(), ScenarioError> {
        check_duration("window", self.window, MIN_WINDOW, MAX_WINDOW)?;
        let window_s = self.window.as_secs_f64();
        match self.workload {
            Workload::Open { rate, share } => {
                if !(rate.is_finite() && rate > 0.0 && rate <= MAX_RATE) {
                    return Err(ScenarioError::new(
                        "rate",
                        format!("must be above 0 and at most {MAX_RATE}, got {rate}"),
                    ));
                }
                if rate * window_s > MAX_REQUESTS {
                    return Err(ScenarioError::new(
                        "rate",
                        format!("rate × window must be at most {MAX_REQUESTS} requests"),
                    ));
                }
                check_share("share", share, false)?;
            }
            Workload::Closed {
                users,
                think_min,
                think_max,
                share,
            } => {
                check_count("users", users, MAX_USERS)?;
                check_duration("think_min", think_min, MIN_THINK, MAX_WINDOW)?;
                if think_max < think_min || think_max > MAX_WINDOW {
                    return Err(ScenarioError::new(
                        "think_max",
                        "must be at least think_min and at most the longest window",
                    ));
                }
                if f64::from(users) * window_s / think_min.as_secs_f64() > MAX_REQUESTS {
                    return Err(ScenarioError::new(
                        "users",
                        format!(
                            "users × window / think_min must be at most {MAX_REQUESTS} requests"
                        ),
                    ));
                }
                check_share("share", share, false)?;
            }
        }
        let up = &self.upstream;
        check_share("failure_rate", up.failure_rate, true)?;
        check_duration("timeout", up.timeout, Duration::from_millis(1), MAX_TIMEOUT)?;
        if up.latency >= up.timeout {
            return Err(ScenarioError::new(
                "latency",
                "must be shorter than the timeout",
            ));
        }
        match up.schedule {
            Schedule::Once { start, length } => {
                if start > self.window {
                    return Err(ScenarioError::new(
                        "outage_start",
                        "must be inside the window",
                    ));
                }
                if length > self.window {
                    return Err(ScenarioError::new("outage", "must be at most the window"));
                }
            }
            Schedule::Periodic { start, on, off } => {
                if start > self.window {
                    return Err(ScenarioError::new(
                        "outage_start",
                        "must be inside the window",
                    ));
                }
                if on < Duration::from_millis(1) || on > self.window {
                    return Err(ScenarioError::new(
                        "outage",
                        "must be at least 1ms and at most the window",
                    ));
                }
                if off < Duration::from_millis(1) || off > self.window {
                    return Err(ScenarioError::new(
                        "healthy",
                        "must be at least 1ms and at most the window",
                    ));
                }
                let periods = duration_nanos(self.window) / duration_nanos(on + off);
                if periods > MAX_PERIODS {
                    return Err(ScenarioError::new(
                        "outage",
                        format!("at most {MAX_PERIODS} outages fit in one window"),
                    ));
                }
            }
        }
        if let Some(warm) = up.warmup {
            if !(warm.capacity.is_finite()
                && warm.capacity >= 1.0
                && warm.capacity <= MAX_WARM_CAPACITY)
            {
                return Err(ScenarioError::new(
                    "warm_capacity",
                    format!("must be between 1 and {MAX_WARM_CAPACITY} calls per second"),
                ));
            }
            if warm.length > self.window {
                return Err(ScenarioError::new("warmup", "must be at most the window"));
            }
        }
        check_count("instances", self.instances, MAX_INSTANCES)?;
        if let Some(workers) = self.workers {
            check_count("workers", workers, MAX_WORKERS)?;
        }
        if self.callers.len() > MAX_CALLERS {
            return Err(ScenarioError::new(
                "callers",
                format!("at most {MAX_CALLERS} callers up the chain"),
            ));
        }
        for (index, caller) in self.callers.iter().enumerate() {
            check_duration(
                &format!("callers[{index}].timeout"),
                caller.timeout,
                Duration::from_millis(1),
                MAX_TIMEOUT,
            )?;
            check_duration(
                &format!("callers[{index}].latency"),
                caller.latency,
                Duration::ZERO,
                MAX_TIMEOUT,
            )?;
        }
        Ok(())
    }
}
