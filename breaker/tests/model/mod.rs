//! A deliberately simple, sequential reference model of the breaker: plain enums and maps, no packing, no atomics,
//! no generations (an episode counter that never wraps), windows as a map from bucket epoch to counts.

use std::collections::BTreeMap;

use std::time::Duration;

use breaker::{
    Counters, MANUAL_CLOCK_UNIX_ORIGIN_MS, Mode, Outcome, Probes, RawBreakerConfig,
    RawFailureRateConfig, RawLastCallsConfig, RawSlowCallConfig, Reason, State, TransitionDetail,
    TransitionEvent,
};
use proptest::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Closed {
        failures: u32,
    },
    Open {
        until_ms: u64,
        trips: u32,
    },
    HalfOpen {
        in_flight: u32,
        successes: u32,
        trips: u32,
    },
}

impl Phase {
    fn state(self) -> State {
        match self {
            Phase::Closed { .. } => State::Closed,
            Phase::Open { .. } => State::Open,
            Phase::HalfOpen { .. } => State::HalfOpen,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Closed,
    Probe,
    Unwatched,
}

/// What the model hands out for an admitted call.
#[derive(Debug, Clone, Copy)]
pub struct ModelPermit {
    episode: u64,
    pub kind: Kind,
    started_ns: Option<u64>,
}

#[derive(Debug, Default)]
struct Window {
    buckets: BTreeMap<u64, (u64, u64)>,
}

pub struct Model {
    config: RawBreakerConfig,
    phase: Phase,
    episode: u64,
    now_ns: u64,
    failure_window: Window,
    /// The window of the last calls, by bucket of call numbers; `calls_numbered` numbers the calls it counts.
    count_window: Window,
    calls_numbered: u64,
    slow_window: Window,
    pub events: Vec<TransitionEvent>,
    pub counters: Counters,
    state_since_ns: u64,
    time_in_ns: [u64; 3],
}

/// "Open until" of a forced-open breaker: never.
const NEVER_MS: u64 = (1 << 40) - 1;

fn watching(mode: Mode) -> bool {
    matches!(mode, Mode::Enforce | Mode::Shadow)
}

fn index(state: State) -> usize {
    match state {
        State::Closed => 0,
        State::Open => 1,
        State::HalfOpen => 2,
    }
}

fn nanos(d: std::time::Duration) -> u64 {
    d.as_nanos() as u64
}

impl Model {
    pub fn new(config: RawBreakerConfig) -> Self {
        let phase = if config.mode == Mode::ForcedOpen {
            Phase::Open {
                until_ms: NEVER_MS,
                trips: 0,
            }
        } else {
            Phase::Closed { failures: 0 }
        };
        Model {
            config,
            phase,
            episode: 0,
            now_ns: 0,
            failure_window: Window::default(),
            count_window: Window::default(),
            calls_numbered: 0,
            slow_window: Window::default(),
            events: Vec::new(),
            counters: Counters::default(),
            state_since_ns: 0,
            time_in_ns: [0; 3],
        }
    }

    pub fn advance_ms(&mut self, ms: u64) {
        self.now_ns += ms * 1_000_000;
    }

    fn shadow(&self) -> bool {
        self.config.mode == Mode::Shadow
    }

    fn move_to(&mut self, next: Phase, reason: Reason, detail: TransitionDetail, at_ns: u64) {
        let from = self.phase.state();
        let at_ns = at_ns.max(self.state_since_ns);
        self.time_in_ns[index(from)] += at_ns - self.state_since_ns;
        self.state_since_ns = at_ns;
        self.phase = next;
        self.episode += 1;
        if next.state() == State::Closed {
            self.failure_window = Window::default();
            self.count_window = Window::default();
            self.slow_window = Window::default();
        }
        if next.state() == State::Open {
            self.counters.opens += 1;
        }
        self.events.push(TransitionEvent {
            service: "svc".into(),
            breaker: "svc->dep".into(),
            from,
            to: next.state(),
            reason,
            detail,
            at_ms: MANUAL_CLOCK_UNIX_ORIGIN_MS + at_ns / 1_000_000,
            seq: self.events.len() as u64 + 1,
            shadow: self.shadow(),
            source: None,
        });
    }

    fn window_ns(&self, trips: u32) -> u64 {
        let open = &self.config.open;
        let grown = nanos(open.base) as f64 * open.backoff.powi(trips as i32 - 1);
        grown.min(nanos(open.max) as f64).max(1.0) as u64
    }

    fn open(&mut self, trips: u32, reason: Reason, mut detail: TransitionDetail) {
        let window = self.window_ns(trips);
        detail.open_ms = Some(window.div_ceil(1_000_000));
        let until_ms = (self.now_ns + window).div_ceil(1_000_000);
        self.move_to(Phase::Open { until_ms, trips }, reason, detail, self.now_ns);
    }

    /// Open → HalfOpen when the window has ended.
    pub fn observe(&mut self) -> State {
        if let Phase::Open { until_ms, trips } = self.phase {
            if self.config.mode != Mode::ForcedOpen && self.now_ns >= until_ms * 1_000_000 {
                let detail = TransitionDetail {
                    trips: Some(trips),
                    ..TransitionDetail::default()
                };
                self.move_to(
                    Phase::HalfOpen {
                        in_flight: 0,
                        successes: 0,
                        trips,
                    },
                    Reason::CooldownElapsed,
                    detail,
                    until_ms * 1_000_000,
                );
            }
        }
        self.phase.state()
    }

    pub fn acquire(&mut self) -> Option<ModelPermit> {
        match self.config.mode {
            Mode::Disabled => {
                return Some(ModelPermit {
                    episode: self.episode,
                    kind: Kind::Unwatched,
                    started_ns: None,
                });
            }
            Mode::ForcedOpen => {
                self.counters.rejected += 1;
                return None;
            }
            Mode::Enforce | Mode::Shadow => {}
        }
        self.observe();
        let started_ns = self.config.trip.slow_call.is_some().then_some(self.now_ns);
        let permit = |episode, kind| ModelPermit {
            episode,
            kind,
            started_ns,
        };
        let refuse = |model: &mut Model| {
            if model.shadow() {
                model.counters.shadow_rejected += 1;
                Some(permit(model.episode, Kind::Unwatched))
            } else {
                model.counters.rejected += 1;
                None
            }
        };
        match self.phase {
            Phase::Closed { .. } => Some(permit(self.episode, Kind::Closed)),
            Phase::Open { .. } => refuse(self),
            Phase::HalfOpen {
                in_flight,
                successes,
                trips,
            } => {
                let limit = match self.config.half_open.probes {
                    Probes::Limited(n) => n.get(),
                    Probes::All => u32::MAX,
                };
                if in_flight < limit {
                    self.phase = Phase::HalfOpen {
                        in_flight: in_flight + 1,
                        successes,
                        trips,
                    };
                    Some(permit(self.episode, Kind::Probe))
                } else {
                    refuse(self)
                }
            }
        }
    }

    fn window_record(&mut self, slow_window: bool, hit: bool) -> Option<(u64, u64)> {
        let (rule_window, threshold, min_calls) = if slow_window {
            let s = self.config.trip.slow_call.as_ref()?;
            (s.window, s.rate, s.min_calls)
        } else {
            let r = self.config.trip.failure_rate.as_ref()?;
            (r.window, r.threshold, r.min_calls)
        };
        let bucket = (nanos(rule_window) / 10).max(1);
        let epoch = self.now_ns / bucket;
        let window = if slow_window {
            &mut self.slow_window
        } else {
            &mut self.failure_window
        };
        let entry = window.buckets.entry(epoch).or_default();
        entry.0 += 1;
        if hit {
            entry.1 += 1;
        }
        if !hit {
            return None;
        }
        let (calls, hits) = window
            .buckets
            .range(epoch.saturating_sub(9)..=epoch)
            .fold((0, 0), |(c, h), (_, (bc, bh))| (c + bc, h + bh));
        (calls >= u64::from(min_calls) && calls > 0 && hits as f64 >= threshold * calls as f64)
            .then_some((hits, calls))
    }

    /// Count a closed call in the window of the last calls; on a failure, (failures, calls) when the rule fires.
    /// The window is `⌊calls / b⌋` buckets of `b = ⌈calls / 10⌉` consecutive call numbers.
    fn count_window_record(&mut self, failed: bool) -> Option<(u64, u64)> {
        let rule = self.config.trip.last_calls.as_ref()?;
        let (threshold, min_calls) = (rule.threshold, u64::from(rule.min_calls));
        let calls = u64::from(rule.calls);
        let bucket = calls.div_ceil(10);
        let buckets = (calls / bucket).clamp(1, 10);
        let number = self.calls_numbered;
        self.calls_numbered += 1;
        let epoch = number / bucket;
        let entry = self.count_window.buckets.entry(epoch).or_default();
        entry.0 += 1;
        if failed {
            entry.1 += 1;
        } else {
            return None;
        }
        let (calls, hits) = self
            .count_window
            .buckets
            .range(epoch.saturating_sub(buckets - 1)..=epoch)
            .fold((0, 0), |(c, h), (_, (bc, bh))| (c + bc, h + bh));
        (calls >= min_calls && calls > 0 && hits as f64 >= threshold * calls as f64)
            .then_some((hits, calls))
    }

    /// A permit dropped without an outcome: a failure when it waited past the slow-call threshold, else ignored.
    pub fn drop_permit(&mut self, permit: ModelPermit) {
        let waited_past_slow = match (&self.config.trip.slow_call, permit.started_ns) {
            (Some(rule), Some(started)) => self.now_ns - started >= nanos(rule.duration),
            _ => false,
        };
        let outcome = if waited_past_slow {
            Outcome::Failure
        } else {
            Outcome::Ignored
        };
        self.record(permit, outcome, None);
    }

    pub fn record(&mut self, permit: ModelPermit, outcome: Outcome, elapsed_ms: Option<u64>) {
        self.counters.permitted += 1;
        match outcome {
            Outcome::Success => self.counters.successes += 1,
            Outcome::Failure => self.counters.failures += 1,
            Outcome::Ignored => self.counters.ignored += 1,
        }
        let slow = match (&self.config.trip.slow_call, outcome) {
            (Some(rule), Outcome::Success | Outcome::Failure) => {
                let elapsed = elapsed_ms
                    .map(|ms| ms * 1_000_000)
                    .or(permit.started_ns.map(|s| self.now_ns - s));
                elapsed.is_some_and(|e| e >= nanos(rule.duration))
            }
            _ => false,
        };
        if slow {
            self.counters.slow += 1;
        }
        if permit.episode != self.episode || !watching(self.config.mode) {
            return;
        }
        match (permit.kind, self.phase) {
            (
                Kind::Probe,
                Phase::HalfOpen {
                    in_flight,
                    successes,
                    trips,
                },
            ) => {
                let in_flight = in_flight - 1;
                match outcome {
                    Outcome::Ignored => {
                        self.phase = Phase::HalfOpen {
                            in_flight,
                            successes,
                            trips,
                        }
                    }
                    Outcome::Success => {
                        let successes = successes + 1;
                        if successes >= self.config.half_open.successes_to_close {
                            let detail = TransitionDetail {
                                successes: Some(u64::from(successes)),
                                ..TransitionDetail::default()
                            };
                            self.move_to(
                                Phase::Closed { failures: 0 },
                                Reason::ProbesSucceeded,
                                detail,
                                self.now_ns,
                            );
                        } else {
                            self.phase = Phase::HalfOpen {
                                in_flight,
                                successes,
                                trips,
                            };
                        }
                    }
                    Outcome::Failure => {
                        let trips = (trips + 1).min(63);
                        let detail = TransitionDetail {
                            successes: Some(u64::from(successes)),
                            trips: Some(trips),
                            ..TransitionDetail::default()
                        };
                        self.open(trips, Reason::ProbeFailed, detail);
                    }
                }
            }
            (Kind::Closed, Phase::Closed { failures }) => {
                if outcome == Outcome::Ignored {
                    return;
                }
                let failure_verdict = self.window_record(false, outcome == Outcome::Failure);
                let count_verdict = self.count_window_record(outcome == Outcome::Failure);
                let slow_verdict = self.window_record(true, slow);
                let rate_detail =
                    |hits: u64, calls: u64, threshold: f64, window_ms: u64, is_slow: bool| {
                        TransitionDetail {
                            failures: (!is_slow).then_some(hits),
                            slow: is_slow.then_some(hits),
                            calls: Some(calls),
                            rate: Some(hits as f64 / calls as f64),
                            threshold: Some(threshold),
                            window_ms: Some(window_ms),
                            ..TransitionDetail::default()
                        }
                    };
                let slow_trip = |model: &mut Model| {
                    if let (Some((hits, calls)), Some(rule)) =
                        (slow_verdict, model.config.trip.slow_call.clone())
                    {
                        let detail = rate_detail(
                            hits,
                            calls,
                            rule.rate,
                            rule.window.as_millis() as u64,
                            true,
                        );
                        model.open(1, Reason::SlowCallRate, detail);
                        true
                    } else {
                        false
                    }
                };
                if outcome == Outcome::Success {
                    if !slow_trip(self) {
                        self.phase = Phase::Closed { failures: 0 };
                    }
                    return;
                }
                let failures = failures + 1;
                if self
                    .config
                    .trip
                    .consecutive_failures
                    .is_some_and(|k| failures >= k)
                {
                    let detail = TransitionDetail {
                        failures: Some(u64::from(failures)),
                        ..TransitionDetail::default()
                    };
                    self.open(1, Reason::ConsecutiveFailures, detail);
                } else if let (Some((hits, calls)), Some(rule)) =
                    (failure_verdict, self.config.trip.failure_rate.clone())
                {
                    let detail = rate_detail(
                        hits,
                        calls,
                        rule.threshold,
                        rule.window.as_millis() as u64,
                        false,
                    );
                    self.open(1, Reason::FailureRate, detail);
                } else if let (Some((hits, calls)), Some(rule)) =
                    (count_verdict, self.config.trip.last_calls.clone())
                {
                    let detail = TransitionDetail {
                        failures: Some(hits),
                        calls: Some(calls),
                        rate: Some(hits as f64 / calls as f64),
                        threshold: Some(rule.threshold),
                        window_calls: Some(u64::from(rule.calls)),
                        ..TransitionDetail::default()
                    };
                    self.open(1, Reason::LastCallsFailureRate, detail);
                } else if !slow_trip(self) {
                    self.phase = Phase::Closed { failures };
                }
            }
            _ => {}
        }
    }

    /// A new config that differs only in its mode: same mode keeps everything; another mode starts over closed
    /// (open for forced-open), as a transition if the state differs, silently (windows kept) if not.
    pub fn set_mode(&mut self, mode: Mode) {
        let old = self.config.mode;
        self.config.mode = mode;
        if mode == old {
            return;
        }
        let target = if mode == Mode::ForcedOpen {
            Phase::Open {
                until_ms: NEVER_MS,
                trips: 0,
            }
        } else {
            Phase::Closed { failures: 0 }
        };
        if target.state() == self.phase.state() {
            self.phase = target;
            return;
        }
        let reason = if mode == Mode::ForcedOpen {
            Reason::Forced
        } else {
            Reason::ConfigChanged
        };
        let detail = TransitionDetail {
            mode: Some(mode),
            ..TransitionDetail::default()
        };
        self.move_to(target, reason, detail, self.now_ns);
    }

    /// Back to closed (forced-open stays open), windows and counters cleared.
    pub fn reset(&mut self) {
        self.failure_window = Window::default();
        self.count_window = Window::default();
        self.slow_window = Window::default();
        if self.config.mode != Mode::ForcedOpen {
            if let Phase::Closed { .. } = self.phase {
                self.phase = Phase::Closed { failures: 0 };
            } else {
                let detail = TransitionDetail {
                    reset: Some(true),
                    ..TransitionDetail::default()
                };
                self.move_to(
                    Phase::Closed { failures: 0 },
                    Reason::Forced,
                    detail,
                    self.now_ns,
                );
            }
        }
        self.counters = Counters::default();
        self.time_in_ns = [0; 3];
        self.state_since_ns = self.state_since_ns.max(self.now_ns);
    }

    /// Counters with the time in each state up to now.
    pub fn counters_now(&self) -> Counters {
        let mut time = self.time_in_ns;
        time[index(self.phase.state())] += self.now_ns - self.state_since_ns;
        Counters {
            closed_ms: time[0] / 1_000_000,
            open_ms: time[1] / 1_000_000,
            half_open_ms: time[2] / 1_000_000,
            ..self.counters
        }
    }
}

/// Random enforce-mode configs the model covers: any mix of detectors (at least one), backoff, probe limits.
pub fn breaker_config() -> impl Strategy<Value = RawBreakerConfig> {
    (
        (
            prop::option::of(1u32..6),
            prop::option::of((0.2f64..1.0, 1u64..5, 1u32..8)),
            prop::option::of((0.2f64..1.0, 1u32..40, 1u32..40)),
        ),
        prop::option::of((50u64..300, 0.2f64..1.0, 1u64..5, 1u32..8)),
        (
            1u64..5_000,
            prop_oneof![Just(1.0), Just(2.0), Just(1.5)],
            1u64..4,
        ),
        (
            prop_oneof![
                (1u32..4).prop_map(|n| Probes::limited(n).expect("≥1")),
                Just(Probes::All)
            ],
            1u32..4,
        ),
    )
        .prop_map(
            |(
                (consecutive, rate, last),
                slow,
                (base_ms, backoff, max_factor),
                (probes, successes),
            )| {
                let mut config = RawBreakerConfig::default();
                config.trip.consecutive_failures = consecutive;
                config.trip.failure_rate =
                    rate.map(|(threshold, window_s, min_calls)| RawFailureRateConfig {
                        threshold,
                        window: Duration::from_secs(window_s),
                        min_calls,
                    });
                config.trip.last_calls =
                    last.map(|(threshold, calls, min_calls)| RawLastCallsConfig {
                        threshold,
                        calls,
                        min_calls: min_calls.min(calls),
                    });
                config.trip.slow_call =
                    slow.map(
                        |(duration_ms, rate, window_s, min_calls)| RawSlowCallConfig {
                            duration: Duration::from_millis(duration_ms),
                            rate,
                            window: Duration::from_secs(window_s),
                            min_calls,
                        },
                    );
                if consecutive.is_none()
                    && config.trip.failure_rate.is_none()
                    && config.trip.last_calls.is_none()
                    && config.trip.slow_call.is_none()
                {
                    config.trip.consecutive_failures = Some(3);
                }
                config.open.base = Duration::from_millis(base_ms);
                config.open.backoff = backoff;
                config.open.max = Duration::from_millis(base_ms * max_factor);
                config.half_open.probes = probes;
                config.half_open.successes_to_close = successes;
                config
            },
        )
}
