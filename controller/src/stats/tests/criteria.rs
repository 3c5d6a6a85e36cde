//! Unit tests of criteria: parsing from `[[validate]]` tables, bad criteria naming the field, checking them
//! against the spec, and judging them by the whole interval.

use super::*;
use crate::metric::{MetricKey, MetricName};
use crate::test_support;

fn criteria(toml_text: &str) -> Result<Vec<Criterion>, CriterionError> {
    criteria_of_spec(toml_text)
}

#[test]
fn criteria_parse_from_validate_tables() {
    let parsed = criteria(
        r#"
name = "ignored by the criteria parser"
[[validate]]
metric = "p95_ms"
endpoint = "checkout"
fault_rate = 1
breaker = "enforce"
comparison = "<"
threshold = 200

[[validate]]
name = "availability holds at half failure"
metric = "availability"
fault_rate = 0.5
breaker = "enforce"
fault_kind = "error"
comparison = ">="
threshold = 0.6
"#,
    )
    .unwrap();
    assert_eq!(parsed.len(), 2);
    assert_eq!(
        parsed[0].metric,
        MetricKey::endpoint(MetricName::P95Ms, "POST /cart/checkout")
    );
    assert_eq!(parsed[0].fault_rate, 1.0);
    assert_eq!(parsed[0].comparison, CriterionComparison::Below);
    assert_eq!(parsed[0].threshold, 200.0);
    assert_eq!(
        parsed[0].to_string(),
        "p95_ms[POST /cart/checkout] at 100% / enforce < 200"
    );
    assert_eq!(parsed[1].comparison, CriterionComparison::AtLeast);
    assert_eq!(
        parsed[1].name.as_deref(),
        Some("availability holds at half failure")
    );
    assert!(criteria("name = \"x\"").unwrap().is_empty());
}

#[test]
fn bad_criteria_name_the_field() {
    let base = "metric = \"availability\"\nfault_rate = 0.5\nbreaker = \"enforce\"\ncomparison = \">=\"\nthreshold = 0.6\n";
    let cases = [
        (base.replace("\">=\"", "\"=>\""), "validate[0].comparison"),
        (
            base.replace("availability", "availabilty"),
            "validate[0].metric",
        ),
        (base.replace("enforce", "on"), "validate[0].breaker"),
        (base.replace("0.5", "1.5"), "validate[0].fault_rate"),
        (
            format!("{base}endpoint = \"checkout\"\n"),
            "validate[0].endpoint",
        ),
        (format!("{base}colour = \"red\"\n"), "validate[0]"),
        (base.replace("threshold = 0.6\n", ""), "validate[0]"),
        (
            base.replace("\"availability\"", "\"p95_ms\""),
            "validate[0].endpoint",
        ),
    ];
    for (body, field) in cases {
        let text =
            format!("[[validate]]\n{base}\n[[validate]]\n{body}").replacen("[[validate]]\n", "", 0);
        let error = criteria(&text).unwrap_err();
        let CriterionError::Field { field: named, .. } = &error else {
            panic!("{error}");
        };
        let expected = field.replace("[0]", "[1]");
        assert!(
            named.starts_with(&expected),
            "{error} does not name {expected}"
        );
    }
}

#[test]
fn criteria_are_checked_against_the_spec() {
    let spec = test_support::spec(
        r#"
name = "x"
duration = "10s"
[load]
users = 1
[fault]
target = "payment"
rates = [0.0, 0.5]
[breaker]
modes = ["disabled", "enforce"]
"#,
    );
    let line = |rate: &str, mode: &str| {
        criteria(&format!(
            "[[validate]]\nmetric = \"availability\"\nfault_rate = {rate}\nbreaker = \"{mode}\"\ncomparison = \">\"\nthreshold = 0.1\n"
        ))
        .unwrap()
    };
    assert!(check_against_spec(&line("0.5", "enforce"), &spec).is_ok());
    let error = check_against_spec(&line("0.75", "enforce"), &spec).unwrap_err();
    assert!(error.to_string().contains("fault_rate 0.75"), "{error}");
    let error = check_against_spec(&line("0.5", "shadow"), &spec).unwrap_err();
    assert!(error.to_string().contains("breaker `shadow`"), "{error}");
}

#[test]
fn a_criterion_passes_only_when_the_whole_interval_satisfies_it() {
    let stats = two_by_two();
    let judge = |comparison: &str, threshold: f64| {
        let parsed = criteria(&format!(
            "[[validate]]\nmetric = \"availability\"\nfault_rate = 0.5\nbreaker = \"disabled\"\ncomparison = \"{comparison}\"\nthreshold = {threshold}\n"
        ))
        .unwrap();
        evaluate(&parsed, &stats).results[0].outcome
    };
    // Off at 50 %: mean 0.52, CI [0.470317, 0.569683].
    assert_eq!(judge(">=", 0.47), CriterionOutcome::Pass);
    // The mean is above 0.5 but the interval is not.
    assert_eq!(judge(">=", 0.5), CriterionOutcome::Fail);
    assert_eq!(judge("<", 0.57), CriterionOutcome::Pass);
    assert_eq!(judge("<", 0.55), CriterionOutcome::Fail);
    assert_eq!(judge(">", 0.6), CriterionOutcome::Fail);
    assert_eq!(judge("<=", 0.6), CriterionOutcome::Pass);
}

#[test]
fn criteria_without_an_interval_cannot_pass() {
    let stats = two_by_two();
    let parsed = criteria(
        "[[validate]]\nmetric = \"availability\"\nfault_rate = 0.25\nbreaker = \"enforce\"\ncomparison = \">\"\nthreshold = 0\n\
         [[validate]]\nmetric = \"energy_j\"\nfault_rate = 0.5\nbreaker = \"enforce\"\ncomparison = \">\"\nthreshold = 0\n",
    )
    .unwrap();
    let report = evaluate(&parsed, &stats);
    assert!(!report.passed());
    assert_eq!(report.results[0].outcome, CriterionOutcome::Unevaluable);
    assert!(report.results[0].explanation.contains("no such condition"));
    assert_eq!(report.results[1].outcome, CriterionOutcome::Unevaluable);
    assert!(evaluate(&[], &stats).passed());
}
