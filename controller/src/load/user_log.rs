//! Each virtual user's own log of completed requests, moved into the run's one [`Recorder`] once a second.
//!
//! Why per user: one recorder behind one process-wide mutex put every request of every user through the
//! same lock, and held it while a closed second's histograms were summarised and serialised. Here a user
//! appends a 64-byte [`Sample`] to its own log (a lock only that user and, once a second, the run loop
//! ever take, so it is never waited on while requests flow), and the run loop alone owns the recorder:
//! it moves every user's samples in, then closes the second. Per-user histograms would keep the lock out
//! as well, but one HDR histogram over this range is about 190 KB and an endpoint needs three: gigabytes
//! at 10,000 users, where the samples of a second are kilobytes.
//!
//! The rows come out as a shared recorder made them: samples are recorded in order of the second they
//! completed in (within a second, order changes no histogram or count), and a sample that reaches its log
//! after its second was closed lands in the current one.

use std::time::Duration;

use parking_lot::Mutex;

use super::outcome::RequestOutcome;
use super::stats::Recorder;

/// One completed request, as [`Recorder::record`] takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Index into the workload's endpoint names.
    pub endpoint: usize,
    /// When the request completed, since the run started.
    pub since_start: Duration,
    pub outcome: RequestOutcome,
    pub latency: Duration,
    /// Open model: the pace the request was sent at (coordinated-omission correction); zero otherwise.
    pub expected_interval: Duration,
}

impl Sample {
    /// Records this request into `recorder`.
    pub fn record_into(self, recorder: &mut Recorder) {
        recorder.record(
            self.endpoint,
            self.since_start,
            self.outcome,
            self.latency,
            self.expected_interval,
        );
    }
}

/// What one user saw since the run loop last collected it, and the tasks it started.
#[derive(Debug, Default)]
struct Log {
    samples: Vec<Sample>,
    /// Tasks started per task index, over the whole run.
    tasks: Vec<u64>,
}

/// One user's log. Only its user writes it; the run loop empties it once a second.
#[derive(Debug)]
pub struct UserLog {
    log: Mutex<Log>,
}

impl UserLog {
    /// Keeps `sample` until the run loop next collects.
    pub fn record(&self, sample: Sample) {
        self.log.lock().samples.push(sample);
    }

    /// Counts a start of task `task`.
    pub fn count_task(&self, task: usize) {
        if let Some(count) = self.log.lock().tasks.get_mut(task) {
            *count += 1;
        }
    }
}

/// The logs of every user of a run, and the run loop's side of them.
#[derive(Debug)]
pub struct UserLogs {
    users: Vec<UserLog>,
    task_names: usize,
}

impl UserLogs {
    /// Logs for `users` users of a workload with `task_names` tasks.
    pub fn new(users: u32, task_names: usize) -> Self {
        UserLogs {
            users: (0..users)
                .map(|_| UserLog {
                    log: Mutex::new(Log {
                        samples: Vec::new(),
                        tasks: vec![0; task_names],
                    }),
                })
                .collect(),
            task_names,
        }
    }

    /// User `user`'s log.
    ///
    /// # Panics
    /// When `user` is not below the `users` the logs were made for.
    pub fn user(&self, user: u32) -> &UserLog {
        &self.users[user as usize]
    }

    /// Moves every user's samples into `recorder`, in order of the second they completed in, then closes
    /// every second before `second` (see [`Recorder::advance_to`]). `batch` is the caller's buffer, kept
    /// between calls so a second allocates nothing once the buffers have grown.
    pub fn collect(&self, recorder: &mut Recorder, second: u64, batch: &mut Vec<Sample>) {
        batch.clear();
        for user in &self.users {
            let mut log = user.log.lock();
            batch.append(&mut log.samples);
        }
        // Few distinct keys (the second or two since the last collection): close to linear.
        batch.sort_unstable_by_key(|sample| sample.since_start.as_secs());
        for sample in batch.drain(..) {
            sample.record_into(recorder);
        }
        recorder.advance_to(second);
    }

    /// Tasks started per task index, over every user.
    pub fn task_counts(&self) -> Vec<u64> {
        let mut total = vec![0; self.task_names];
        for user in &self.users {
            for (sum, count) in total.iter_mut().zip(&user.log.lock().tasks) {
                *sum += count;
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::stats::serialize_histogram;
    use crate::load::{OutcomeCounts, SecondStats};

    const OUTCOMES: [RequestOutcome; 4] = [
        RequestOutcome::Ok,
        RequestOutcome::Failed,
        RequestOutcome::Rejected,
        RequestOutcome::Timeout,
    ];

    /// User `user`'s `n`-th request: completion times spread over four seconds, users interleaved.
    fn sample(user: u32, n: u32) -> Sample {
        Sample {
            endpoint: ((user + n) % 3) as usize,
            since_start: Duration::from_micros(u64::from(n) * 97_003 + u64::from(user) * 1_009),
            outcome: OUTCOMES[((user * 7 + n) % 4) as usize],
            latency: Duration::from_micros(100 + u64::from((user * 31 + n * 17) % 5_000)),
            expected_interval: if n % 5 == 0 {
                Duration::from_millis(2)
            } else {
                Duration::ZERO
            },
        }
    }

    /// Totals in a comparable form: outcomes and the three histograms' bytes per endpoint.
    fn comparable(totals: &[crate::load::EndpointStats]) -> Vec<(OutcomeCounts, [Vec<u8>; 3])> {
        totals
            .iter()
            .map(|stats| {
                (
                    stats.outcomes,
                    [
                        serialize_histogram(&stats.latency),
                        serialize_histogram(&stats.latency_ok),
                        serialize_histogram(&stats.latency_failed),
                    ],
                )
            })
            .collect()
    }

    /// N users' logs, collected once a second, give the rows and totals one shared recorder gave when
    /// every request went through it in completion order — histograms byte for byte, counts exact.
    #[test]
    fn users_logs_merge_to_what_one_shared_recorder_records() {
        const USERS: u32 = 5;
        const PER_USER: u32 = 40;
        let warmup = Duration::from_secs(1);
        let mut shared = Recorder::new(3, warmup, None);
        let mut merged = Recorder::new(3, warmup, None);
        let logs = UserLogs::new(USERS, 2);
        let mut batch = Vec::new();

        let mut all: Vec<(u32, Sample)> = (0..USERS)
            .flat_map(|user| (0..PER_USER).map(move |n| (user, sample(user, n))))
            .collect();
        all.sort_by_key(|(_, sample)| sample.since_start);
        let mut samples = all.iter().copied().peekable();
        for second in 1..=4u64 {
            // The tick runs 30 ms late: samples of the next second are already in the logs, so the
            // collection must not let them close this second before its own samples are in.
            let tick = Duration::from_secs(second) + Duration::from_millis(30);
            // Samples completed before the tick reach both: the shared recorder in time order, the
            // logs per user.
            while let Some((user, sample)) = samples.next_if(|(_, s)| s.since_start < tick) {
                sample.record_into(&mut shared);
                logs.user(user).record(sample);
                logs.user(user).count_task(user as usize % 2);
            }
            shared.advance_to(second);
            logs.collect(&mut merged, second, &mut batch);
        }
        // A request that completed in second 1 but reached its log after second 4 closed lands in the
        // current second with either recorder.
        let late = sample(0, 11);
        assert_eq!(late.since_start.as_secs(), 1);
        late.record_into(&mut shared);
        logs.user(0).record(late);
        logs.collect(&mut merged, 0, &mut batch);
        assert!(samples.next().is_none(), "every sample was recorded");

        let (shared_seconds, shared_totals) = shared.finish(5);
        let (merged_seconds, merged_totals) = merged.finish(5);
        assert_eq!(merged_seconds, shared_seconds);
        assert_eq!(comparable(&merged_totals), comparable(&shared_totals));

        // Exact counts, counted here without any recorder.
        let measured: Vec<&Sample> = all
            .iter()
            .map(|(_, sample)| sample)
            .filter(|s| s.since_start >= warmup)
            .collect();
        let outcomes: OutcomeCounts =
            merged_totals
                .iter()
                .fold(OutcomeCounts::default(), |mut sum, stats| {
                    sum.merge(&stats.outcomes);
                    sum
                });
        assert_eq!(outcomes.total(), measured.len() as u64 + 1);
        assert_eq!(
            outcomes.ok,
            measured
                .iter()
                .filter(|s| s.outcome == RequestOutcome::Ok)
                .count() as u64
                + u64::from(late.outcome == RequestOutcome::Ok)
        );
        let per_second: u64 = merged_seconds
            .iter()
            .map(|s| SecondStats::outcomes(s).total())
            .sum();
        assert_eq!(per_second, all.len() as u64 + 1);
        assert_eq!(
            merged_seconds[4].outcomes().total(),
            1,
            "the late sample is in second 4"
        );
        assert_eq!(
            logs.task_counts().iter().sum::<u64>(),
            u64::from(USERS * PER_USER)
        );
    }
}
