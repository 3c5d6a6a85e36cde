//! The `[breaker]` table: the breaker's vocabulary, scaling, and its errors.

use super::*;
use crate::test_support;

#[test]
fn breaker_sections_use_the_breaker_vocabulary_and_scale() {
    let spec = test_support::spec(&format!(
        "time_scale = 10\n{MINIMAL}[breaker]\nmodes = [\"shadow\"]\n[breaker.trip]\nfailure_rate = {{ threshold = 0.5, window = \"20s\", min_calls = 20 }}\n[breaker.open]\nbase = \"30s\"\nmax = \"5m\"\n"
    ));
    let config = spec.breaker_config(BreakerMode::Shadow).unwrap();
    assert_eq!(config.mode(), breaker::Mode::Shadow);
    assert_eq!(config.open().base(), Duration::from_secs(3));
    assert_eq!(config.open().max(), Duration::from_secs(30));
    assert_eq!(
        config.trip().failure_rate().unwrap().window(),
        Duration::from_secs(2)
    );
    // Unscaled as written.
    assert_eq!(spec.breaker.config.open().base(), Duration::from_secs(30));
    assert!(config.to_toml_string().contains("mode = \"shadow\""));
}

#[test]
fn unknown_breaker_field_names_field_and_line() {
    let source = format!(
        "{MINIMAL}[breaker]\nmodes = [\"enforce\"]\n[breaker.trip]\nconsecutive_failure = 5\n"
    );
    let (field, line, message) = error_of(&source);
    assert_eq!(
        (field.as_str(), line),
        ("breaker.trip.consecutive_failure", 10),
        "{message}"
    );
}

#[test]
fn invalid_breaker_value_is_named_by_the_breaker_validation() {
    let source = format!(
        "{MINIMAL}[breaker]\nmodes = [\"enforce\"]\n[breaker.half_open]\nsuccesses_to_close = 0\n"
    );
    let (field, line, message) = error_of(&source);
    assert_eq!(field, "breaker.half_open.successes_to_close", "{message}");
    assert_eq!(line, 9, "{message}");
}

#[test]
fn bad_breaker_duration_names_field() {
    let source =
        format!("{MINIMAL}[breaker]\nmodes = [\"enforce\"]\n[breaker.open]\nbase = \"soon\"\n");
    let (field, line, message) = error_of(&source);
    assert_eq!(
        (field.as_str(), line),
        ("breaker.open.base", 10),
        "{message}"
    );
}

#[test]
fn breaker_services_narrow_the_config_and_follow_replicas() {
    let every = test_support::spec(MINIMAL);
    let applies = |spec: &ExperimentSpec, name: &str| {
        spec.breaker
            .applies_to(&crate::target::ServiceId::new(name).unwrap())
    };
    assert!(applies(&every, "frontend") && applies(&every, "checkout#3"));
    let with = |services: &str| {
        format!("{MINIMAL}[breaker]\nmodes = [\"enforce\"]\nservices = {services}\n")
    };
    let spec = test_support::spec(&with("[\"checkout\"]"));
    assert_eq!(
        spec.breaker.services,
        Some(vec![boutique::ServiceName::Checkout.into()])
    );
    assert!(applies(&spec, "checkout") && applies(&spec, "checkout#2"));
    assert!(!applies(&spec, "frontend") && !applies(&spec, "checkoutx"));

    let unknown = with("[\"checkout\", \"till\"]");
    let services_line = unknown
        .lines()
        .position(|line| line.starts_with("services"))
        .unwrap()
        + 1;
    let (field, line, message) = error_of(&unknown);
    assert_eq!(
        (field.as_str(), line),
        ("breaker.services[1]", services_line),
        "{message}"
    );
    assert!(message.contains("`till`"), "{message}");
    assert_eq!(
        error_of(&with("[\"cart\", \"cart\"]")).0,
        "breaker.services[1]"
    );
    assert_eq!(error_of(&with("[]")).0, "breaker.services");
}

#[test]
fn breaker_instances_default_to_one_and_are_bounded() {
    assert_eq!(test_support::spec(MINIMAL).breaker.instances, 1);
    let spec = test_support::spec(&format!(
        "{MINIMAL}[breaker]\nmodes = [\"enforce\"]\ninstances = 50\n"
    ));
    assert_eq!(spec.breaker.instances, 50);
    for instances in ["0", "10001"] {
        let source =
            format!("{MINIMAL}[breaker]\nmodes = [\"enforce\"]\ninstances = {instances}\n");
        let (field, _, message) = error_of(&source);
        assert_eq!(field, "breaker.instances", "{message}");
    }
}
