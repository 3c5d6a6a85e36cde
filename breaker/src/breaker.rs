//! [`CircuitBreaker`]: the shell around the pure core. It owns the packed state word, the per-thread counters and
//! windows, the clock and the sink; every state change is one CAS loop around a pure function of `core::machine`.
//!
//! In a circle with `breaker/permit.rs` because a permit and its breaker are one type pair: the breaker hands out
//! permits, and a permit records its call's outcome on the breaker it was admitted by (`tower`'s service and its
//! response future are the same pair); the permit lives in its own file only to be read apart.
//!
//! The closed path with only a consecutive-failure detector is: one load of the word to admit, one store to the
//! thread's own counter stripe, and on success one more load of the word — the word is written only when a failure
//! count must be reset. The clock is read on that path only if a time-based detector is configured.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use crate::clock::{Clock, Instant, duration_nanos};
use crate::config::{BreakerConfig, Mode};
use crate::core::machine::{self, Admission, Step, Transition, Verdict};
use crate::core::policy::Policy;
use crate::core::word::{GEN_MASK, Phase, Word};
use crate::event::{EventSink, NoopSink, TransitionEvent};
use crate::state::{Outcome, State};
use crate::stripes::{self, CallTotals, Padded, StripedCounters};
use crate::window::StripedWindow;

mod admin;
mod permit;
mod report;

pub use permit::{OwnedPermit, Permit};
use permit::{Ticket, TicketKind};
pub use report::{BreakerSnapshot, CallError, Counters, Rejected};

/// Transitions waiting to be numbered in generation order, and the per-state time accounting.
#[derive(Debug)]
struct EventLog {
    next_generation: u16,
    pending: Vec<(u16, Transition)>,
    /// Numbered events not yet handed to the sink, in `seq` order.
    outbox: std::collections::VecDeque<TransitionEvent>,
    /// Some thread is handing the outbox to the sink (at most one at a time, so the sink sees `seq` order).
    delivering: bool,
    seq: u64,
    state: State,
    since: Instant,
    time_in_ns: [u64; 3],
    opens: u64,
}

/// A circuit breaker. `Send + Sync`; share it as `Arc<CircuitBreaker>`.
pub struct CircuitBreaker {
    word: Padded<AtomicU64>,
    counters: StripedCounters,
    /// The compiled config, for the paths that decide (failures, probes, acquiring when not closed).
    policy: ArcSwap<Policy>,
    /// Windows and the slow-call threshold, reachable from the success path without loading `policy`.
    failure_window: StripedWindow,
    /// The window of the last calls: its "time" is the call's number, `calls_numbered` the shared numbering.
    count_window: StripedWindow,
    calls_numbered: Padded<AtomicU64>,
    slow_window: StripedWindow,
    slow_call_ns: AtomicU64,
    clock: Arc<dyn Clock>,
    sink: Arc<dyn EventSink>,
    name: String,
    service: String,
    seed: u64,
    config: Mutex<BreakerConfig>,
    log: Mutex<EventLog>,
    baseline: Mutex<CallTotals>,
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &self.name)
            .field("service", &self.service)
            .field("state", &Word(self.word.load(Ordering::Relaxed)).state())
            .finish_non_exhaustive()
    }
}

/// Default seed of the jitter draw when neither the config nor the registry sets one.
pub const DEFAULT_SEED: u64 = 0x746f_6c65_7261_6e74;

impl CircuitBreaker {
    /// A closed breaker named `name` (by convention `caller->dependency`). `config` is checked by its type.
    /// Events go nowhere until [`CircuitBreaker::with_sink`].
    pub fn new(name: impl Into<String>, config: BreakerConfig, clock: Arc<dyn Clock>) -> Self {
        let name = name.into();
        let seed = DEFAULT_SEED;
        let policy = Policy::compile(&config, seed, &name);
        let word = Word::initial(config.mode(), policy.timed(), policy.windowed());
        let now = clock.now();
        let state = word.state();
        let breaker = CircuitBreaker {
            word: Padded(AtomicU64::new(word.0)),
            counters: StripedCounters::new(),
            policy: ArcSwap::from_pointee(policy.clone()),
            failure_window: StripedWindow::default(),
            count_window: StripedWindow::default(),
            calls_numbered: Padded(AtomicU64::new(0)),
            slow_window: StripedWindow::default(),
            slow_call_ns: AtomicU64::new(u64::MAX),
            clock,
            sink: Arc::new(NoopSink),
            name,
            service: String::new(),
            seed,
            config: Mutex::new(config),
            log: Mutex::new(EventLog {
                next_generation: 1,
                pending: Vec::new(),
                outbox: std::collections::VecDeque::new(),
                delivering: false,
                seq: 0,
                state,
                since: now,
                time_in_ns: [0; 3],
                opens: 0,
            }),
            baseline: Mutex::new(CallTotals::default()),
        };
        breaker.arm(&policy, true);
        breaker
    }

    /// Point the windows and the slow-call threshold at `policy` (`clear`: forget the windows' counts; otherwise
    /// a window whose bucket width is unchanged keeps them).
    fn arm(&self, policy: &Policy, clear: bool) {
        self.failure_window
            .configure(policy.failure_rate.map(|r| r.bucket_ns), clear);
        self.count_window
            .configure(policy.last_calls.map(|r| r.bucket_calls), clear);
        self.slow_window
            .configure(policy.slow_call.map(|r| r.bucket_ns), clear);
        self.slow_call_ns
            .store(policy.slow_call_ns, Ordering::Relaxed);
    }

    /// Send transitions to `sink`.
    pub fn with_sink(mut self, sink: Arc<dyn EventSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Name the service this breaker lives in (the `service` field of its events).
    pub fn with_service(mut self, service: impl Into<String>) -> Self {
        self.service = service.into();
        self
    }

    /// Seed the open-window jitter (used when the config has no `open.seed`).
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        let policy = Policy::compile(&self.config.lock(), seed, &self.name);
        self.policy = ArcSwap::from_pointee(policy);
        self
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The service it lives in.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// Its clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The current config.
    pub fn config(&self) -> BreakerConfig {
        self.config.lock().clone()
    }

    /// Ask to make a call. Never blocks. Reads the clock only when open / half-open or when a slow-call detector
    /// must time the call.
    #[inline]
    pub fn try_acquire(&self) -> Result<Permit<'_>, Rejected> {
        let word = Word(self.word.load(Ordering::Acquire));
        if word.admits_untimed_closed() {
            let ticket = Ticket::new(word.generation(), TicketKind::Closed, None, word.windowed());
            return Ok(Permit {
                breaker: self,
                ticket,
            });
        }
        self.acquire_slow(word).map(|ticket| Permit {
            breaker: self,
            ticket,
        })
    }

    /// [`CircuitBreaker::try_acquire`] for an `Arc`'d breaker, returning a permit that owns the `Arc`.
    pub fn try_acquire_owned(self: &Arc<Self>) -> Result<OwnedPermit, Rejected> {
        let permit = self.try_acquire()?;
        let ticket = permit.ticket;
        std::mem::forget(permit);
        Ok(OwnedPermit {
            breaker: Arc::clone(self),
            ticket: Some(ticket),
        })
    }

    #[cold]
    fn acquire_slow(&self, word: Word) -> Result<Ticket, Rejected> {
        let stripe = stripes::current();
        let counters = self.counters.stripe(stripe);
        if word.mode() == Mode::Disabled {
            return Ok(Ticket::new(
                word.generation(),
                TicketKind::Unwatched,
                None,
                false,
            ));
        }
        let now = self.clock.now();
        if let Phase::Open { until_ms, .. } = word.phase() {
            // Still open (or forced open) in enforce mode: reject without the policy or a CAS.
            if word.mode() != Mode::Shadow && now.as_nanos() < until_ms.saturating_mul(1_000_000) {
                stripes::bump(&counters.rejected, stripe, 1);
                return Err(Rejected {
                    breaker: self.name.clone(),
                    state: State::Open,
                });
            }
        }
        let policy = self.policy.load();
        let (after, admission) = self.apply_with(|w| machine::acquire(w, now, &policy));
        let started = after.timed().then_some(now);
        let ticket = |kind| Ticket::new(after.generation(), kind, started, after.windowed());
        match admission {
            Admission::Closed => Ok(ticket(TicketKind::Closed)),
            Admission::Probe => Ok(ticket(TicketKind::Probe)),
            Admission::Unwatched { would_reject } => {
                if would_reject {
                    stripes::bump(&counters.shadow_rejected, stripe, 1);
                }
                Ok(ticket(TicketKind::Unwatched))
            }
            Admission::Rejected => {
                stripes::bump(&counters.rejected, stripe, 1);
                Err(Rejected {
                    breaker: self.name.clone(),
                    state: after.state(),
                })
            }
        }
    }

    /// Record a permit dropped without an outcome: a failure once it waited past the slow-call threshold (only a
    /// timed ticket can have), else ignored. See [`Permit`]'s "A dropped permit".
    #[inline]
    fn abandon(&self, ticket: Ticket) {
        let slow_call_ns = self.slow_call_ns.load(Ordering::Relaxed);
        let waited_past_slow = slow_call_ns != u64::MAX
            && ticket
                .elapsed(self.clock.now())
                .is_some_and(|elapsed| duration_nanos(elapsed) >= slow_call_ns);
        let outcome = if waited_past_slow {
            Outcome::Failure
        } else {
            Outcome::Ignored
        };
        self.finish(ticket, outcome, None);
    }

    /// Record the outcome of the call `ticket` admitted.
    #[inline]
    fn finish(&self, ticket: Ticket, outcome: Outcome, elapsed: Option<Duration>) {
        let stripe = stripes::current();
        let counters = self.counters.stripe(stripe);
        let cell = match outcome {
            Outcome::Success => &counters.successes,
            Outcome::Failure => &counters.failures,
            Outcome::Ignored => &counters.ignored,
        };
        stripes::bump(cell, stripe, 1);
        if ticket.is_plain_closed()
            && outcome == Outcome::Success
            && elapsed.is_none()
            && Word(self.word.load(Ordering::Relaxed)).closed_consecutive_failures() == 0
        {
            return;
        }
        self.finish_slow(ticket, outcome, elapsed, stripe);
    }

    /// Everything past the plain closed success: time, windows, and the CAS when the outcome can move the machine.
    #[inline(never)]
    fn finish_slow(
        &self,
        ticket: Ticket,
        outcome: Outcome,
        elapsed: Option<Duration>,
        stripe: usize,
    ) {
        let now = self.clock.now();
        let slow_call_ns = self.slow_call_ns.load(Ordering::Relaxed);
        let slow = outcome != Outcome::Ignored
            && slow_call_ns != u64::MAX
            && elapsed
                .or_else(|| ticket.elapsed(now))
                .is_some_and(|e| duration_nanos(e) >= slow_call_ns);
        if slow {
            stripes::bump(&self.counters.stripe(stripe).slow, stripe, 1);
        }
        match ticket.kind() {
            TicketKind::Unwatched => {}
            TicketKind::Probe => {
                let policy = self.policy.load();
                self.apply(|w| {
                    machine::probe_outcome(w, ticket.generation(), outcome, now, &policy)
                });
            }
            TicketKind::Closed => {
                if outcome == Outcome::Ignored {
                    return;
                }
                let word = Word(self.word.load(Ordering::Acquire));
                let current =
                    word.is_closed() && word.watching() && word.generation() == ticket.generation();
                if !current {
                    return;
                }
                let at = now.as_nanos();
                let failed = outcome == Outcome::Failure;
                self.failure_window
                    .record(stripe, at, ticket.generation(), failed);
                // The one shared write of a window of the last calls: numbering the call.
                let number = self
                    .count_window
                    .is_configured()
                    .then(|| self.calls_numbered.fetch_add(1, Ordering::Relaxed));
                if let Some(number) = number {
                    self.count_window
                        .record(stripe, number, ticket.generation(), failed);
                }
                self.slow_window
                    .record(stripe, at, ticket.generation(), slow);
                if !failed && !slow && word.closed_consecutive_failures() == 0 {
                    // A plain success with no failure count to reset: nothing can change.
                    return;
                }
                let policy = self.policy.load();
                let mut verdict = Verdict::default();
                if let (true, Some(rule)) = (failed, policy.failure_rate.as_ref()) {
                    let count = self.failure_window.count(at, ticket.generation());
                    if rule.fires(count.hits, count.calls) {
                        verdict.failure_rate = Some((count.hits, count.calls));
                    }
                }
                if let (true, Some(rule), Some(number)) =
                    (failed, policy.last_calls.as_ref(), number)
                {
                    let count =
                        self.count_window
                            .count_last(number, ticket.generation(), rule.buckets);
                    if rule.fires(count.hits, count.calls) {
                        verdict.last_calls = Some((count.hits, count.calls));
                    }
                }
                if let (true, Some(rule)) = (slow, policy.slow_call.as_ref()) {
                    let count = self.slow_window.count(at, ticket.generation());
                    if rule.fires(count.hits, count.calls) {
                        verdict.slow_call = Some((count.hits, count.calls));
                    }
                }
                self.apply(|w| {
                    machine::closed_outcome(w, ticket.generation(), outcome, verdict, now, &policy)
                });
            }
        }
    }

    /// One CAS loop around a pure step; publishes the transition if this thread's exchange installed one.
    fn apply(&self, mut step: impl FnMut(Word) -> Step) -> Word {
        self.apply_with(|w| (step(w), ())).0
    }

    fn apply_with<A>(&self, mut step: impl FnMut(Word) -> (Step, A)) -> (Word, A) {
        let mut current = Word(self.word.load(Ordering::Acquire));
        loop {
            let (Step { next, transition }, answer) = step(current);
            if next == current {
                return (current, answer);
            }
            match self.word.compare_exchange_weak(
                current.0,
                next.0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    if let Some(transition) = transition {
                        self.publish(next.generation(), transition);
                    }
                    return (next, answer);
                }
                Err(actual) => current = Word(actual),
            }
        }
    }

    /// Number the transition in generation order, account the time, and deliver in `seq` order outside the log
    /// lock. One thread at a time delivers; a thread that finds delivery under way leaves its events in the outbox
    /// for that thread and returns at once, so no caller waits for a slow sink and a sink that calls back into the
    /// breaker (even causing a transition) cannot deadlock.
    fn publish(&self, generation: u16, transition: Transition) {
        let mut log = self.log.lock();
        log.pending.push((generation, transition));
        while let Some(position) = log
            .pending
            .iter()
            .position(|(g, _)| *g == log.next_generation)
        {
            let (_, t) = log.pending.swap_remove(position);
            log.next_generation = ((u64::from(log.next_generation) + 1) & GEN_MASK) as u16;
            log.seq += 1;
            let at = t.at.max(log.since);
            let spent = at.as_nanos() - log.since.as_nanos();
            log.time_in_ns[t.from.index()] += spent;
            log.since = at;
            log.state = t.to;
            if t.to == State::Open {
                log.opens += 1;
            }
            let event = TransitionEvent {
                service: self.service.clone(),
                breaker: self.name.clone(),
                from: t.from,
                to: t.to,
                reason: t.reason,
                detail: t.detail,
                at_ms: self.clock.unix_ms(t.at),
                seq: log.seq,
                shadow: t.shadow,
                source: None,
            };
            log.outbox.push_back(event);
        }
        if log.delivering {
            return;
        }
        log.delivering = true;
        while let Some(event) = log.outbox.pop_front() {
            drop(log);
            self.sink.emit(&event);
            log = self.log.lock();
        }
        log.delivering = false;
    }

    /// Run `fut` through the breaker: rejected without running it if the breaker says no, otherwise its result
    /// classified by `classify` and recorded. A dropped (cancelled) future counts as ignored.
    pub async fn call<T, E, F>(
        &self,
        fut: F,
        classify: impl FnOnce(&Result<T, E>) -> Outcome,
    ) -> Result<T, CallError<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let permit = self.try_acquire().map_err(CallError::Rejected)?;
        let result = fut.await;
        permit.record(classify(&result));
        result.map_err(CallError::Inner)
    }
}
