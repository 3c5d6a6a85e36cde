//! Property test: the concurrent breaker and the sequential reference model (`tests/model`), driven by the same
//! random sequences of acquire / record success, failure or ignored (timed or not) / drop / advance time / look,
//! must agree on every admission, every state, every event (all fields, in order) and every counter.
//! Failing cases are saved under `tests/proptest-regressions/` and replayed first.

mod model;

use std::sync::Arc;
use std::time::Duration;

use breaker::{CircuitBreaker, ManualClock, MemorySink, Mode, Outcome, Permit, RawBreakerConfig};
use model::{Kind, Model, ModelPermit};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Acquire,
    Record {
        index: usize,
        outcome: Outcome,
    },
    RecordTimed {
        index: usize,
        outcome: Outcome,
        elapsed_ms: u64,
    },
    Drop {
        index: usize,
    },
    Advance {
        ms: u64,
    },
    State,
    SetMode {
        mode: Mode,
    },
    Reset,
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![3 => Just(Outcome::Failure), 2 => Just(Outcome::Success), 1 => Just(Outcome::Ignored)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Acquire),
        5 => (any::<usize>(), outcome()).prop_map(|(index, outcome)| Op::Record { index, outcome }),
        2 => (any::<usize>(), outcome(), 0u64..400).prop_map(|(index, outcome, elapsed_ms)| Op::RecordTimed { index, outcome, elapsed_ms }),
        1 => any::<usize>().prop_map(|index| Op::Drop { index }),
        3 => prop_oneof![0u64..50, 0u64..3_000].prop_map(|ms| Op::Advance { ms }),
        1 => Just(Op::State),
        1 => prop_oneof![
            Just(Mode::Enforce),
            Just(Mode::Shadow),
            Just(Mode::ForcedOpen),
            Just(Mode::Disabled)
        ]
        .prop_map(|mode| Op::SetMode { mode }),
        1 => prop_oneof![Just(Op::Reset), Just(Op::State)],
    ]
}

fn config() -> impl Strategy<Value = RawBreakerConfig> {
    (
        model::breaker_config(),
        prop_oneof![3 => Just(Mode::Enforce), 1 => Just(Mode::Shadow)],
    )
        .prop_map(|(config, mode)| RawBreakerConfig { mode, ..config })
}

fn run(config: RawBreakerConfig, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let checked = config
        .clone()
        .build()
        .map_err(|e| TestCaseError::reject(e.to_string()))?;
    let clock = Arc::new(ManualClock::new());
    let sink = MemorySink::new();
    let breaker = CircuitBreaker::new("svc->dep", checked, clock.clone())
        .with_service("svc")
        .with_sink(sink.clone());
    let mut model = Model::new(config);
    let mut held: Vec<(Permit<'_>, ModelPermit)> = Vec::new();
    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Acquire => match (breaker.try_acquire(), model.acquire()) {
                (Ok(permit), Some(expected)) => {
                    prop_assert_eq!(
                        permit.is_probe(),
                        expected.kind == Kind::Probe,
                        "step {}",
                        step
                    );
                    held.push((permit, expected));
                }
                (Err(_), None) => {}
                (real, expected) => {
                    prop_assert!(
                        false,
                        "step {}: breaker admitted {} but model {:?}",
                        step,
                        real.is_ok(),
                        expected
                    )
                }
            },
            Op::Record { index, outcome } if !held.is_empty() => {
                let (permit, expected) = held.remove(index % held.len());
                permit.record(outcome);
                model.record(expected, outcome, None);
            }
            Op::RecordTimed {
                index,
                outcome,
                elapsed_ms,
            } if !held.is_empty() => {
                let (permit, expected) = held.remove(index % held.len());
                permit.record_timed(outcome, Duration::from_millis(elapsed_ms));
                model.record(expected, outcome, Some(elapsed_ms));
            }
            Op::Drop { index } if !held.is_empty() => {
                let (permit, expected) = held.remove(index % held.len());
                drop(permit);
                model.drop_permit(expected);
            }
            Op::Advance { ms } => {
                clock.advance(Duration::from_millis(ms));
                model.advance_ms(ms);
            }
            Op::State => prop_assert_eq!(breaker.state(), model.observe(), "step {}", step),
            Op::SetMode { mode } => {
                breaker.set_config(breaker.config().with_mode(mode));
                model.set_mode(mode);
            }
            Op::Reset => {
                breaker.reset();
                model.reset();
            }
            Op::Record { .. } | Op::RecordTimed { .. } | Op::Drop { .. } => {}
        }
        prop_assert_eq!(&sink.events(), &model.events, "events after step {}", step);
    }
    prop_assert_eq!(breaker.state(), model.observe());
    prop_assert_eq!(&sink.events(), &model.events);
    prop_assert_eq!(breaker.snapshot().counters, model.counters_now());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn breaker_agrees_with_the_reference_model(config in config(), ops in prop::collection::vec(op(), 1..250)) {
        run(config, ops)?;
    }
}
