//! The services further up the call chain in one pass ([`Caller`]): each instance's breakers on the next service
//! down, asked outermost first before the breaker in front of the dependency, told a call's outcome when the
//! service below answers (or at their own timeout, if sooner), and what each of them did, per second.
//!
//! A rejection anywhere down the chain is a failure, at once, for every breaker above it (the service below
//! answers 5xx without waiting); a breaker that rejects stops the call there, so the ones below see nothing.

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
        Chain {
            breakers,
            reach_ns,
            pending: BinaryHeap::new(),
            order: 0,
            published: scenario.model() == Model::Published,
            rejected: vec![vec![0; seconds]; callers.len()],
        }
    }

    /// Permits of every caller of `instance`, outermost first; `None` when one rejected the call (counted in
    /// `second`), the ones above it told of a failure at once.
    pub(crate) fn acquire(&mut self, instance: usize, second: usize) -> Option<Vec<OwnedPermit>> {
        let mut held = Vec::new();
        for (hop, (breaker, _)) in self.breakers.get(instance)?.iter().enumerate() {
            match breaker.try_acquire_owned() {
                Ok(permit) => held.push(permit),
                Err(_) => {
                    self.rejected[hop][second] += 1;
                    fail_now(held);
                    return None;
                }
            }
        }
        Some(held)
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
        for (permit, &reach) in held.into_iter().zip(&self.reach_ns) {
            if cost_ns == 0 || self.published {
                permit.record(outcome);
                continue;
            }
            let outcome = if cost_ns > reach {
                Outcome::Failure
            } else {
                outcome
            };
            self.order += 1;
            self.pending.push(Reverse(Pending {
                end_ns: at_ns + cost_ns.min(reach),
                order: self.order,
                permit,
                outcome,
            }));
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

/// Every caller in `held` told of a failure now: the service below answered 5xx at once.
pub(crate) fn fail_now(held: Vec<OwnedPermit>) {
    for permit in held {
        permit.record(Outcome::Failure);
    }
}
