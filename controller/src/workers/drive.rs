//! One run's load on the workers: the users split in proportion to each worker's stated capacity
//! ([`split_users`]), each worker assigned its share (the spec, the run's plan position, its users, a start a
//! moment away so they start together), what they send merged ([`super::merge`]) and every closed second sent on
//! as the one-process driver sends its own — the same [`crate::load::SecondSink`], so the run's watcher, stop
//! condition and live view see no difference.

use std::time::Duration;

use tokio::time::Instant;

use super::merge::{LostShare, Merge, WorkerShare};
use super::pool::{Arrived, Member, WorkerPool};
use super::wire::{Assignment, FromWorker, ToWorker};
use crate::load::{LoadReport, SecondSink};

/// How long after the assignments the shares start.
pub const START_DELAY: Duration = Duration::from_millis(500);
/// How long past the run's planned end (and the request timeout) a worker's totals may take.
pub const END_GRACE: Duration = Duration::from_secs(5);

/// What the run's workers are to drive.
#[derive(Debug, Clone)]
pub struct WorkersLoad {
    pub run: i64,
    /// The spec as written and the run's plan position.
    pub spec: String,
    pub sequence: usize,
    /// Where the testbed loads.
    pub target: String,
    pub users: u32,
    pub warmup: Duration,
    pub duration: Duration,
    /// The request timeout (in-flight requests may take this long past the end).
    pub timeout: Duration,
    pub endpoint_names: Vec<String>,
    pub task_names: Vec<String>,
}

/// What the workers drove: the merged report (its seconds empty: they went to the sink as they closed), the
/// workers lost on the way and every worker's part.
#[derive(Debug, Clone)]
pub struct WorkersRun {
    pub report: LoadReport,
    pub lost: Vec<LostShare>,
    pub shares: Vec<WorkerShare>,
}

/// Why the workers could not drive a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkersError {
    #[error("load.workers: no worker is connected")]
    NoWorkers,
    /// The spec asks for workers and this controller waits for none (it is run by `tolerant run`, which listens
    /// at `workers_listen`).
    #[error(
        "load.workers: this controller does not wait for load workers; run the spec with `tolerant run`"
    )]
    NoPool,
    #[error(
        "load.users: the {workers} connected worker(s) can hold {capacity} users, the run has {users}"
    )]
    NotEnoughCapacity {
        workers: usize,
        capacity: u64,
        users: u32,
    },
}

/// Users per worker, in proportion to `capacities`, largest remainders first (ties to the earlier worker), none
/// above its capacity. `None` when they cannot hold `users` together.
pub fn split_users(users: u32, capacities: &[u32]) -> Option<Vec<u32>> {
    let total: u64 = capacities.iter().map(|&c| u64::from(c)).sum();
    if total < u64::from(users) || capacities.is_empty() {
        return None;
    }
    let exact: Vec<(u64, u64)> = capacities
        .iter()
        .map(|&capacity| {
            let product = u64::from(users) * u64::from(capacity);
            (product / total, product % total)
        })
        .collect();
    let mut shares: Vec<u32> = exact.iter().map(|(whole, _)| *whole as u32).collect();
    let mut left = users - shares.iter().sum::<u32>();
    let mut order: Vec<usize> = (0..capacities.len()).collect();
    order.sort_by_key(|&index| std::cmp::Reverse(exact[index].1));
    while left > 0 {
        let mut gave = false;
        for &index in &order {
            if left > 0 && shares[index] < capacities[index] {
                shares[index] += 1;
                left -= 1;
                gave = true;
            }
        }
        if !gave {
            return None;
        }
    }
    Some(shares)
}

/// Drives `load` on the pool's workers until the planned end or until `stop` completes (the workers are told to
/// stop; what they had in flight is not counted). Closed seconds go to `sink` as they close; returns the merged
/// report (its seconds empty) and the workers lost on the way.
pub async fn run_until(
    pool: &WorkerPool,
    load: &WorkersLoad,
    sink: SecondSink,
    stop: impl std::future::Future<Output = ()>,
) -> Result<WorkersRun, WorkersError> {
    let (members, mut arrivals) = pool.begin_run();
    let ended = drive(pool, load, &members, &mut arrivals, &sink, stop).await;
    pool.end_run();
    ended
}

async fn drive(
    pool: &WorkerPool,
    load: &WorkersLoad,
    members: &[Member],
    arrivals: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Arrived)>,
    sink: &SecondSink,
    stop: impl std::future::Future<Output = ()>,
) -> Result<WorkersRun, WorkersError> {
    if members.is_empty() {
        return Err(WorkersError::NoWorkers);
    }
    let capacities: Vec<u32> = members.iter().map(|m| m.capacity).collect();
    let shares = split_users(load.users, &capacities).ok_or(WorkersError::NotEnoughCapacity {
        workers: members.len(),
        capacity: capacities.iter().map(|&c| u64::from(c)).sum(),
        users: load.users,
    })?;
    // Workers with no users (a tiny capacity beside large ones) sit this run out.
    let assigned: Vec<(&Member, u32, u32)> = {
        let mut first = 0;
        let mut assigned = Vec::new();
        for (member, &users) in members.iter().zip(&shares) {
            if users > 0 {
                assigned.push((member, first, users));
            }
            first += users;
        }
        assigned
    };
    let mut merge = Merge::new(
        load.endpoint_names.clone(),
        load.task_names.clone(),
        load.warmup,
        &(assigned.iter())
            .map(|(member, _, users)| (member.name.clone(), *users))
            .collect::<Vec<_>>(),
    );
    let start = Instant::now() + START_DELAY;
    for (index, (member, first_user, users)) in assigned.iter().enumerate() {
        let sent = member.to_worker.send(ToWorker::Assign(Assignment {
            run: load.run,
            spec: load.spec.clone(),
            sequence: load.sequence,
            target: load.target.clone(),
            first_user: *first_user,
            users: *users,
            of: load.users,
            start_in_ms: START_DELAY.as_millis() as u64,
        }));
        if sent.is_err() {
            lose(pool, &mut merge, member, index, sink);
        } else {
            pool.update(&member.name, |status| status.users = *users);
        }
    }
    let planned = load.warmup.saturating_add(load.duration);
    let last_second = planned.as_secs() + 1;
    let deadline = start + planned + load.timeout + END_GRACE;
    let index_of = |name: &str| {
        assigned
            .iter()
            .position(|(member, _, _)| member.name == name)
    };
    let mut stopped_at = None;
    let mut last_sent = vec![None; assigned.len()];
    tokio::pin!(stop);
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    while merge.running().next().is_some() {
        tokio::select! {
            arrived = arrivals.recv() => {
                let Some((name, arrived)) = arrived else { break };
                let Some(index) = index_of(&name) else { continue };
                let closed = match arrived {
                    Arrived::Message(FromWorker::Second(second)) if second.run == load.run => {
                        let requests: u64 = second.endpoints.iter().map(|e| e.outcomes.total()).sum();
                        let lag = lag_seconds(start, Instant::now(), second.second);
                        last_sent[index] = Some(second.second);
                        pool.update(&name, |status| {
                            status.requests_per_second = requests;
                            status.lag_seconds = lag;
                        });
                        merge.second(index, &second, last_second)
                    }
                    Arrived::Message(FromWorker::Done(totals)) if totals.run == load.run => {
                        merge.done(index, &totals)
                    }
                    Arrived::Message(_) => Ok(Vec::new()),
                    Arrived::Invalid(reason) => Err(reason),
                    Arrived::Gone => {
                        lose(pool, &mut merge, assigned[index].0, index, sink);
                        Ok(Vec::new())
                    }
                };
                match closed {
                    Ok(closed) => forward(sink, closed),
                    Err(reason) => {
                        // A worker that sends what cannot be merged is lost from here: nothing more of it counts.
                        tracing::warn!(worker = %name, "load worker's record refused: {reason}");
                        lose(pool, &mut merge, assigned[index].0, index, sink);
                    }
                }
            }
            () = &mut stop, if stopped_at.is_none() => {
                stopped_at = Some(Instant::now());
                for (member, _, _) in &assigned {
                    let _ = member.to_worker.send(ToWorker::Stop { run: load.run });
                }
            }
            _ = tick.tick() => {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                for index in merge.running().collect::<Vec<_>>() {
                    let lag = match last_sent[index] {
                        Some(second) => lag_seconds(start, now, second),
                        None => now.saturating_duration_since(start).as_secs(),
                    };
                    pool.update(&assigned[index].0.name, |status| status.lag_seconds = lag);
                }
            }
        }
    }
    let total = match stopped_at {
        Some(at) => at.saturating_duration_since(start).min(planned),
        None => planned,
    };
    let end_second = total.as_secs() + u64::from(total.subsec_nanos() > 0);
    let (closed, mut report, lost, shares) = merge.finish(end_second);
    forward(sink, closed);
    // Workers still running at the end (past the deadline) are lost too.
    for share in &lost {
        if let Some((member, _, _)) = assigned.iter().find(|(m, _, _)| m.name == share.worker) {
            pool.mark_lost(
                &share.worker,
                member.capacity,
                share.users,
                share.from_second,
            );
        }
    }
    if report.measured.is_zero() {
        report.measured = total.saturating_sub(load.warmup);
    }
    Ok(WorkersRun {
        report,
        lost,
        shares,
    })
}

/// How many seconds the record of `second` is behind a run that started at `start`, at `now`: second `k`
/// closes at `start + (k + 1) s`.
fn lag_seconds(start: Instant, now: Instant, second: u64) -> u64 {
    now.saturating_duration_since(start)
        .as_secs()
        .saturating_sub(second + 1)
}

/// Worker `index` (`member`) is lost from here: what closes without it goes to `sink`, and the pool shows it
/// lost with its users missing from the second after its last one.
fn lose(pool: &WorkerPool, merge: &mut Merge, member: &Member, index: usize, sink: &SecondSink) {
    forward(sink, merge.lost(index));
    // The end of the run does not matter here: only where its users start missing is shown.
    if let Some(share) = merge.lost_share(index, 0) {
        pool.mark_lost(
            &member.name,
            member.capacity,
            share.users,
            share.from_second,
        );
    }
}

fn forward(sink: &SecondSink, closed: Vec<crate::load::SecondStats>) {
    for second in closed {
        let _ = sink.send(second);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_split_by_capacity_with_the_remainder_to_the_largest_fractions() {
        assert_eq!(split_users(10, &[5, 5, 5]), Some(vec![4, 3, 3]));
        assert_eq!(split_users(20_000, &[5_000; 4]), Some(vec![5_000; 4]));
        assert_eq!(split_users(9, &[1_000, 2_000]), Some(vec![3, 6]));
        assert_eq!(split_users(7, &[2, 100]), Some(vec![0, 7]));
        // Never above a worker's capacity, and refused when they cannot hold the run.
        assert_eq!(split_users(5, &[2, 3]), Some(vec![2, 3]));
        assert_eq!(split_users(6, &[2, 3]), None);
        assert_eq!(split_users(1, &[]), None);
        for (users, capacities) in [
            (1_001u32, vec![300u32, 700, 110, 130]),
            (17, vec![5, 5, 5, 5]),
        ] {
            let shares = split_users(users, &capacities).unwrap();
            assert_eq!(shares.iter().sum::<u32>(), users);
            assert!(shares.iter().zip(&capacities).all(|(s, c)| s <= c));
        }
    }

    #[test]
    fn a_second_is_behind_once_the_next_one_has_closed() {
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        assert_eq!(lag_seconds(start, at(1_500), 0), 0);
        assert_eq!(lag_seconds(start, at(2_100), 0), 1);
        assert_eq!(lag_seconds(start, at(5_000), 1), 3);
        assert_eq!(lag_seconds(at(10), start, 4), 0);
    }
}
