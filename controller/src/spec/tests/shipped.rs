//! The shipped experiments and the README's examples parse, with the designs they publish.

use super::*;
use crate::test_support;

#[test]
fn every_shipped_experiment_parses() {
    let (specs, advisor_inputs) = test_support::shipped_experiments();
    for path in &advisor_inputs {
        crate::advisor::TuneInput::from_file(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for path in &specs {
        let spec =
            ExperimentSpec::from_file(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!spec.plan().is_empty(), "{}", path.display());
    }
    let parsed = specs.len();
    assert!(
        parsed >= 3,
        "expected the seed study, the hang variant and the smoke test"
    );
}

#[test]
fn seed_study_has_the_published_design() {
    let spec = ExperimentSpec::from_file(experiments_dir().join("payment-errors.toml")).unwrap();
    assert_eq!(spec.rounds, 15);
    assert_eq!(spec.duration, Duration::from_secs(30 * 60));
    assert_eq!(spec.warmup, Duration::from_secs(5 * 60));
    assert_eq!(spec.load.users, 100);
    assert_eq!(
        spec.load.think_time,
        (Duration::from_secs(1), Duration::from_secs(10))
    );
    assert_eq!(spec.fault.target, "payment");
    assert_eq!(
        spec.fault.kinds,
        vec![ConditionFault::Error {
            status: agent::api::ErrorStatus::INTERNAL_SERVER_ERROR
        }]
    );
    assert_eq!(spec.fault.rates, vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    assert_eq!(
        spec.breaker.modes,
        vec![BreakerMode::Disabled, BreakerMode::Enforce]
    );
    assert_eq!(spec.conditions().len(), 10);
    assert_eq!(spec.plan().len(), 150);
    let config = spec.breaker.config_for(BreakerMode::Enforce);
    assert_eq!(config.mode(), breaker::Mode::Enforce);
    assert_eq!(config.trip().consecutive_failures(), Some(5));
    assert_eq!(config.open().base(), Duration::from_secs(30));
    assert_eq!(
        spec.breaker.config_for(BreakerMode::Disabled).mode(),
        breaker::Mode::Disabled
    );
}

#[test]
fn smoke_experiment_takes_about_a_minute() {
    let spec = ExperimentSpec::from_file(experiments_dir().join("smoke.toml")).unwrap();
    let total: Duration = spec
        .plan()
        .iter()
        .map(|_| spec.run_warmup() + spec.run_duration())
        .sum();
    assert!(total <= Duration::from_secs(70), "{total:?}");
    assert!(total >= Duration::from_secs(30), "{total:?}");
}

#[test]
fn hang_variant_uses_hang_faults() {
    let spec = ExperimentSpec::from_file(experiments_dir().join("payment-hang.toml")).unwrap();
    assert_eq!(spec.fault.kinds, vec![ConditionFault::Hang]);
    assert_eq!(
        spec.fault.match_rule.path_prefix.as_deref(),
        Some("/charge")
    );
}

#[test]
fn minimal_spec_takes_defaults() {
    let spec = test_support::spec(MINIMAL);
    assert_eq!(spec.rounds, 1);
    assert_eq!(spec.time_scale, 1.0);
    assert_eq!(spec.order, Order::Randomized);
    assert_eq!(spec.warmup, Duration::ZERO);
    assert_eq!(spec.fault.rates, vec![0.0]);
    assert_eq!(spec.breaker.modes, vec![BreakerMode::Enforce]);
    assert_eq!(spec.source, MINIMAL);
}

/// The spec documentation's examples are specs that parse, and its example gate has criteria.
#[test]
fn every_toml_example_of_the_experiments_readme_is_a_valid_spec() {
    let readme = std::fs::read_to_string(experiments_dir().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```toml\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap())
        .collect();
    assert!(!blocks.is_empty(), "the README shows an example spec");
    for block in &blocks {
        let spec = test_support::spec(block);
        assert!(!spec.validate.is_empty(), "the example is a release gate");
    }
    // Every table of a spec is documented.
    for table in [
        "[load]",
        "[fault]",
        "[fault.match]",
        "[breaker]",
        "[breaker.trip]",
        "[breaker.trip.failure_rate]",
        "[breaker.trip.slow_call]",
        "[breaker.open]",
        "[breaker.half_open]",
        "[stop]",
        "[targets]",
        "[[sources]]",
        "[[validate]]",
    ] {
        assert!(
            readme.contains(&format!("`{table}`")),
            "{table} is documented"
        );
    }
}
