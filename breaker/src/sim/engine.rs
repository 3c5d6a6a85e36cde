//! One pass over the window: arrivals and call completions in time order on a [`ManualClock`], each instance's
//! production [`CircuitBreaker`] asked for a permit at every arrival and told every outcome when the call ends.
//!
//! Order of events: at one instant, calls that end are recorded before requests that arrive (so a probe that
//! fails at `t` reopens the breaker before the arrival at `t` asks), and ends are taken in the order the calls
//! started. A request's fate (refused, rejected, what the upstream answers and what that costs) is decided when it
//! arrives and counted in that second; the breaker learns the outcome when the call ends.
//!
//! Costs: a hanging call holds its caller (and a worker) for the timeout, a successful one for the latency, an
//! instant error, a rejection and a request that does not call the dependency for nothing. Because every call of
//! one kind costs the same, calls end in the order they started within a kind: two FIFO queues, no heap.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::breaker::{CircuitBreaker, OwnedPermit};
use crate::clock::{ManualClock, duration_nanos};
use crate::config::Mode;
use crate::event::MemorySink;
use crate::sim::arrivals::{Arrivals, calls_dependency};
use crate::sim::chain::{CallerPass, Chain};
use crate::sim::draws::{STREAM_FAILURE, unit};
use crate::sim::scenario::{CallFailure, Model, Pattern, Scenario, Workload};
use crate::sim::tally::{NANOS_PER_SECOND, Tally, timeline};
use crate::state::{Outcome, State};

/// What became of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Every worker of its instance was busy.
    Refused,
    /// It does not call the dependency.
    NoDependency,
    /// The breaker rejected its call.
    Rejected,
    /// The breaker let its call through (closed).
    Admitted,
    /// The breaker let its call through as a half-open probe.
    Probe,
}

/// One request, for step-by-step comparisons ([`Scenario::log_calls`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CallRecord {
    /// When it arrived, nanoseconds since the window's start.
    pub at_ns: u64,
    /// The instance that served it.
    pub instance: u32,
    /// What the breaker (or the pool) did with it.
    pub decision: Decision,
    /// Whether the dependency failed it (only for calls that reached it).
    pub failed: bool,
    /// How long it held its caller.
    pub cost_ns: u64,
}

/// The result of one pass.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pass {
    pub(crate) seconds: Vec<Tally>,
    pub(crate) totals: Tally,
    /// Per second: time instance 0 spent closed, open, half-open (ns).
    pub(crate) state_ns: Vec<[u64; 3]>,
    /// Per second: instance-seconds spent not closed, over all instances.
    pub(crate) not_closed_s: Vec<f64>,
    /// Per second: instance-seconds spent open, over all instances.
    pub(crate) open_s: Vec<f64>,
    /// Per second: transitions into open, over all instances.
    pub(crate) opens_per_second: Vec<u64>,
    pub(crate) opens: u64,
    /// When a breaker first opened (any instance).
    pub(crate) first_open_ns: Option<u64>,
    pub(crate) open_ns: u64,
    pub(crate) half_open_ns: u64,
    pub(crate) pool_exhausted_at_ns: Option<u64>,
    pub(crate) calls: Vec<CallRecord>,
    /// What each caller further up the chain did, outermost first.
    pub(crate) callers: Vec<CallerPass>,
}

/// A call in flight.
struct InFlight {
    end_ns: u64,
    seq: u64,
    instance: u32,
    permit: Option<OwnedPermit>,
    outcome: Outcome,
}

/// Whether the fault is active at a (non-decreasing) time, and when the last outage ended.
struct FaultCursor {
    outages: Vec<(u64, u64)>,
    next: usize,
}

enum FaultPhase {
    Active,
    Healthy { last_end: Option<u64> },
}

impl FaultCursor {
    fn at(&mut self, t: u64) -> FaultPhase {
        while self.next < self.outages.len() && self.outages[self.next].1 <= t {
            self.next += 1;
        }
        match self.outages.get(self.next) {
            Some(&(start, _)) if start <= t => FaultPhase::Active,
            _ => FaultPhase::Healthy {
                last_end: self.next.checked_sub(1).map(|i| self.outages[i].1),
            },
        }
    }
}

/// Decides what the upstream answers to each call that reaches it.
struct UpstreamState {
    fault: FaultCursor,
    /// Calls that reached the upstream while the fault was active (for the even pattern).
    faulty_calls: u64,
    rate_millionths: u64,
    /// Cold-start accounting: the second being counted and the calls served in it.
    warm_second: u64,
    warm_calls: u64,
}

impl UpstreamState {
    /// Whether the call (arrival number `seq`, at `t`) fails.
    fn fails(&mut self, scenario: &Scenario, t: u64, index: u64) -> bool {
        let up = &scenario.upstream();
        match self.fault.at(t) {
            FaultPhase::Active => {
                let j = self.faulty_calls;
                self.faulty_calls += 1;
                match up.pattern {
                    Pattern::Random => {
                        unit(scenario.seed(), STREAM_FAILURE, index) < up.failure_rate
                    }
                    Pattern::Even => {
                        (j + 1) * self.rate_millionths / 1_000_000
                            > j * self.rate_millionths / 1_000_000
                    }
                }
            }
            FaultPhase::Healthy { last_end } => {
                let Some(warm) = up.warmup else { return false };
                let cold =
                    last_end.is_some_and(|end| t < end.saturating_add(duration_nanos(warm.length)));
                if !cold {
                    return false;
                }
                let second = t / NANOS_PER_SECOND;
                if second != self.warm_second {
                    self.warm_second = second;
                    self.warm_calls = 0;
                }
                self.warm_calls += 1;
                self.warm_calls as f64 > warm.capacity
            }
        }
    }

    /// Whether a call the breaker rejected at `t` would have been answered: the draw it would have had, not
    /// taken (for the even pattern the failure rate's draw too; a cold dependency counts as warm).
    fn would_succeed(&mut self, scenario: &Scenario, t: u64, index: u64) -> bool {
        match self.fault.at(t) {
            FaultPhase::Active => {
                unit(scenario.seed(), STREAM_FAILURE, index) >= scenario.upstream().failure_rate
            }
            FaultPhase::Healthy { .. } => true,
        }
    }

    /// Healthy again after at least one outage.
    fn recovered(&mut self, t: u64) -> bool {
        matches!(self.fault.at(t), FaultPhase::Healthy { last_end: Some(_) })
    }
}

/// One pass over the window, with each instance's breaker (`guarded`) or with none.
pub(crate) fn run(scenario: &Scenario, guarded: bool) -> Pass {
    let window_ns = duration_nanos(scenario.window());
    let seconds = usize::try_from(window_ns.div_ceil(NANOS_PER_SECOND)).unwrap_or(0);
    let instances = scenario.instances() as usize;
    let clock = Arc::new(ManualClock::with_unix_origin_ms(0));
    let config = scenario.breaker().clone().with_mode(Mode::Enforce);
    let breakers: Vec<(Arc<CircuitBreaker>, Arc<MemorySink>)> = if guarded {
        (0..instances)
            .map(|i| {
                let sink = MemorySink::new();
                let breaker = CircuitBreaker::new(
                    format!("instance-{i}->dependency"),
                    config.clone(),
                    clock.clone(),
                )
                .with_seed(scenario.seed())
                .with_sink(sink.clone());
                (Arc::new(breaker), sink)
            })
            .collect()
    } else {
        Vec::new()
    };
    let up = &scenario.upstream();
    let timeout_ns = duration_nanos(up.timeout);
    let latency_ns = duration_nanos(up.latency);
    let share = scenario.workload().share();
    let mut upstream = UpstreamState {
        fault: FaultCursor {
            outages: up.schedule.outages(window_ns),
            next: 0,
        },
        faulty_calls: 0,
        rate_millionths: (up.failure_rate * 1_000_000.0).round() as u64,
        warm_second: u64::MAX,
        warm_calls: 0,
    };
    let mut pass = Pass {
        seconds: vec![Tally::default(); seconds],
        ..Pass::default()
    };
    let mut busy = vec![0u32; instances];
    let mut arrivals = Arrivals::new(scenario, window_ns, &mut pass.seconds);
    // Calls in flight by cost: successes (latency) and hangs (timeout); each ends in start order.
    let mut slow_queue: VecDeque<InFlight> = VecDeque::new();
    let mut fast_queue: VecDeque<InFlight> = VecDeque::new();
    let mut seq: u64 = 0;
    let mut chain = Chain::new(scenario, guarded, &clock, seconds);

    loop {
        let next_arrival = arrivals.peek().filter(|&t| t < window_ns);
        let next_end = [slow_queue.front(), fast_queue.front()]
            .into_iter()
            .flatten()
            .map(|call| (call.end_ns, call.seq))
            .min()
            .filter(|&(end, _)| end < window_ns);
        // A caller up the chain learns an outcome after the call below it did (ties: the deeper one first).
        let chain_end = chain.next_end().filter(|&end| {
            end < window_ns
                && next_arrival.is_none_or(|t| end <= t)
                && next_end.is_none_or(|(inner, _)| end < inner)
        });
        if chain_end.is_some() {
            chain.end_next(&clock);
            continue;
        }
        match (next_arrival, next_end) {
            (None, None) => break,
            (arrival, Some((end, end_seq))) if arrival.is_none_or(|t| end <= t) => {
                let queue = if slow_queue.front().is_some_and(|c| c.seq == end_seq) {
                    &mut slow_queue
                } else {
                    &mut fast_queue
                };
                if let Some(call) = queue.pop_front() {
                    clock.set(crate::clock::Instant::from_nanos(call.end_ns));
                    if let Some(permit) = call.permit {
                        permit.record(call.outcome);
                    }
                    if scenario.workers().is_some() {
                        busy[call.instance as usize] -= 1;
                    }
                }
            }
            _ => {
                let Some((t, user, index)) = arrivals.pop() else {
                    break;
                };
                clock.set(crate::clock::Instant::from_nanos(t));
                let this = seq;
                seq += 1;
                let instance = match scenario.workload() {
                    Workload::Open { .. } => (this % instances as u64) as usize,
                    Workload::Closed { .. } => user as usize % instances,
                };
                let second = (t / NANOS_PER_SECOND) as usize;
                let tally = &mut pass.seconds[second];
                tally.requests += 1;
                let mut record = CallRecord {
                    at_ns: t,
                    instance: instance as u32,
                    decision: Decision::NoDependency,
                    failed: false,
                    cost_ns: 0,
                };
                let calls_dependency = calls_dependency(scenario.seed(), share, index);
                if calls_dependency {
                    tally.dependency_calls += 1;
                }
                let pool_full = scenario
                    .workers()
                    .is_some_and(|workers| busy[instance] >= workers);
                if pool_full {
                    tally.refused += 1;
                    tally.fast_failures += 1;
                    if calls_dependency {
                        tally.dependency_failures += 1;
                    }
                    pass.pool_exhausted_at_ns.get_or_insert(t);
                    record.decision = Decision::Refused;
                } else if !calls_dependency {
                    tally.successful += 1;
                } else {
                    let mut held = Vec::new();
                    let permit = match breakers.get(instance) {
                        Some((breaker, _)) => {
                            match chain.acquire(instance, t, second).and_then(|permits| {
                                held = permits;
                                breaker.try_acquire_owned().ok()
                            }) {
                                Some(permit) => Some(permit),
                                None => {
                                    chain.reject(std::mem::take(&mut held), t);
                                    tally.never_made += 1;
                                    tally.fast_failures += 1;
                                    tally.dependency_failures += 1;
                                    if upstream.recovered(t) {
                                        tally.rejected_after_recovery += 1;
                                    }
                                    if upstream.would_succeed(scenario, t, index) {
                                        tally.rejected_would_succeed += 1;
                                    }
                                    record.decision = Decision::Rejected;
                                    None
                                }
                            }
                        }
                        None => None,
                    };
                    if record.decision != Decision::Rejected {
                        let probe = permit.as_ref().is_some_and(OwnedPermit::is_probe);
                        record.decision = if probe {
                            Decision::Probe
                        } else {
                            Decision::Admitted
                        };
                        tally.probes += u64::from(probe);
                        tally.reached += 1;
                        let failed = upstream.fails(scenario, t, index);
                        record.failed = failed;
                        let (outcome, cost) = if failed {
                            tally.dependency_failures += 1;
                            match up.kind {
                                CallFailure::Hang => {
                                    tally.slow_failures += 1;
                                    (Outcome::Failure, timeout_ns)
                                }
                                CallFailure::Error => {
                                    tally.fast_failures += 1;
                                    (Outcome::Failure, 0)
                                }
                            }
                        } else {
                            tally.successful += 1;
                            (Outcome::Success, latency_ns)
                        };
                        record.cost_ns = cost;
                        tally.caller_ns += cost;
                        chain.answer(std::mem::take(&mut held), t, cost, outcome);
                        // The published model: the breaker sees the outcome at once, the caller still waits.
                        let permit = if cost == 0 || scenario.model() == Model::Published {
                            if let Some(permit) = permit {
                                permit.record(outcome);
                            }
                            None
                        } else {
                            permit
                        };
                        if cost > 0 {
                            let call = InFlight {
                                end_ns: t + cost,
                                seq: this,
                                instance: instance as u32,
                                permit,
                                outcome,
                            };
                            if cost == timeout_ns {
                                slow_queue.push_back(call);
                            } else {
                                fast_queue.push_back(call);
                            }
                            if let Some(workers) = scenario.workers() {
                                busy[instance] += 1;
                                if busy[instance] >= workers {
                                    pass.pool_exhausted_at_ns.get_or_insert(t);
                                }
                            }
                        }
                    }
                }
                if scenario.workers().is_some() {
                    tally.busy_peak = tally.busy_peak.max(busy[instance]);
                }
                if scenario.log_calls() {
                    pass.calls.push(record);
                }
                let end = t + record.cost_ns;
                arrivals.user_done(scenario, window_ns, &mut pass.seconds, user, end, index);
            }
        }
    }

    clock.set(crate::clock::Instant::from_nanos(window_ns));
    pass.state_ns = vec![[0; 3]; seconds];
    pass.not_closed_s = vec![0.0; seconds];
    pass.open_s = vec![0.0; seconds];
    pass.opens_per_second = vec![0; seconds];
    for (index, (breaker, sink)) in breakers.iter().enumerate() {
        let counters = breaker.snapshot().counters;
        pass.opens += counters.opens;
        pass.open_ns += counters.open_ms * 1_000_000;
        pass.half_open_ns += counters.half_open_ms * 1_000_000;
        timeline(
            &sink.take(),
            window_ns,
            |second, state, ns| {
                if index == 0 {
                    pass.state_ns[second][state.index()] += ns;
                }
                let share = ns as f64 / NANOS_PER_SECOND as f64;
                if state != State::Closed {
                    pass.not_closed_s[second] += share;
                }
                if state == State::Open {
                    pass.open_s[second] += share;
                }
            },
            |at| {
                pass.opens_per_second[(at / NANOS_PER_SECOND) as usize] += 1;
                pass.first_open_ns = Some(pass.first_open_ns.map_or(at, |first| first.min(at)));
            },
        );
    }
    pass.callers = chain.finish(window_ns, seconds);
    let mut totals = Tally::default();
    for second in &pass.seconds {
        totals.add(second);
    }
    pass.totals = totals;
    pass
}
