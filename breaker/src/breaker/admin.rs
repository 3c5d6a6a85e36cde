//! What is asked of a breaker beside its calls: its state and snapshot, a new config, a reset — the operator's
//! and the dashboard's view of the same packed word and counters the call path uses.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::CircuitBreaker;
use super::report::{BreakerSnapshot, Counters};
use crate::clock::Instant;
use crate::config::BreakerConfig;
use crate::core::machine;
use crate::core::policy::Policy;
use crate::core::word::{Phase, UNTIL_NEVER_MS, Word};
use crate::state::State;

impl CircuitBreaker {
    /// The state now; an elapsed open window becomes half-open here, without waiting for a call.
    pub fn state(&self) -> State {
        let word = Word(self.word.load(Ordering::Acquire));
        if word.state() != State::Open {
            return word.state();
        }
        self.state_at(self.clock.now())
    }

    /// The state at `now` (performs the Open → HalfOpen transition if the window has ended by then).
    pub fn state_at(&self, now: Instant) -> State {
        self.apply(|w| machine::observe(w, now)).state()
    }

    /// Name, state, mode, counters and the open window's end.
    pub fn snapshot(&self) -> BreakerSnapshot {
        let now = self.clock.now();
        let word = Word(self.word.load(Ordering::Acquire));
        let word = if word.state() == State::Open {
            self.apply(|w| machine::observe(w, now))
        } else {
            word
        };
        let totals = self.counters.totals().since(*self.baseline.lock());
        let log = self.log.lock();
        let mut time_in_ns = log.time_in_ns;
        time_in_ns[log.state.index()] += now.as_nanos().saturating_sub(log.since.as_nanos());
        let (consecutive_failures, probes_in_flight, probe_successes, trips, open_until_ms) =
            match word.phase() {
                Phase::Closed {
                    consecutive_failures,
                } => (consecutive_failures, 0, 0, 0, None),
                Phase::Open { until_ms, trips } => {
                    let until = (until_ms != UNTIL_NEVER_MS).then(|| {
                        self.clock
                            .unix_ms(Instant::from_nanos(until_ms.saturating_mul(1_000_000)))
                    });
                    (0, 0, 0, trips, until)
                }
                Phase::HalfOpen {
                    in_flight,
                    successes,
                    trips,
                } => (0, in_flight, successes, trips, None),
            };
        BreakerSnapshot {
            service: self.service.clone(),
            name: self.name.clone(),
            state: word.state(),
            mode: word.mode(),
            counters: Counters {
                permitted: totals.permitted,
                rejected: totals.rejected,
                shadow_rejected: totals.shadow_rejected,
                successes: totals.successes,
                failures: totals.failures,
                ignored: totals.ignored,
                slow: totals.slow,
                opens: log.opens,
                closed_ms: time_in_ns[0] / 1_000_000,
                open_ms: time_in_ns[1] / 1_000_000,
                half_open_ms: time_in_ns[2] / 1_000_000,
            },
            consecutive_failures,
            probes_in_flight,
            probe_successes,
            trips,
            open_until_ms,
            seq: log.seq,
        }
    }

    /// Replace the config. Same mode: the state is kept (windows with an unchanged bucket width keep their
    /// counts). Another mode: the breaker starts over closed (open for forced-open), emitting `forced` /
    /// `config_changed` if that changes the state.
    pub fn set_config(&self, config: BreakerConfig) {
        let mut current = self.config.lock();
        let policy = Policy::compile(&config, self.seed, &self.name);
        let (mode, timed, windowed) = (config.mode(), policy.timed(), policy.windowed());
        self.arm(&policy, false);
        self.policy.store(Arc::new(policy));
        *current = config;
        drop(current);
        let now = self.clock.now();
        self.apply(|w| machine::reconfigure(w, mode, timed, windowed, now));
    }

    /// Back to closed with windows, failure counts, backoff and counters cleared (forced-open stays open).
    pub fn reset(&self) {
        let config = self.config.lock();
        self.arm(&self.policy.load(), true);
        drop(config);
        let now = self.clock.now();
        self.apply(|w| machine::reset(w, now));
        *self.baseline.lock() = self.counters.totals();
        let mut log = self.log.lock();
        log.time_in_ns = [0; 3];
        log.opens = 0;
        log.since = log.since.max(now);
    }
}
