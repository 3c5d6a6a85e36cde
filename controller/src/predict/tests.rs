//! Predictions of the shipped seed-study spec, and measurements judged against their bands.

use super::*;
use crate::spec::ExperimentSpec;
use crate::test_support;

fn seed_study() -> ExperimentSpec {
    let source = include_str!("../../../experiments/payment-errors.toml");
    test_support::spec(source)
}

fn prediction(spec: &ExperimentSpec, rate: f64, mode: BreakerMode) -> Prediction {
    let condition = spec
        .conditions()
        .into_iter()
        .find(|c| c.fault_rate == rate && c.breaker_mode == mode)
        .expect("condition in the spec");
    predict(spec)
        .into_iter()
        .find(|p| p.condition == condition.index)
        .expect("a prediction")
}

// The study's top end: 30 measured minutes (1800 s) / (30 s open + ≈ 1.05 s to the next checkout) ≈ 58 opens
// (the study measured 57 on two machines),
// every checkout failing; without a breaker nothing opens and checkouts fail at the injected rate.
#[test]
fn the_seed_study_at_total_failure_opens_as_its_formula_says() {
    let spec = seed_study();
    let on = prediction(&spec, 1.0, BreakerMode::Enforce);
    let estimate = on.opens_estimate.expect("binary fault");
    assert!(
        (estimate - 1800.0 / (30.0 + 19.0 * 5.5 / 100.0)).abs() < 0.01,
        "{estimate}"
    );
    assert!((on.breaker_opens.mean - estimate).abs() <= 3.0, "{on:?}");
    assert!(on.breaker_opens.high <= on.opens_bound.expect("bound") as f64);
    assert_eq!(
        (on.checkout_failure.low, on.checkout_failure.high),
        (1.0, 1.0)
    );
    assert!(
        on.time_open_s.mean > 1700.0 && on.time_open_s.mean <= 1800.0,
        "{on:?}"
    );
    assert!(on.rejected.mean > 1000.0, "{on:?}");

    let off = prediction(&spec, 1.0, BreakerMode::Disabled);
    assert_eq!(off.breaker_opens.high, 0.0);
    assert_eq!(off.rejected.high, 0.0);
    assert_eq!(off.checkout_failure.mean, 1.0);
}

// At 25 % a five-consecutive-failures breaker barely notices (≈ 1 window in 1000 is all-bad); at 50 % it
// manufactures failures: observed checkout failure well above the injected rate (the study measured ≈ 77 %).
#[test]
fn partial_failure_is_the_regime_where_the_breaker_costs() {
    let spec = seed_study();
    let quarter = prediction(&spec, 0.25, BreakerMode::Enforce);
    assert!(quarter.breaker_opens.mean < 5.0, "{quarter:?}");
    let half = prediction(&spec, 0.5, BreakerMode::Enforce);
    let half_off = prediction(&spec, 0.5, BreakerMode::Disabled);
    assert!(half.checkout_failure.mean > 0.6, "{half:?}");
    assert!(
        (half_off.checkout_failure.mean - 0.5).abs() < 0.05,
        "{half_off:?}"
    );
    assert_eq!(half.injected_rate, 0.5);
}

#[test]
fn conditions_the_model_does_not_cover_have_no_prediction() {
    let source = include_str!("../../../experiments/payment-errors.toml")
        .replace("target = \"payment\"", "target = \"cart\"");
    let spec = test_support::spec(&source);
    assert!(predict(&spec).is_empty());
}

// The seed study with Payment failing only from minute 10 to minute 15 of each run (5 of the 30 measured
// minutes): the opens follow the active time — 300 s / (30 s + ≈ 1.05 s) ≈ 9.7 — and without a breaker a
// sixth of the checkouts fail.
#[test]
fn a_scheduled_fault_is_predicted_over_its_on_period_only() {
    let source = include_str!("../../../experiments/payment-errors.toml").replace(
        "rates = [0.0, 0.25, 0.5, 0.75, 1.0]",
        "rates = [1.0]\nschedule = { start = \"10m\", length = \"5m\" }",
    );
    let spec = test_support::spec(&source);
    let on = prediction(&spec, 1.0, BreakerMode::Enforce);
    let estimate = on.opens_estimate.expect("binary fault");
    assert!(
        (estimate - 300.0 / (30.0 + 19.0 * 5.5 / 100.0)).abs() < 0.01,
        "{estimate}"
    );
    assert!((on.breaker_opens.mean - estimate).abs() <= 1.5, "{on:?}");
    assert!(
        on.time_open_s.mean > 280.0 && on.time_open_s.mean < 340.0,
        "{on:?}"
    );
    let off = prediction(&spec, 1.0, BreakerMode::Disabled);
    assert!(
        (off.checkout_failure.mean - 5.0 / 30.0).abs() < 0.02,
        "{off:?}"
    );
}

// A fault whose on-period lies inside the warmup is not measured: nothing is predicted to open afterwards.
#[test]
fn a_fault_over_before_the_warmup_ends_predicts_nothing_measured() {
    let source = include_str!("../../../experiments/payment-errors.toml").replace(
        "rates = [0.0, 0.25, 0.5, 0.75, 1.0]",
        "rates = [1.0]\nschedule = { start = \"1m\", length = \"2m\" }",
    );
    let spec = test_support::spec(&source);
    let on = prediction(&spec, 1.0, BreakerMode::Enforce);
    assert_eq!(on.opens_estimate, Some(0.0));
    assert!(on.breaker_opens.high <= 1.0, "{on:?}");
    let off = prediction(&spec, 1.0, BreakerMode::Disabled);
    assert_eq!(off.checkout_failure.high, 0.0, "{off:?}");
}

fn shipped(name: &str) -> ExperimentSpec {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../experiments")
        .join(name);
    ExperimentSpec::from_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

// Every shipped spec parses (also checked in the spec's tests) and has a prediction for every condition.
#[test]
fn every_shipped_experiment_has_its_predictions() {
    let (specs, _advisor_inputs) = test_support::shipped_experiments();
    let names: Vec<String> = specs
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(names.len() >= 7, "{names:?}");
    for name in names {
        let spec = shipped(&name);
        let predictions = predict(&spec);
        assert_eq!(predictions.len(), spec.conditions().len(), "{name}");
        for p in &predictions {
            for (metric, band) in p.bands() {
                assert!(
                    band.low.is_finite() && band.low <= band.high,
                    "{name} {metric:?}: {band:?}"
                );
            }
        }
    }
}

// The blip experiments: 10 s of errors in every minute from 20 s on, over 9 measured minutes. The opens bound
// falls as the open window grows, and a window longer than the blip keeps rejecting after Payment is back.
#[test]
fn the_blip_experiments_show_the_opens_bound_and_the_cost_of_a_long_window() {
    let mut rows = Vec::new();
    for window in [10, 30, 60] {
        let spec = shipped(&format!("payment-blips-open{window}s.toml"));
        let on = prediction(&spec, 1.0, BreakerMode::Enforce);
        let off = prediction(&spec, 1.0, BreakerMode::Disabled);
        assert!(
            on.breaker_opens.high <= on.opens_bound.expect("bound") as f64,
            "{on:?}"
        );
        rows.push((window, on, off));
    }
    for (window, on, off) in &rows {
        eprintln!(
            "open {window}s: opens {:.1} [{:.0}, {:.0}] estimate {:.1} bound {:?}; rejected {:.0}; checkout failure {:.3} (off {:.3}); open {:.0} s",
            on.breaker_opens.mean,
            on.breaker_opens.low,
            on.breaker_opens.high,
            on.opens_estimate.unwrap_or(f64::NAN),
            on.opens_bound,
            on.rejected.mean,
            on.checkout_failure.mean,
            off.checkout_failure.mean,
            on.time_open_s.mean,
        );
    }
    let (short, long) = (&rows[0].1, &rows[2].1);
    assert!(
        short.breaker_opens.mean >= long.breaker_opens.mean,
        "{rows:?}"
    );
    // Without a breaker a sixth of the checkouts fail (10 s in every 60 s); a 60 s window rejects far more.
    assert!(
        (rows[0].2.checkout_failure.mean - 1.0 / 6.0).abs() < 0.03,
        "{rows:?}"
    );
    assert!(
        long.checkout_failure.mean > 2.0 * short.checkout_failure.mean,
        "{rows:?}"
    );
    assert!(
        long.time_open_s.mean > 4.0 * short.time_open_s.mean,
        "{rows:?}"
    );
}

// The pool experiment: half the tasks check out against a hanging Payment for 3 of its 4.5 measured minutes.
#[test]
fn the_pool_experiment_predicts_the_breaker_opening_only_during_the_hang() {
    let spec = shipped("pool-exhaustion.toml");
    let on = prediction(&spec, 1.0, BreakerMode::Enforce);
    // 180 s of hang / (10 s open + 3 s timeout + the next call) ≈ 13.8 opens, each 10 s open.
    let estimate = on.opens_estimate.expect("binary fault");
    assert!(
        (estimate - 180.0 / (10.0 + 3.0 + 1.0 / 200.0)).abs() < 0.01,
        "{on:?}"
    );
    assert!((on.breaker_opens.mean - estimate).abs() <= 1.0, "{on:?}");
    assert!(
        on.time_open_s.mean > 120.0 && on.time_open_s.mean <= 180.0,
        "{on:?}"
    );
    let off = prediction(&spec, 1.0, BreakerMode::Disabled);
    assert!(
        (off.checkout_failure.mean - 2.0 / 3.0).abs() < 0.02,
        "{off:?}"
    );
}

// Seed 001's arithmetic beside the simulator: 256 workers / (400 requests a second × half of them calling the
// hanging Payment) = 1.28 s without a breaker; with it the pool fills too (the first timeout period holds 200
// checkouts a second for 3 s), but refuses far fewer requests; admitting every caller in half-open refills it.
#[test]
fn the_pool_experiment_predicts_the_time_to_exhaustion_by_formula_and_by_simulation() {
    let spec = shipped("pool-exhaustion.toml");
    let off = prediction(&spec, 1.0, BreakerMode::Disabled);
    let pool = off.pool.as_ref().expect("a hang predicts the pool");
    assert_eq!(pool.workers, 256);
    let formula = pool.formula_s.expect("a hang with a pool");
    assert!((formula - 1.28).abs() < 1e-9, "{pool:?}");
    let simulated = pool.exhaustion_s.expect("the pool fills");
    assert!(
        simulated.band_low > 1.0 && simulated.band_high < 1.6,
        "{pool:?}"
    );
    assert!(
        off.bands()
            .iter()
            .any(|(metric, _)| *metric == MetricName::PoolExhaustionS)
    );
    let on = prediction(&spec, 1.0, BreakerMode::Enforce);
    let on_pool = on.pool.as_ref().expect("a hang predicts the pool");
    assert!(
        on_pool.refused.mean * 10.0 < pool.refused.mean,
        "{on_pool:?} vs {pool:?}"
    );
    let errors = prediction(&seed_study(), 1.0, BreakerMode::Enforce);
    assert_eq!(errors.pool, None, "errors hold no worker");
}

// Every prediction is of Checkout's breaker on Payment and, up the checkout's chain, of the frontend's breaker on
// Checkout, which the fault also reaches: its bands made of `SEEDS` simulations with the band inside the
// simulated range. At total failure with errors both trip on the same five checkouts and probe together (one
// config, every failure below a 5xx above), so each opens as often as the other, and the frontend's, in front,
// takes the rejections: the run's rejected requests are the two breakers' rejections summed.
#[test]
fn predictions_are_per_breaker_with_bands_from_the_seeded_simulations() {
    let spec = seed_study();
    let predictions = predict(&spec);
    assert!(!predictions.is_empty());
    for p in &predictions {
        assert_eq!(p.breaker, "checkout->payment");
        assert!(p.not_modelled.is_empty(), "{:?}", p.not_modelled);
        let up: Vec<&str> = p.upstream.iter().map(|b| b.breaker.as_str()).collect();
        assert_eq!(up, ["frontend->checkout"]);
        for (_, band) in p
            .bands()
            .into_iter()
            .chain(p.per_breaker().into_iter().flat_map(|(_, bands, _)| bands))
        {
            assert_eq!(u64::from(band.simulations), SEEDS);
            assert!(band.low <= band.band_low && band.band_low <= band.band_high);
            assert!(band.band_high <= band.high, "{band:?}");
        }
    }
    let on = prediction(&spec, 1.0, BreakerMode::Enforce);
    let (frontend, own) = (&on.upstream[0], on.breaker_rejected.expect("kept"));
    assert!(
        (frontend.opens.mean - on.breaker_opens.mean).abs() <= 1.0,
        "{on:?}"
    );
    assert!(frontend.rejected.mean > 10.0 * own.mean, "{on:?}");
    assert!((frontend.rejected.mean + own.mean - on.rejected.mean).abs() < 1e-9);
    assert!(
        frontend
            .opens_bound
            .is_some_and(|b| b as f64 >= frontend.opens.high)
    );
    // Percentiles by rank: of 0, 1, …, 39 the 2.5th is 1 and the 97.5th is 38.
    let values: Vec<f64> = (0..40).rev().map(f64::from).collect();
    let band = Band::of(&values);
    assert_eq!(
        (band.band_low, band.band_high, band.simulations),
        (1.0, 38.0, 40)
    );
    assert_eq!((band.low, band.high, band.mean), (0.0, 39.0, 19.5));
}

// A workload of one's own whose critical task ends in the boutique frontend's `POST /cart/checkout` goes through
// the same chain as the mix's checkouts: the frontend's breaker on Checkout is predicted beside Checkout's. One
// that ends elsewhere, or sends its load to targets of one's own, names that breaker as not modelled; and with
// `breaker.services = ["checkout"]` the frontend's breaker is disabled, so no breaker is up the chain.
#[test]
fn a_workload_of_ones_own_ending_in_the_boutique_checkout_predicts_the_whole_chain() {
    let source = include_str!("../../../experiments/pool-exhaustion.toml");
    let upstream = |spec: &ExperimentSpec| {
        let p = prediction(spec, 1.0, BreakerMode::Enforce);
        let up: Vec<String> = p.upstream.iter().map(|b| b.breaker.clone()).collect();
        let left: Vec<String> = p.not_modelled.iter().map(|b| b.breaker.clone()).collect();
        (up, left)
    };
    let frontend = vec!["frontend->checkout".to_owned()];
    let boutique = test_support::spec(source);
    assert!(checkouts_through_boutique(&boutique));
    assert_eq!(upstream(&boutique), (frontend.clone(), vec![]));

    let elsewhere =
        test_support::spec(&source.replace("path = \"/cart/checkout\"", "path = \"/buy\""));
    assert!(!checkouts_through_boutique(&elsewhere));
    assert_eq!(upstream(&elsewhere), (vec![], frontend.clone()));

    let targets = test_support::spec(&format!(
        "{source}\n[targets]\nfrontend = \"http://127.0.0.1:9\"\npayment = \"http://127.0.0.1:10\"\n"
    ));
    assert!(!checkouts_through_boutique(&targets));
    assert_eq!(upstream(&targets), (vec![], frontend));

    let storm = shipped("probe-storm-n5.toml");
    assert!(checkouts_through_boutique(&storm));
    assert_eq!(upstream(&storm), (vec![], vec![]));
}

// A band of no width (every simulation agrees) is met by a measurement equal to it up to float rounding — 50
// replicas' 60.006 s summed is not 3000.3 to the last bit — and missed by anything more.
#[test]
fn a_band_is_missed_by_a_difference_not_by_rounding() {
    let band = Band::of(&[3000.3; 40]);
    let summed: f64 = std::iter::repeat_n(60.006, 50).sum();
    assert_ne!(summed, 3000.3);
    assert!(!band.misses(summed, summed));
    assert!(band.misses(3000.31, 3000.31));
    assert!(band.misses(3000.29, 3000.29));
    assert!(!Band::of(&[0.0; 40]).misses(0.0, 0.0));
    assert!(Band::of(&[0.0; 40]).misses(1e-6, 1e-6));
}

// The probe storm at 50 replicas: each replica's breaker sees a fiftieth of the checkouts and opens about as often
// as one breaker seeing them all (it trips on its own fifth failure), so the opens summed over the instances the
// spec names are far more than one breaker's.
#[test]
fn the_predictions_model_the_specs_instances() {
    let source = include_str!("../../../experiments/probe-storm-n50.toml");
    let fifty = prediction(&test_support::spec(source), 1.0, BreakerMode::Enforce);
    let one = prediction(
        &test_support::spec(&source.replace("instances = 50", "instances = 1")),
        1.0,
        BreakerMode::Enforce,
    );
    assert!(
        fifty.breaker_opens.mean > 20.0 * one.breaker_opens.mean,
        "{fifty:?} vs {one:?}"
    );
}

// The model given the load that ran: the prediction keeps the checkout rate its simulations made (users over
// the mean think time, one task in nineteen a checkout: 100 / 5.5 s / 19 ≈ 0.957/s); run again at 70 % of it,
// the same config trips later and rejects fewer calls, and the simulations send the rate asked for. With the
// frontend's dependency (Checkout) answering in 500 ms, each of the frontend breaker's probes is in flight half a
// second: that breaker spends less time open.
#[test]
fn a_prediction_at_a_measured_load_simulates_that_load() {
    let spec = seed_study();
    let before = prediction(&spec, 1.0, BreakerMode::Enforce);
    assert_eq!(before.at_measured_load, None);
    let assumed = before.checkout_rate.expect("the rate is kept");
    assert!(
        (assumed.mean - 100.0 / 5.5 / 19.0).abs() < 0.05,
        "{assumed:?}"
    );
    assert!(assumed.band_low < assumed.band_high, "{assumed:?}");
    let load = |checkout_rate: f64, latency_ms: f64| MeasuredLoad {
        checkout_rate,
        latency_ms: vec![("frontend->checkout".to_owned(), latency_ms)],
    };
    let slower = assumed.mean * 0.7;
    let at = predict_at_load(&spec, before.condition, &load(slower, 0.0)).expect("covered");
    assert_eq!(at.at_measured_load, Some(load(slower, 0.0)));
    let rate = at.checkout_rate.expect("the rate is kept");
    assert!(
        rate.band_low <= slower && slower <= rate.band_high,
        "{rate:?} against {slower}"
    );
    assert!(
        at.rejected.mean < before.rejected.mean * 0.8,
        "{} against {}",
        at.rejected.mean,
        before.rejected.mean
    );
    assert!(at.breaker_opens.mean <= before.breaker_opens.mean);

    let same = predict_at_load(&spec, before.condition, &load(assumed.mean, 0.0)).expect("covered");
    let slow =
        predict_at_load(&spec, before.condition, &load(assumed.mean, 500.0)).expect("covered");
    let open = |p: &Prediction| p.upstream[0].time_open_s.mean;
    assert_eq!(same.upstream[0].breaker, "frontend->checkout");
    assert!(
        open(&slow) < open(&same) - 10.0,
        "{} against {}",
        open(&slow),
        open(&same)
    );

    // A rate or latency no simulation can hold, or a condition the spec does not have: nothing.
    for bad in [
        load(0.0, 0.0),
        load(f64::NAN, 0.0),
        load(slower, -1.0),
        load(slower, 700_000.0),
    ] {
        assert!(
            predict_at_load(&spec, before.condition, &bad).is_none(),
            "{bad:?}"
        );
    }
    assert!(predict_at_load(&spec, 10_000, &load(slower, 0.0)).is_none());
}
