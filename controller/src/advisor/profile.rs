//! A failure profile as the simulator's scenario: the traffic against a dependency failing as the profile says,
//! and when its fault is on (detection is counted from the start of a sustained fault).

use std::time::Duration;

use breaker::BreakerConfig;
use breaker::sim::{
    CallFailure, Pattern, RawScenario, Scenario, ScenarioError, Schedule, Upstream,
};

use crate::advisor::input::{FAULT_LEAD, Profile, ProfileKind, Traffic};

fn failing(hang: bool) -> CallFailure {
    if hang {
        CallFailure::Hang
    } else {
        CallFailure::Error
    }
}

impl Profile {
    /// When the fault is on, how much of the calls fail, and how a failing call fails.
    fn fault(&self) -> (Schedule, f64, CallFailure) {
        match self.kind {
            ProfileKind::Blips {
                length,
                every,
                hang,
            } => (
                Schedule::Periodic {
                    start: FAULT_LEAD.min(self.window / 4),
                    on: length,
                    off: every - length,
                },
                1.0,
                failing(hang),
            ),
            ProfileKind::Partial { rate, hang } => (
                Schedule::Once {
                    start: Duration::ZERO,
                    length: self.window,
                },
                rate,
                failing(hang),
            ),
            ProfileKind::Baseline { rate } => (
                Schedule::Once {
                    start: Duration::ZERO,
                    length: self.window,
                },
                rate,
                CallFailure::Error,
            ),
            ProfileKind::Hang { length } => (
                Schedule::Once {
                    start: FAULT_LEAD,
                    length,
                },
                1.0,
                CallFailure::Hang,
            ),
            ProfileKind::Outage { length } => (
                Schedule::Once {
                    start: FAULT_LEAD,
                    length,
                },
                1.0,
                CallFailure::Error,
            ),
        }
    }

    /// The fault's schedule (for the verification's fault schedule and for detection).
    pub fn schedule(&self) -> Schedule {
        self.fault().0
    }

    /// Share of calls that fail while the fault is on.
    pub fn failure_rate(&self) -> f64 {
        self.fault().1
    }

    /// How a failing call fails.
    pub fn fault_kind(&self) -> CallFailure {
        self.fault().2
    }

    /// Whether the profile is a sustained failure the breaker should detect (`constraints.detect_within`): an
    /// outage, a hang, a partial failure; blips pass before detection could help and the baseline must not trip.
    pub fn must_be_detected(&self) -> bool {
        matches!(
            self.kind,
            ProfileKind::Outage { .. } | ProfileKind::Hang { .. } | ProfileKind::Partial { .. }
        )
    }

    /// Whether the profile is a full outage (every call failing): its detection time is a cost term.
    pub fn is_full_outage(&self) -> bool {
        matches!(
            self.kind,
            ProfileKind::Outage { .. } | ProfileKind::Hang { .. }
        )
    }

    /// `[start, end)` of the first period the fault is on, seconds since the window's start.
    pub fn first_fault_s(&self) -> (f64, f64) {
        let window_ns = u64::try_from(self.window.as_nanos()).unwrap_or(u64::MAX);
        match self.schedule().outages(window_ns).first() {
            Some(&(start, end)) => (start as f64 / 1e9, end as f64 / 1e9),
            None => (0.0, 0.0),
        }
    }

    /// The simulator's scenario of this profile with `breaker` in front of the dependency.
    pub fn scenario(
        &self,
        traffic: &Traffic,
        breaker: BreakerConfig,
        seed: u64,
    ) -> Result<Scenario, ScenarioError> {
        let (schedule, failure_rate, kind) = self.fault();
        Scenario::try_from(RawScenario {
            window: self.window,
            workload: traffic.workload,
            upstream: Upstream {
                schedule,
                failure_rate,
                pattern: Pattern::Random,
                kind,
                timeout: traffic.timeout,
                latency: traffic.latency,
                warmup: None,
            },
            breaker,
            instances: traffic.instances,
            workers: traffic.workers,
            seed,
            log_calls: false,
            model: breaker::sim::Model::AtTimeout,
            callers: Vec::new(),
        })
    }
}
