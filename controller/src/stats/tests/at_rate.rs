//! A prediction set beside runs whose checkout rate missed the rate it assumed is judged as the model run again
//! at the measured rate; one whose rate the runs matched is judged as made before the run.

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

/// Two rounds of the condition measuring `rates` checkouts per second.
fn measured(index: usize, rates: [f64; 2]) -> ExperimentStats {
    let runs = (0..2)
        .map(|round| {
            metrics_with(
                index as i64,
                round,
                &[(MetricName::CheckoutRate, rates[round as usize])],
            )
        })
        .collect();
    ExperimentStats::from_runs(info(2), vec![key(index as i64, 1.0, "enforce")], runs)
}

#[test]
fn a_measured_rate_outside_the_assumed_one_is_predicted_again_at_that_rate() {
    let (spec, before) = seed_study_on();
    let assumed = before.checkout_rate.expect("the rate is kept");
    let (slow_a, slow_b) = (assumed.mean * 0.65, assumed.mean * 0.67);
    let stats = measured(before.condition, [slow_a, slow_b]);
    let condition = stats.condition(before.condition as i64);
    let judged = PredictedCondition::of(before.clone(), "at 100%".into(), condition, Some(&spec));
    let rerun_at = judged.prediction.at_measured_rate.expect("run again");
    assert!(
        (rerun_at - (slow_a + slow_b) / 2.0).abs() < 1e-9,
        "{rerun_at}"
    );
    assert_eq!(judged.before_run.as_ref(), Some(&before));
    assert!(judged.prediction.rejected.mean < before.rejected.mean);
    let rows = judged.rows();
    assert!(
        matches!(rows[0].kind, RowKind::LoadBasis { rerun_at: Some(r), measured: Some(_), .. } if r == rerun_at),
        "{:?}",
        rows[0]
    );
    let note = load_basis_note(
        &assumed,
        condition.and_then(|c| c.summary(&MetricKey::run(MetricName::CheckoutRate))),
        Some(rerun_at),
    );
    assert!(
        note.contains("the bands below are the model at the measured"),
        "{note}"
    );

    // Without the spec the model cannot run again: judged as made before the run.
    let blind = PredictedCondition::of(before.clone(), "at 100%".into(), condition, None);
    assert_eq!(blind.before_run, None);
    assert_eq!(blind.prediction, before);
}

#[test]
fn a_measured_rate_within_the_assumed_one_keeps_the_prediction_made_before_the_run() {
    let (spec, before) = seed_study_on();
    let assumed = before.checkout_rate.expect("the rate is kept");
    let stats = measured(
        before.condition,
        [assumed.mean * 0.999, assumed.mean * 1.001],
    );
    let judged = PredictedCondition::of(
        before.clone(),
        "at 100%".into(),
        stats.condition(before.condition as i64),
        Some(&spec),
    );
    assert_eq!(judged.before_run, None);
    assert_eq!(judged.prediction, before);
    assert!(matches!(
        judged.rows()[0].kind,
        RowKind::LoadBasis {
            rerun_at: None,
            measured: Some(_),
            ..
        }
    ));
}
