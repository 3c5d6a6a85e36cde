//! When requests arrive in a simulated window: at a constant rate (open model), or from users who think between
//! tasks (closed model), every draw seeded and indexed by the request itself.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::clock::duration_nanos;
use crate::sim::draws::{STREAM_SHARE, STREAM_START, STREAM_THINK, unit};
use crate::sim::scenario::{Scenario, Workload};
use crate::sim::tally::{NANOS_PER_SECOND, Tally};

/// Where the requests come from, in time order.
///
/// Every random draw about a request is indexed by the request itself — its arrival number in the open model,
/// (user, task number) in the closed one — so results do not depend on the order the loop happens to visit
/// requests in. That lets the closed model skip ahead: without a worker pool, a task that does not call the
/// dependency changes nothing but the counts, so when a user is scheduled its tasks up to the next one that calls
/// the dependency are counted at once (`skip_free_tasks`), and only dependency calls go through the queue.
pub(super) enum Arrivals {
    Open {
        interval_ns: f64,
        next: u64,
    },
    Closed {
        due: BinaryHeap<Reverse<(u64, u32)>>,
        /// Tasks each user has done.
        tasks: Vec<u64>,
        think_min_ns: u64,
        think_span_ns: u64,
        skip_free_tasks: bool,
    },
}

impl Arrivals {
    pub(super) fn new(scenario: &Scenario, window_ns: u64, tally: &mut [Tally]) -> Arrivals {
        match scenario.workload() {
            Workload::Open { rate, .. } => Arrivals::Open {
                interval_ns: NANOS_PER_SECOND as f64 / rate,
                next: 0,
            },
            Workload::Closed {
                users,
                think_min,
                think_max,
                ..
            } => {
                let think_min_ns = duration_nanos(think_min);
                let think_span_ns = duration_nanos(think_max).saturating_sub(think_min_ns);
                let mut arrivals = Arrivals::Closed {
                    due: BinaryHeap::with_capacity(users as usize),
                    tasks: vec![0; users as usize],
                    think_min_ns,
                    think_span_ns,
                    skip_free_tasks: scenario.workers().is_none() && !scenario.log_calls(),
                };
                // Users start spread over one think time, not all at the first instant.
                for user in 0..users {
                    let offset = unit(scenario.seed(), STREAM_START, u64::from(user))
                        * (think_min_ns + think_span_ns) as f64;
                    arrivals.schedule(scenario, window_ns, tally, user, offset as u64);
                }
                arrivals
            }
        }
    }

    pub(super) fn peek(&self) -> Option<u64> {
        match self {
            Arrivals::Open { interval_ns, next } => Some((*next as f64 * interval_ns) as u64),
            Arrivals::Closed { due, .. } => due.peek().map(|Reverse((at, _))| *at),
        }
    }

    /// The next arrival: its time, its user (the arrival number in the open model) and the index of its draws.
    pub(super) fn pop(&mut self) -> Option<(u64, u32, u64)> {
        match self {
            Arrivals::Open { interval_ns, next } => {
                let at = (*next as f64 * *interval_ns) as u64;
                let index = *next;
                *next += 1;
                Some((at, 0, index))
            }
            Arrivals::Closed { due, tasks, .. } => due
                .pop()
                .map(|Reverse((at, user))| (at, user, task_index(user, tasks[user as usize]))),
        }
    }

    /// A closed-model user whose request `index` ended at `end_ns` thinks, then comes back.
    pub(super) fn user_done(
        &mut self,
        scenario: &Scenario,
        window_ns: u64,
        tally: &mut [Tally],
        user: u32,
        end_ns: u64,
        index: u64,
    ) {
        if let Arrivals::Closed {
            tasks,
            think_min_ns,
            think_span_ns,
            ..
        } = self
        {
            tasks[user as usize] += 1;
            let think = *think_min_ns
                + (unit(scenario.seed(), STREAM_THINK, index) * *think_span_ns as f64) as u64;
            self.schedule(
                scenario,
                window_ns,
                tally,
                user,
                end_ns.saturating_add(think),
            );
        }
    }

    /// Queue `user`'s next task at `at` — or, skipping free tasks, its next task that calls the dependency.
    pub(super) fn schedule(
        &mut self,
        scenario: &Scenario,
        window_ns: u64,
        tally: &mut [Tally],
        user: u32,
        mut at: u64,
    ) {
        let Arrivals::Closed {
            due,
            tasks,
            think_min_ns,
            think_span_ns,
            skip_free_tasks,
        } = self
        else {
            return;
        };
        let share = scenario.workload().share();
        let done = &mut tasks[user as usize];
        while *skip_free_tasks && at < window_ns {
            let index = task_index(user, *done);
            if calls_dependency(scenario.seed(), share, index) {
                break;
            }
            let second = &mut tally[(at / NANOS_PER_SECOND) as usize];
            second.requests += 1;
            second.successful += 1;
            *done += 1;
            at = at.saturating_add(
                *think_min_ns
                    + (unit(scenario.seed(), STREAM_THINK, index) * *think_span_ns as f64) as u64,
            );
        }
        if at < window_ns {
            due.push(Reverse((at, user)));
        }
    }
}

/// The draw index of a closed-model user's `task`-th task.
fn task_index(user: u32, task: u64) -> u64 {
    (u64::from(user) << 40) | (task & ((1 << 40) - 1))
}

/// Whether request `index` calls the dependency.
pub(super) fn calls_dependency(seed: u64, share: f64, index: u64) -> bool {
    share >= 1.0 || unit(seed, STREAM_SHARE, index) < share
}
