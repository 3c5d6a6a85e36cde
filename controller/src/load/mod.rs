//! Load driver: virtual users as tokio tasks, each with its own connection and cookies, following a
//! workload (the Online Boutique mix) with think time (closed model) or at a constant arrival rate
//! (open model), recording every request into per-endpoint HDR histograms per second and per run.
//!
//! Closed model: a user runs a task, thinks (uniform in the think-time range), runs the next one.
//! A slow response delays the user's next request, which hides latency (coordinated omission).
//! Open model: every user is paced at `users / rate` seconds per task whatever the responses do, and
//! a request that took longer than the pace is recorded with `record_correct`, which back-fills the
//! samples the stall kept from being sent.

mod budget;
mod custom;
mod mix;
mod outcome;
mod session;
mod stats;
mod step;
#[cfg(test)]
mod tests;
mod user_log;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::spec::{MAX_TIMEOUT, MAX_USERS, MAX_WRITTEN_DURATION, RATE_RANGE};

/// A request to this path panics inside the driver (how a bug in a request would); unit tests only.
#[cfg(test)]
const PANICKING_PATH: &str = "/__panics";

pub use budget::{
    DESCRIPTOR_RESERVE, DescriptorCost, DescriptorLimit, EMBEDDED_COST, EXTERNAL_COST,
    check_descriptor_budget, check_users, check_users_fit, open_descriptors,
    raise_descriptor_limit, users_within,
};
pub use custom::{
    CustomTask, CustomWorkload, JsonTemplate, RequestTemplate, Template, TemplateError, Values,
};
pub use mix::{
    CURRENCIES, InvalidPath, ONLINE_BOUTIQUE_TOML, PRODUCT_IDS, PreparedWorkload, Workload,
    endpoint, luhn_valid, online_boutique,
};
pub use outcome::{OutcomeCounts, REJECTED_HEADER, RequestOutcome};
pub use session::{
    Body, ClientSession, CookieJar, DriverError, OutgoingRequest, Target, is_drivers_own,
};
pub use stats::{
    EndpointSecond, EndpointStats, HISTOGRAM_HEADER, LatencySummary, MAX_LATENCY_US,
    OutcomeHistograms, Recorder, SecondSink, SecondStats, check_histogram_header,
    deserialize_histogram, latency_us, new_histogram, serialize_histogram,
};
pub use step::Step;
pub use user_log::{Sample, UserLog, UserLogs};

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
    settings: LoadSettings,
    /// The workload with its request targets parsed.
    prepared: PreparedWorkload,
    /// Which of the run's users these are, when the run's users are split between load workers.
    share: Option<UserShare>,
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

/// One endpoint's figures over the measured part of a run.
#[derive(Debug, Clone)]
pub struct EndpointReport {
    pub name: String,
    pub stats: EndpointStats,
}

impl EndpointReport {
    pub fn summary(&self) -> LatencySummary {
        LatencySummary::of(&self.stats.latency)
    }
}

/// Everything a load run saw.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// Per endpoint, measured part only (warmup excluded), in the workload's endpoint order.
    pub endpoints: Vec<EndpointReport>,
    /// Closed seconds, warmup included (empty when a second sink was given).
    pub seconds: Vec<SecondStats>,
    /// Tasks started per task name (warmup included).
    pub tasks: Vec<(String, u64)>,
    /// Length of the measured part.
    pub measured: Duration,
    /// Requests the driver itself failed, warmup included (in no outcome count).
    pub driver_failures: DriverFailures,
}

/// Requests the load generator itself failed — it could not open a connection for want of a
/// descriptor or port ([`DriverError`]), or the request's task panicked — counted apart from the
/// outcomes: they say nothing about the system under test, and a run with any is not a measurement of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DriverFailures {
    pub count: u64,
    /// The first one's reason.
    pub first: Option<String>,
}

impl DriverFailures {
    pub fn add(&mut self, reason: impl FnOnce() -> String) {
        self.count += 1;
        if self.first.is_none() {
            self.first = Some(reason());
        }
    }
}

impl LoadReport {
    /// Outcomes over every endpoint (measured part).
    pub fn outcomes(&self) -> OutcomeCounts {
        let mut total = OutcomeCounts::default();
        for endpoint in &self.endpoints {
            total.merge(&endpoint.stats.outcomes);
        }
        total
    }

    /// Successful requests per second over the measured part.
    pub fn ok_per_second(&self) -> f64 {
        self.outcomes().ok as f64 / self.measured.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// Requests per second, any outcome, over the measured part.
    pub fn requests_per_second(&self) -> f64 {
        self.outcomes().total() as f64 / self.measured.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    pub fn endpoint(&self, name: &str) -> Option<&EndpointReport> {
        self.endpoints.iter().find(|e| e.name == name)
    }
}

/// Summary of a report for printing or JSON.
#[derive(Debug, Clone, Serialize)]
pub struct EndpointSummary {
    pub name: String,
    pub outcomes: OutcomeCounts,
    pub latency: LatencySummary,
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("load.users: must be at least 1")]
    NoUsers,
    #[error("load.users: {0} is more than the maximum {MAX_USERS}")]
    UsersAbove(u32),
    #[error(
        "load.rate: {0} is not a number of tasks per second between {min} and {max}",
        min = RATE_RANGE.0,
        max = RATE_RANGE.1
    )]
    BadRate(f64),
    #[error("load.think_time: minimum {min:?} is above maximum {max:?}")]
    BadThinkTime { min: Duration, max: Duration },
    /// (A year: a spec's think time divided by the smallest `time_scale` stays below it.)
    #[error("load.think_time: maximum {0:?} is longer than {MAX_WRITTEN_DURATION:?}")]
    LongThinkTime(Duration),
    #[error("load.timeout: {0:?} is not above zero and at most {MAX_TIMEOUT:?}")]
    BadTimeout(Duration),
    #[error("load.users: users {first}..{} are not inside a run of {of} users", u64::from(*first) + u64::from(*users))]
    BadShare { first: u32, users: u32, of: u32 },
    #[error("load.path: {0}")]
    BadPath(#[from] InvalidPath),
    #[error(
        "load.users: {users} virtual users need more file descriptors than this process may open: \
         {per_user} each, at most {most} users in a limit of {soft} ({open} open now, \
         {fixed} kept for the rest); run fewer users or raise `ulimit -n`{hard_note}",
        hard_note = match hard {
            Some(hard) if hard > soft => format!(" (the hard limit is {hard})"),
            _ => String::new(),
        }
    )]
    TooManyUsers {
        users: u32,
        most: u64,
        per_user: u64,
        fixed: u64,
        soft: u64,
        open: u64,
        hard: Option<u64>,
    },
}

/// Drives load as configured and returns what it saw. Closed seconds go to `seconds_sink` as they
/// close when one is given (the report then holds no seconds).
pub async fn run(config: LoadConfig, seconds_sink: Option<SecondSink>) -> LoadReport {
    run_until(config, seconds_sink, std::future::pending()).await
}

/// Like [`run`], but ends early when `stop` completes (e.g. a stop condition held): the users are
/// cancelled at once (requests in flight are not counted) and the report covers the time until
/// then, the last second closed at the stop.
pub async fn run_until(
    config: LoadConfig,
    seconds_sink: Option<SecondSink>,
    stop: impl std::future::Future<Output = ()>,
) -> LoadReport {
    let share = config.share();
    let LoadConfig {
        settings: config,
        prepared: workload,
        ..
    } = config;
    let endpoint_names = config.workload.endpoint_names();
    let task_names = config.workload.task_names();
    let start = Instant::now();
    let end = instant_after(start, config.warmup.saturating_add(config.duration));
    // Owned by this loop alone: the users write their own logs, moved in here once a second.
    let mut recorder = Recorder::new(endpoint_names.len(), config.warmup, seconds_sink);
    if config_is_share(share, config.users) {
        // A load worker's seconds are merged with the others': the outcome histograms go along.
        recorder.keep_outcome_histograms();
    }
    let mut batch = Vec::new();
    let shared = Arc::new(Shared {
        logs: UserLogs::new(config.users, task_names.len()),
        driver_failures: Mutex::new(DriverFailures::default()),
        start,
        end,
        target: Target::new(config.target),
        workload,
        share,
        config,
    });

    let mut users = JoinSet::new();
    for user in 0..shared.config.users {
        let shared = Arc::clone(&shared);
        users.spawn(async move {
            let _ = tokio::time::timeout_at(end, virtual_user(&shared, user)).await;
        });
    }
    // Closes seconds on time even when no request completes (e.g. everything hangs). Polled beside the
    // users in this future, so it ends with the run whatever ends it.
    let stopped_at = {
        let mut second = 1u64;
        let tick = tokio::time::sleep_until(start + Duration::from_secs(second));
        tokio::pin!(tick);
        let mut ticking = start + Duration::from_secs(second) <= end;
        let mut stopped_at = None;
        tokio::pin!(stop);
        loop {
            tokio::select! {
                joined = users.join_next() => match joined {
                    None => break,
                    // A user whose task panicked outside a request (each request catches its own).
                    Some(Err(error)) => {
                        if let Some(message) = crate::panic::join_panic(error) {
                            shared
                                .driver_failures
                                .lock()
                                .add(|| format!("a virtual user panicked: {message}"));
                        }
                    }
                    Some(Ok(())) => {}
                },
                () = &mut stop, if stopped_at.is_none() => {
                    stopped_at = Some(Instant::now());
                    users.abort_all();
                }
                () = &mut tick, if ticking => {
                    shared.logs.collect(&mut recorder, second, &mut batch);
                    second += 1;
                    let at = start + Duration::from_secs(second);
                    ticking = at <= end;
                    tick.as_mut().reset(at);
                }
            }
        }
        stopped_at
    };

    let shared = Arc::try_unwrap(shared)
        .unwrap_or_else(|_| unreachable!("every user task and the ticker have ended"));
    let planned = shared.config.warmup + shared.config.duration;
    let total = match stopped_at {
        Some(at) => (at - start).min(planned),
        None => planned,
    };
    let end_second = total.as_secs() + u64::from(total.subsec_nanos() > 0);
    shared.logs.collect(&mut recorder, 0, &mut batch);
    let (seconds, totals) = recorder.finish(end_second);
    let task_counts = shared.logs.task_counts();
    LoadReport {
        endpoints: endpoint_names
            .into_iter()
            .zip(totals)
            .map(|(name, stats)| EndpointReport { name, stats })
            .collect(),
        seconds,
        tasks: task_names.into_iter().zip(task_counts).collect(),
        measured: total.saturating_sub(shared.config.warmup),
        driver_failures: shared.driver_failures.into_inner(),
    }
}

struct Shared {
    logs: UserLogs,
    /// Only requests the driver itself failed take this lock, never a measured one.
    driver_failures: Mutex<DriverFailures>,
    start: Instant,
    end: Instant,
    target: Target,
    workload: PreparedWorkload,
    share: UserShare,
    config: LoadSettings,
}

impl Shared {
    async fn step(
        &self,
        log: &UserLog,
        session: &mut ClientSession,
        step: Step,
        expected_interval: Duration,
    ) {
        if let Some(custom) = self.config.workload.definition() {
            if !custom.cookies {
                // Cookie sessions off: every request starts without cookies.
                session.cookies = CookieJar::default();
            }
        }
        let sent = Instant::now();
        let attempt = crate::panic::caught(async {
            #[cfg(test)]
            if step.uri.path() == PANICKING_PATH {
                panic!("a request to {PANICKING_PATH} panics (unit tests only)");
            }
            session
                .request_expecting(OutgoingRequest {
                    method: step.method,
                    uri: step.uri,
                    body: step.body,
                    headers: &step.headers,
                    expect: step.expect.as_deref(),
                })
                .await
        })
        .await;
        let outcome = match attempt {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(error)) => {
                self.driver_failures.lock().add(|| error.to_string());
                return;
            }
            Err(message) => {
                // Whatever the session was doing is abandoned with its connection.
                session.drop_connection();
                self.driver_failures
                    .lock()
                    .add(|| format!("a request panicked: {message}"));
                return;
            }
        };
        let done = Instant::now();
        log.record(Sample {
            endpoint: step.endpoint,
            since_start: done - self.start,
            outcome,
            latency: done - sent,
            expected_interval,
        });
    }
}

/// `at + duration`, saturating at a point far beyond any run instead of panicking on overflow.
fn instant_after(at: Instant, duration: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    at.checked_add(duration.min(FAR))
        .or_else(|| at.checked_add(Duration::from_secs(24 * 3600)))
        .unwrap_or(at)
}

/// Seed of user `user`'s random choices.
fn user_seed(seed: u64, user: u32) -> u64 {
    seed ^ (u64::from(user) + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)
}

/// Whether a config is one load worker's share of a run rather than the whole run.
fn config_is_share(share: UserShare, users: u32) -> bool {
    share.first != 0 || share.of != users
}

async fn virtual_user(shared: &Shared, user: u32) {
    let config = &shared.config;
    let log = shared.logs.user(user);
    // The user's place in the whole run (the same as `user` unless the run is split between workers).
    let user = shared.share.first + user;
    let all_users = shared.share.of;
    let mut rng = SmallRng::seed_from_u64(user_seed(config.seed, user));
    let mut session = ClientSession::new(shared.target.clone(), config.timeout);

    // Open model: a fixed pace per user, users staggered evenly over one pace.
    // (Saturating: a rate of almost nothing paces a user past the end of the run, not into a panic.)
    let pace = config.rate.map(|rate| {
        Duration::try_from_secs_f64(f64::from(all_users) / rate).unwrap_or(Duration::MAX)
    });
    let mut next_start = match pace {
        Some(pace) => {
            let offset = Duration::try_from_secs_f64(
                pace.as_secs_f64() * f64::from(user) / f64::from(all_users),
            )
            .unwrap_or(Duration::MAX);
            instant_after(shared.start, offset)
        }
        // Closed model: spread the users' first visits over the think-time range.
        None => instant_after(
            shared.start,
            random_between(&mut rng, Duration::ZERO, config.think_time.1),
        ),
    };
    tokio::time::sleep_until(next_start).await;

    let mut steps = Vec::with_capacity(4);
    config.workload.on_start(&mut rng, &mut steps);
    for step in steps.drain(..) {
        shared.step(log, &mut session, step, Duration::ZERO).await;
    }
    while Instant::now() < shared.end {
        if let Some(pace) = pace {
            tokio::time::sleep_until(next_start).await;
            next_start = instant_after(next_start, pace);
        }
        let task = shared.workload.next_task(&mut rng, &mut steps);
        log.count_task(task);
        for step in steps.drain(..) {
            shared
                .step(log, &mut session, step, pace.unwrap_or(Duration::ZERO))
                .await;
        }
        if pace.is_none() {
            let (min, max) = config.think_time;
            if !max.is_zero() {
                tokio::time::sleep(random_between(&mut rng, min, max)).await;
            }
        }
    }
}

fn random_between(rng: &mut SmallRng, min: Duration, max: Duration) -> Duration {
    if max <= min {
        return min;
    }
    let span = (max - min).as_nanos() as u64;
    min.saturating_add(Duration::from_nanos(rng.random_range(0..=span)))
}
