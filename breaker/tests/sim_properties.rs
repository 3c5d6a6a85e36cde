//! Properties of the simulator on random scenarios:
//! - the closed-form bound on opens holds for every detector, half-open policy, backoff, jitter, workload, schedule,
//!   fault kind, pool, number of instances and model (outcomes at the call's end or at once);
//! - step by step, the simulator decides every request as a production breaker and the sequential reference model
//!   (`tests/model`) decide it when they are handed the same trace (arrivals, what the dependency answers, when
//!   each call ends) by a replay written independently of the simulator's event loop.
//!
//! Failing cases are saved under `tests/sim_properties.proptest-regressions` and replayed first.

#[allow(dead_code)]
mod model;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use breaker::sim::{
    self, CallFailure, Decision, Pattern, RawScenario, Scenario, Schedule, Upstream, Warmup,
    Workload,
};
use breaker::{CircuitBreaker, ManualClock, Outcome, OwnedPermit, RawBreakerConfig};
use model::{Kind, Model, ModelPermit};
use proptest::prelude::*;

/// A random breaker config whose slow calls are slower than `latency_ms` (so only failing calls can be slow).
fn breaker_config(latency_ms: u64, jitter: bool) -> impl Strategy<Value = RawBreakerConfig> {
    let jitter = if jitter {
        (0.0f64..0.9).boxed()
    } else {
        Just(0.0).boxed()
    };
    (model::breaker_config(), jitter).prop_map(move |(mut config, jitter)| {
        if let Some(slow) = config.trip.slow_call.as_mut() {
            slow.duration += Duration::from_millis(latency_ms);
        }
        config.open.jitter = jitter;
        config
    })
}

fn schedule(window_s: u64) -> impl Strategy<Value = Schedule> {
    prop_oneof![
        (0..window_s * 1000, 0..window_s * 1000).prop_map(|(start, length)| Schedule::Once {
            start: Duration::from_millis(start),
            length: Duration::from_millis(length),
        }),
        (0..window_s * 1000, 1u64..20_000, 1u64..20_000).prop_map(|(start, on, off)| {
            Schedule::Periodic {
                start: Duration::from_millis(start),
                on: Duration::from_millis(on),
                off: Duration::from_millis(off),
            }
        }),
    ]
}

fn kind() -> impl Strategy<Value = CallFailure> {
    prop_oneof![Just(CallFailure::Error), Just(CallFailure::Hang)]
}

fn pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![Just(Pattern::Random), Just(Pattern::Even)]
}

fn workload() -> impl Strategy<Value = Workload> {
    prop_oneof![
        (0.5f64..300.0, 0.1f64..=1.0).prop_map(|(rate, share)| Workload::Open { rate, share }),
        (1u32..200, 10u64..2_000, 0u64..5_000, 0.1f64..=1.0).prop_map(
            |(users, min, extra, share)| {
                Workload::Closed {
                    users,
                    think_min: Duration::from_millis(min),
                    think_max: Duration::from_millis(min + extra),
                    share,
                }
            }
        ),
    ]
}

/// Any scenario the simulator accepts (latency below the timeout and below every slow-call duration).
fn scenario() -> impl Strategy<Value = RawScenario> {
    (10u64..240, 0u64..50, 1u64..3_000)
        .prop_flat_map(|(window_s, latency_ms, extra_timeout_ms)| {
            (
                Just((window_s, latency_ms, extra_timeout_ms)),
                workload(),
                schedule(window_s),
                (0.0f64..=1.0, pattern(), kind()),
                prop::option::of((1.0f64..200.0, 0u64..20_000)),
                breaker_config(latency_ms, true),
                (1u32..6, prop::option::of(1u32..100), any::<u64>()),
                prop_oneof![Just(sim::Model::AtTimeout), Just(sim::Model::Published)],
            )
        })
        .prop_map(
            |(
                (window_s, latency_ms, extra_timeout_ms),
                workload,
                schedule,
                (failure_rate, pattern, kind),
                warm,
                breaker,
                (instances, workers, seed),
                model,
            )| {
                RawScenario {
                    window: Duration::from_secs(window_s),
                    workload,
                    upstream: Upstream {
                        schedule,
                        failure_rate,
                        pattern,
                        kind,
                        timeout: Duration::from_millis(latency_ms + extra_timeout_ms),
                        latency: Duration::from_millis(latency_ms),
                        warmup: warm.map(|(capacity, length_ms)| Warmup {
                            capacity,
                            length: Duration::from_millis(length_ms),
                        }),
                    },
                    breaker: breaker.build().expect("the model's configs are valid"),
                    instances,
                    workers,
                    seed,
                    log_calls: false,
                    model,
                    callers: Vec::new(),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn opens_never_exceed_the_closed_form_bound(scenario in scenario()) {
        let run = sim::simulate(&checked(scenario)?);
        prop_assert!(
            run.totals.opens <= run.closed_form.opens_bound,
            "{} opens > bound {}",
            run.totals.opens,
            run.closed_form.opens_bound
        );
        let sum: u64 = run.seconds.iter().map(|s| s.reached + s.never_made).sum();
        prop_assert!(sum <= run.totals.dependency_calls);
        prop_assert_eq!(
            run.totals.failed_with_breaker + run.totals.successful,
            run.totals.requests
        );
    }
}

/// The scenario, checked; one the simulator refuses is rejected as a test case.
fn checked(raw: RawScenario) -> Result<Scenario, TestCaseError> {
    Scenario::try_from(raw).map_err(|e| TestCaseError::reject(e.to_string()))
}

/// A request of a trace as the replay sees it.
struct Replayed {
    end_ms: u64,
    instance: usize,
    outcome: Outcome,
    permit: OwnedPermit,
    expected: ModelPermit,
}

/// Replay the simulator's own trace on fresh production breakers and reference models, one per instance, and
/// compare every decision. Arrivals fall on whole milliseconds (the model's time unit).
fn replay(scenario: RawScenario) -> Result<(), TestCaseError> {
    let scenario = checked(scenario)?;
    let run = sim::simulate(&scenario.clone().with_log_calls(true));
    let clock = Arc::new(ManualClock::with_unix_origin_ms(0));
    let config = scenario.breaker().clone().with_mode(breaker::Mode::Enforce);
    let breakers: Vec<Arc<CircuitBreaker>> = (0..scenario.instances())
        .map(|_| {
            Arc::new(CircuitBreaker::new(
                "svc->dep",
                config.clone(),
                clock.clone(),
            ))
        })
        .collect();
    let mut models: Vec<(Model, u64)> = (0..scenario.instances())
        .map(|_| (Model::new(config.clone().into_raw()), 0))
        .collect();
    let advance = |models: &mut Vec<(Model, u64)>, instance: usize, to_ms: u64| {
        let (model, now) = &mut models[instance];
        model.advance_ms(to_ms - *now);
        *now = to_ms;
    };
    // In flight, by (end, start order).
    let mut in_flight: BTreeMap<(u64, usize), Replayed> = BTreeMap::new();
    let finish_until = |in_flight: &mut BTreeMap<(u64, usize), Replayed>,
                        models: &mut Vec<(Model, u64)>,
                        until_ms: u64| {
        while let Some(entry) = in_flight.first_entry() {
            if entry.key().0 > until_ms {
                break;
            }
            let done = entry.remove();
            clock.set(Duration::from_millis(done.end_ms));
            done.permit.record(done.outcome);
            advance(models, done.instance, done.end_ms);
            models[done.instance]
                .0
                .record(done.expected, done.outcome, None);
        }
    };
    for (seq, call) in run.calls.iter().enumerate() {
        prop_assert_eq!(call.at_ns % 1_000_000, 0);
        let at_ms = call.at_ns / 1_000_000;
        finish_until(&mut in_flight, &mut models, at_ms);
        if matches!(call.decision, Decision::Refused | Decision::NoDependency) {
            continue;
        }
        let instance = call.instance as usize;
        clock.set(Duration::from_millis(at_ms));
        advance(&mut models, instance, at_ms);
        let real = breakers[instance].try_acquire_owned();
        let expected = models[instance].0.acquire();
        let decision = match (&real, &expected) {
            (Ok(permit), Some(model)) => {
                prop_assert_eq!(permit.is_probe(), model.kind == Kind::Probe, "call {}", seq);
                if permit.is_probe() {
                    Decision::Probe
                } else {
                    Decision::Admitted
                }
            }
            (Err(_), None) => Decision::Rejected,
            _ => {
                return Err(TestCaseError::fail(format!(
                    "call {seq}: production admitted {}, model {:?}",
                    real.is_ok(),
                    expected.map(|m| m.kind)
                )));
            }
        };
        prop_assert_eq!(decision, call.decision, "call {} at {} ms", seq, at_ms);
        let (Ok(permit), Some(expected)) = (real, expected) else {
            continue;
        };
        let outcome = if call.failed {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        let end_ms = at_ms + call.cost_ns / 1_000_000;
        if call.cost_ns == 0 {
            permit.record(outcome);
            models[instance].0.record(expected, outcome, None);
        } else {
            in_flight.insert(
                (end_ms, seq),
                Replayed {
                    end_ms,
                    instance,
                    outcome,
                    permit,
                    expected,
                },
            );
        }
    }
    // Calls that end before the window does still move the breakers.
    let window_ms = u64::try_from(scenario.window().as_millis()).unwrap_or(u64::MAX);
    finish_until(&mut in_flight, &mut models, window_ms - 1);
    clock.set(scenario.window());
    let model_opens: u64 = models.iter().map(|(m, _)| m.counters.opens).sum();
    let real_opens: u64 = breakers.iter().map(|b| b.snapshot().counters.opens).sum();
    prop_assert_eq!(model_opens, run.totals.opens);
    prop_assert_eq!(real_opens, run.totals.opens);
    Ok(())
}

fn whole_ms_scenario() -> impl Strategy<Value = RawScenario> {
    (
        (
            10u64..120,
            prop::sample::select(vec![
                1.0, 2.0, 4.0, 5.0, 8.0, 10.0, 20.0, 25.0, 40.0, 50.0, 100.0, 200.0,
            ]),
            0.2f64..=1.0,
        ),
        (0u64..50, 1u64..3_000),
        (0.0f64..=1.0, pattern(), kind()),
        breaker_config(0, false),
        (1u32..4, any::<u64>()),
    )
        .prop_flat_map(
            |(
                (window_s, rate, share),
                (latency_ms, extra),
                failure,
                breaker,
                (instances, seed),
            )| {
                (
                    Just((
                        window_s, rate, share, latency_ms, extra, failure, breaker, instances, seed,
                    )),
                    schedule(window_s),
                )
            },
        )
        .prop_map(
            |(
                (
                    window_s,
                    rate,
                    share,
                    latency_ms,
                    extra,
                    (failure_rate, pattern, kind),
                    mut breaker,
                    instances,
                    seed,
                ),
                schedule,
            )| {
                if let Some(slow) = breaker.trip.slow_call.as_mut() {
                    slow.duration += Duration::from_millis(latency_ms);
                }
                RawScenario {
                    window: Duration::from_secs(window_s),
                    workload: Workload::Open { rate, share },
                    upstream: Upstream {
                        schedule,
                        failure_rate,
                        pattern,
                        kind,
                        timeout: Duration::from_millis(latency_ms + extra),
                        latency: Duration::from_millis(latency_ms),
                        warmup: None,
                    },
                    breaker: breaker.build().expect("the model's configs are valid"),
                    instances,
                    workers: None,
                    seed,
                    log_calls: false,
                    model: sim::Model::AtTimeout,
                    callers: Vec::new(),
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn the_simulator_decides_as_the_production_breaker_and_the_model(scenario in whole_ms_scenario()) {
        replay(scenario)?;
    }
}
