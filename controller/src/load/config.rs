//! How a load run is set: the caller's settings, checked into the driver's config, and a worker's share of the users.

use std::net::SocketAddr;
use std::time::Duration;

use super::error::LoadError;
use super::mix::{PreparedWorkload, Workload};
use crate::spec::{MAX_TIMEOUT, MAX_USERS, MAX_WRITTEN_DURATION, RATE_RANGE};

/// How a load run is to be driven, as its caller puts it. The driver takes only a [`LoadConfig`], made
/// from these by `LoadConfig::try_from`, which checks every field.
#[derive(Debug, Clone)]
pub struct LoadSettings {
    /// The frontend (or any HTTP/1.1 server) to load.
    pub target: SocketAddr,
    pub workload: Workload,
    pub users: u32,
    /// Closed model: uniform think time between a user's tasks (already scaled).
    pub think_time: (Duration, Duration),
    /// Open model: tasks per second over all users (replaces think time).
    pub rate: Option<f64>,
    /// Per-request client timeout.
    pub timeout: Duration,
    /// Time at the start that is recorded per second but left out of the run totals.
    pub warmup: Duration,
    /// Measured time after the warmup.
    pub duration: Duration,
    /// Seeds every user's random choices (user `i` uses a seed derived from `seed` and `i`).
    pub seed: u64,
}

/// A load run's config, valid by construction: only [`LoadSettings`] through `TryFrom` make one, each
/// field checked with an error naming it, so the driver is never handed users it cannot start, a rate
/// it cannot pace, a think time it cannot draw or a path it cannot request.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub(super) settings: LoadSettings,
    /// The workload with its request targets parsed.
    pub(super) prepared: PreparedWorkload,
    /// Which of the run's users these are, when the run's users are split between load workers.
    pub(super) share: Option<UserShare>,
}

/// One load worker's part of a run's users: users `first .. first + users` (this config's `users`) of `of`.
/// User `i` of the share is user `first + i` of the run: the same seed, the same place in the open model's
/// stagger, the same pace, so a run split between workers sends what one process would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserShare {
    pub first: u32,
    pub of: u32,
}

impl TryFrom<LoadSettings> for LoadConfig {
    type Error = LoadError;

    fn try_from(settings: LoadSettings) -> Result<Self, LoadError> {
        if settings.users == 0 {
            return Err(LoadError::NoUsers);
        }
        if settings.users > MAX_USERS {
            return Err(LoadError::UsersAbove(settings.users));
        }
        if let Some(rate) = settings.rate {
            let (min, max) = RATE_RANGE;
            if !(rate.is_finite() && (min..=max).contains(&rate)) {
                return Err(LoadError::BadRate(rate));
            }
        }
        let (min, max) = settings.think_time;
        if min > max {
            return Err(LoadError::BadThinkTime { min, max });
        }
        if max > MAX_WRITTEN_DURATION {
            return Err(LoadError::LongThinkTime(max));
        }
        if settings.timeout.is_zero() || settings.timeout > MAX_TIMEOUT {
            return Err(LoadError::BadTimeout(settings.timeout));
        }
        let prepared = settings.workload.prepare()?;
        Ok(LoadConfig {
            settings,
            prepared,
            share: None,
        })
    }
}

impl LoadConfig {
    /// What the config was made from.
    pub fn settings(&self) -> &LoadSettings {
        &self.settings
    }

    /// The same load as users `share.first ..` of a run of `share.of` users (see [`UserShare`]); the error
    /// names `load.users` when the share does not lie inside the run's users.
    pub fn with_share(mut self, share: UserShare) -> Result<Self, LoadError> {
        let end = u64::from(share.first) + u64::from(self.settings.users);
        if share.of > MAX_USERS || end > u64::from(share.of) {
            return Err(LoadError::BadShare {
                first: share.first,
                users: self.settings.users,
                of: share.of,
            });
        }
        self.share = Some(share);
        Ok(self)
    }

    /// Which of the run's users these are (all of them when not split).
    pub fn share(&self) -> UserShare {
        self.share.unwrap_or(UserShare {
            first: 0,
            of: self.settings.users,
        })
    }
}
