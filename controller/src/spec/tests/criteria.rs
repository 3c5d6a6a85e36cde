//! `[[validate]]`: criteria read into the spec, their errors named.

use super::*;
use crate::test_support;

#[test]
fn validate_tables_become_the_specs_criteria() {
    let source = format!(
        "{MINIMAL}\n[[validate]]\nmetric = \"availability\"\nfault_rate = 0.0\nbreaker = \"enforce\"\n\
         comparison = \">=\"\nthreshold = 0.9\n"
    );
    let spec = test_support::spec(&source);
    assert_eq!(spec.validate.len(), 1);
    assert_eq!(spec.validate[0].fault_rate, 0.0);
    assert!(test_support::spec(MINIMAL).validate.is_empty());
}

#[test]
fn a_bad_criterion_names_its_field_and_line() {
    let bad_comparison = format!(
        "{MINIMAL}\n[[validate]]\nmetric = \"availability\"\nfault_rate = 0.0\nbreaker = \"enforce\"\n\
         comparison = \"about\"\nthreshold = 0.9\n"
    );
    let (field, line, message) = error_of(&bad_comparison);
    assert_eq!(field, "validate[0].comparison", "{message}");
    assert!(line >= 8, "{message}");

    // A rate the experiment does not run cannot be judged.
    let not_run = format!(
        "{MINIMAL}\n[[validate]]\nmetric = \"availability\"\nfault_rate = 0.5\nbreaker = \"enforce\"\n\
         comparison = \">=\"\nthreshold = 0.9\n"
    );
    let (field, _, message) = error_of(&not_run);
    assert_eq!(field, "validate[0]", "{message}");
    assert!(message.contains("fault_rate"), "{message}");
}
