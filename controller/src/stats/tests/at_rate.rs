//! A prediction set beside runs that measured their load is judged as the model run again at that load (their
//! checkout rate, their dependencies' latencies up the chain); before any run measured it, as made before the run.

use super::*;
use crate::predict::predict;
use crate::spec::{BreakerMode, ExperimentSpec};

/// The shipped seed study, its total-failure condition with the breaker on, and that condition's prediction.
fn seed_study_on() -> (ExperimentSpec, Prediction) {
    let spec = test_support::spec(include_str!("../../../../experiments/payment-errors.toml"));
    let index = spec
        .conditions()
        .into_iter()
        .find(|c| c.fault_rate == 1.0 && c.breaker_mode == BreakerMode::Enforce)
        .expect("the condition is in the spec")
        .index;
    let prediction = predict(&spec)
        .into_iter()
        .find(|p| p.condition == index)
        .expect("the model covers it");
    (spec, prediction)
}

/// Two rounds of the condition measuring `rates` checkouts per second, Checkout answering the frontend in 40
/// and 60 ms.
fn measured(index: usize, rates: [f64; 2]) -> ExperimentStats {
    let runs = (0..2)
        .map(|round| {
            let mut run = metrics_with(
                index as i64,
                round,
                &[(MetricName::CheckoutRate, rates[round as usize])],
            );
            let key = MetricKey::breaker(MetricName::DependencyMeanMs, "frontend->checkout");
            run.values.insert(key, 40.0 + 20.0 * round as f64);
            run
        })
        .collect();
    ExperimentStats::from_runs(info(2), vec![key(index as i64, 1.0, "enforce")], runs)
}

#[test]
fn a_condition_that_measured_its_load_is_predicted_again_at_that_load() {
    let (spec, before) = seed_study_on();
    let assumed = before.checkout_rate.expect("the rate is kept");
    let (slow_a, slow_b) = (assumed.mean * 0.65, assumed.mean * 0.67);
    let stats = measured(before.condition, [slow_a, slow_b]);
    let condition = stats.condition(before.condition as i64);
    let judged = PredictedCondition::of(before.clone(), "at 100%".into(), condition, Some(&spec));
    let load = judged
        .prediction
        .at_measured_load
        .clone()
        .expect("run again");
    assert!(
        (load.checkout_rate - (slow_a + slow_b) / 2.0).abs() < 1e-9,
        "{load:?}"
    );
    assert_eq!(
        load.latency_ms,
        vec![("frontend->checkout".to_owned(), 50.0)]
    );
    assert_eq!(judged.before_run.as_ref(), Some(&before));
    assert!(judged.prediction.rejected.mean < before.rejected.mean);
    let rows = judged.rows();
    assert!(
        matches!(rows[0].kind, RowKind::LoadBasis { rerun: Some(at), measured: Some(_), .. } if *at == load),
        "{:?}",
        rows[0]
    );
    let rate = condition.and_then(|c| c.summary(&MetricKey::run(MetricName::CheckoutRate)));
    let note = load_basis_note(Some(&assumed), rate, Some(&load));
    assert!(
        note.contains("the model at the load the runs measured")
            && note.contains("frontend->checkout's dependency answering in 50.0 ms"),
        "{note}"
    );

    // Without the spec the model cannot run again: judged as made before the run.
    let blind = PredictedCondition::of(before.clone(), "at 100%".into(), condition, None);
    assert_eq!(blind.before_run, None);
    assert_eq!(blind.prediction, before);
}

#[test]
fn before_any_run_the_prediction_made_before_the_run_is_shown() {
    let (spec, before) = seed_study_on();
    let judged = PredictedCondition::of(before.clone(), "at 100%".into(), None, Some(&spec));
    assert_eq!(judged.before_run, None);
    assert_eq!(judged.prediction, before);
    assert!(matches!(
        judged.rows()[0].kind,
        RowKind::LoadBasis {
            rerun: None,
            measured: None,
            ..
        }
    ));
}
