//! The services further up the call chain in one pass ([`Caller`]): each instance's breakers on the next service
//! down, asked outermost first before the breaker in front of the dependency, told a call's outcome when the
//! service below answers (or at their own timeout, if sooner), and what each of them did, per second.
//!
//! A rejection anywhere down the chain is a failure for every breaker above it (the service below answers 5xx
//! without waiting for anything further down); a breaker that rejects stops the call there, so the ones below
//! see nothing. Each caller learns an outcome the latencies of the services between it and where the outcome was
//! made later ([`Caller::latency`]; at once with none, and always at once under [`Model::Published`]).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::breaker::{CircuitBreaker, OwnedPermit};
use crate::clock::{ManualClock, duration_nanos};
use crate::config::Mode;
use crate::event::MemorySink;
use crate::sim::scenario::{Caller, Model, Scenario};
use crate::sim::tally::{NANOS_PER_SECOND, timeline};
use crate::state::{Outcome, State};

/// What one caller's breakers (over all instances) did in a pass.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallerPass {
    /// Per second: transitions into open.
    pub(crate) opens_per_second: Vec<u64>,
    /// Per second: instance-seconds spent open.
    pub(crate) open_s: Vec<f64>,
    /// Per second: calls its breakers rejected.
    pub(crate) rejected: Vec<u64>,
    pub(crate) opens: u64,
    pub(crate) open_ns: u64,
}

/// An outcome a caller's breaker learns later: when the service below answers, or at its own timeout.
struct Pending {
    end_ns: u64,
    order: u64,
    permit: OwnedPermit,
    outcome: Outcome,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.end_ns, self.order).cmp(&(other.end_ns, other.order))
    }
}

/// The callers' breakers of one pass (none without breakers).
pub(crate) struct Chain {
    /// Per instance, per caller (outermost first).
    breakers: Vec<Vec<(Arc<CircuitBreaker>, Arc<MemorySink>)>>,
    /// Per caller: how long after a call is made its answer comes at the latest — its own timeout, or a deeper
    /// service's (the dependency's caller's included) if shorter.
    reach_ns: Vec<u64>,
    /// Per caller: the latencies of the services below it down to the dependency's caller, summed — how much
    /// later than the dependency's answer it learns the outcome (one entry more than callers: 0).
    below_ns: Vec<u64>,
    pending: BinaryHeap<Reverse<Pending>>,
    order: u64,
    published: bool,
    rejected: Vec<Vec<u64>>,
}

impl Chain {
    /// The callers' breakers of `scenario`, one per instance, on `clock`; none unless `guarded`.
    pub(crate) fn new(
        scenario: &Scenario,
        guarded: bool,
        clock: &Arc<ManualClock>,
        seconds: usize,
    ) -> Chain {
        let callers: &[Caller] = if guarded { scenario.callers() } else { &[] };
        let breakers = (0..scenario.instances())
            .map(|instance| {
                callers
                    .iter()
                    .enumerate()
                    .map(|(hop, caller)| {
                        let sink = MemorySink::new();
                        let breaker = CircuitBreaker::new(
                            format!("instance-{instance}-caller-{hop}"),
                            caller.breaker.clone().with_mode(Mode::Enforce),
                            clock.clone(),
                        )
                        .with_seed(scenario.seed().wrapping_add(hop as u64 + 1))
                        .with_sink(sink.clone());
                        (Arc::new(breaker), sink)
                    })
                    .collect()
            })
            .collect();
        let mut deepest = duration_nanos(scenario.upstream().timeout);
        let mut reach_ns: Vec<u64> = callers
            .iter()
            .rev()
            .map(|caller| {
                deepest = deepest.min(duration_nanos(caller.timeout));
                deepest
            })
            .collect();
        reach_ns.reverse();
        let mut below = 0;
        let mut below_ns: Vec<u64> = std::iter::once(0)
            .chain(callers.iter().rev().map(|caller| {
                below += duration_nanos(caller.latency);
                below
            }))
            .collect();
        below_ns.reverse();
        Chain {
            breakers,
            reach_ns,
            below_ns,
            pending: BinaryHeap::new(),
            order: 0,
            published: scenario.model() == Model::Published,
            rejected: vec![vec![0; seconds]; callers.len()],
        }
    }

    /// Permits of every caller of `instance`, outermost first; `None` when one rejected the call made at `at_ns`
    /// (counted in `second`), the ones above it told of a failure ([`Chain::reject`]).
    pub(crate) fn acquire(
        &mut self,
        instance: usize,
        at_ns: u64,
        second: usize,
    ) -> Option<Vec<OwnedPermit>> {
        let mut held = Vec::new();
        let hops = self.breakers.get(instance)?.len();
        for hop in 0..hops {
            match self.breakers[instance][hop].0.try_acquire_owned() {
                Ok(permit) => held.push(permit),
                Err(_) => {
                    self.rejected[hop][second] += 1;
                    self.reject(held, at_ns);
                    return None;
                }
            }
        }
        Some(held)
    }

    /// The call made at `at_ns` was rejected by the breaker below the callers in `held` (they are the outermost
    /// ones, in order): each learns of a failure once the services between it and that breaker have answered.
    pub(crate) fn reject(&mut self, held: Vec<OwnedPermit>, at_ns: u64) {
        let rejected_at = self.below_ns[held.len()];
        for (hop, permit) in held.into_iter().enumerate() {
            let delay = self.below_ns[hop] - rejected_at;
            self.learn(permit, at_ns, delay, Outcome::Failure);
        }
    }

    /// `permit`'s caller learns `outcome` `delay_ns` after `at_ns` (at once with no delay or under the published
    /// model).
    fn learn(&mut self, permit: OwnedPermit, at_ns: u64, delay_ns: u64, outcome: Outcome) {
        if delay_ns == 0 || self.published {
            permit.record(outcome);
            return;
        }
        self.order += 1;
        self.pending.push(Reverse(Pending {
            end_ns: at_ns + delay_ns,
            order: self.order,
            permit,
            outcome,
        }));
    }

    /// The call went down from every caller in `held`, made at `at_ns`, and costs its dependency's caller
    /// `cost_ns` with `outcome`: each caller learns it when the answer reaches it, or fails at its own reach.
    pub(crate) fn answer(
        &mut self,
        held: Vec<OwnedPermit>,
        at_ns: u64,
        cost_ns: u64,
        outcome: Outcome,
    ) {
        for (hop, permit) in held.into_iter().enumerate() {
            let (reach, due) = (self.reach_ns[hop], cost_ns + self.below_ns[hop]);
            let outcome = if due > reach {
                Outcome::Failure
            } else {
                outcome
            };
            self.learn(permit, at_ns, due.min(reach), outcome);
        }
    }

    /// When the next outcome is due.
    pub(crate) fn next_end(&self) -> Option<u64> {
        self.pending.peek().map(|Reverse(pending)| pending.end_ns)
    }

    /// Tell the next due outcome, the clock set to when it is due.
    pub(crate) fn end_next(&mut self, clock: &ManualClock) {
        if let Some(Reverse(pending)) = self.pending.pop() {
            clock.set(crate::clock::Instant::from_nanos(pending.end_ns));
            pending.permit.record(pending.outcome);
        }
    }

    /// What each caller's breakers did over `[0, window_ns)`, instances summed.
    pub(crate) fn finish(self, window_ns: u64, seconds: usize) -> Vec<CallerPass> {
        self.rejected
            .into_iter()
            .enumerate()
            .map(|(hop, rejected)| {
                let mut pass = CallerPass {
                    opens_per_second: vec![0; seconds],
                    open_s: vec![0.0; seconds],
                    rejected,
                    ..CallerPass::default()
                };
                for instance in &self.breakers {
                    let (breaker, sink) = &instance[hop];
                    let counters = breaker.snapshot().counters;
                    pass.opens += counters.opens;
                    pass.open_ns += counters.open_ms * 1_000_000;
                    timeline(
                        &sink.take(),
                        window_ns,
                        |second, state, ns| {
                            if state == State::Open {
                                pass.open_s[second] += ns as f64 / NANOS_PER_SECOND as f64;
                            }
                        },
                        |at| pass.opens_per_second[(at / NANOS_PER_SECOND) as usize] += 1,
                    );
                }
                pass
            })
            .collect()
    }
}
