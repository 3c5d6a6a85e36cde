//! The driver itself: virtual users as tokio tasks sharing the run's clock, stop, records and seconds.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::config::{LoadConfig, LoadSettings, UserShare};
use super::mix::PreparedWorkload;
use super::report::{DriverFailures, EndpointReport, LoadReport};
use super::session::{ClientSession, CookieJar, OutgoingRequest, Target};
use super::stats::{Recorder, SecondSink};
use super::step::Step;
use super::user_log::{Sample, UserLog, UserLogs};

/// A request to this path panics inside the driver (how a bug in a request would); unit tests only.
#[cfg(test)]
pub(super) const PANICKING_PATH: &str = "/__panics";

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
