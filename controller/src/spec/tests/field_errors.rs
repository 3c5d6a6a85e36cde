//! Errors name the dotted field and its line: unknown fields, impossible values, syntax.

use super::*;

#[test]
fn unknown_field_after_a_table_header_belongs_to_the_table() {
    let (field, line, message) = error_of(&format!("{MINIMAL}bogus = 1\n"));
    assert_eq!(field, "load.bogus", "{message}");
    assert_eq!(line, 7, "{message}");
    assert!(message.contains("unknown field"), "{message}");
}

#[test]
fn unknown_field_in_a_table_names_table_and_key() {
    let source =
        "name = \"t\"\nduration = \"10s\"\n\n[load]\nusers = 2\nthinktime = [\"1s\", \"2s\"]\n";
    let (field, line, message) = error_of(source);
    assert_eq!(field, "load.thinktime", "{message}");
    assert_eq!(line, 6, "{message}");
}

#[test]
fn unknown_field_before_any_table() {
    let source = "name = \"t\"\ndurration = \"10s\"\n[load]\nusers = 2\n";
    let (field, line, message) = error_of(source);
    assert_eq!(field, "durration", "{message}");
    assert_eq!(line, 2, "{message}");
}

#[test]
fn unknown_field_in_an_inline_table() {
    let source = format!(
        "{MINIMAL}[fault]\ntarget = \"payment\"\nrates = [1.0]\nmatch = {{ methd = \"POST\" }}\n"
    );
    let (field, line, message) = error_of(&source);
    assert_eq!(field, "fault.match.methd", "{message}");
    assert_eq!(line, 10, "{message}");
}

#[test]
fn zero_users_is_impossible() {
    let (field, line, _) = error_of("name = \"t\"\nduration = \"10s\"\n[load]\nusers = 0\n");
    assert_eq!((field.as_str(), line), ("load.users", 4));
}

#[test]
fn negative_users_is_a_type_error_naming_the_field() {
    let (field, line, message) = error_of("name = \"t\"\nduration = \"10s\"\n[load]\nusers = -3\n");
    assert_eq!((field.as_str(), line), ("load.users", 4), "{message}");
}

#[test]
fn rate_out_of_range_names_the_element() {
    let source = format!("{MINIMAL}\n[fault]\ntarget = \"payment\"\nrates = [0.0, 1.5]\n");
    let (field, line, message) = error_of(&source);
    assert_eq!((field.as_str(), line), ("fault.rates[1]", 10), "{message}");
}

#[test]
fn unknown_fault_target_is_rejected() {
    let source = format!("{MINIMAL}\n[fault]\ntarget = \"paymnet\"\nrates = [0.5]\n");
    let (field, line, message) = error_of(&source);
    assert_eq!((field.as_str(), line), ("fault.target", 9), "{message}");
    assert!(message.contains("paymnet"), "{message}");
}

#[test]
fn unknown_external_target_is_rejected() {
    let source = format!("{MINIMAL}\n[targets]\nfrontned = \"http://127.0.0.1:1\"\n");
    let (field, line, message) = error_of(&source);
    assert_eq!((field.as_str(), line), ("targets.frontned", 9), "{message}");
}

#[test]
fn bad_target_url_is_rejected() {
    let source = format!("{MINIMAL}\n[targets]\nfrontend = \"ftp://x\"\n");
    let (field, _, message) = error_of(&source);
    assert_eq!(field, "targets.frontend", "{message}");
}

#[test]
fn bad_duration_names_field() {
    let (field, line, message) =
        error_of("name = \"t\"\nduration = \"ten seconds\"\n[load]\nusers = 1\n");
    assert_eq!((field.as_str(), line), ("duration", 2), "{message}");
}

#[test]
fn warmup_must_be_shorter_than_duration() {
    let (field, line, _) =
        error_of("name = \"t\"\nduration = \"10s\"\nwarmup = \"10s\"\n[load]\nusers = 1\n");
    assert_eq!((field.as_str(), line), ("warmup", 3));
}

#[test]
fn scaled_duration_below_a_second_is_rejected() {
    let (field, _, _) =
        error_of("name = \"t\"\nduration = \"10s\"\ntime_scale = 100\n[load]\nusers = 1\n");
    assert_eq!(field, "duration");
}

#[test]
fn zero_time_scale_is_rejected() {
    let (field, line, _) =
        error_of("name = \"t\"\nduration = \"10s\"\ntime_scale = 0.0\n[load]\nusers = 1\n");
    assert_eq!((field.as_str(), line), ("time_scale", 3));
}

#[test]
fn think_time_min_above_max_is_rejected() {
    let (field, line, _) = error_of(
        "name = \"t\"\nduration = \"10s\"\n[load]\nusers = 1\nthink_time = [\"5s\", \"1s\"]\n",
    );
    assert_eq!((field.as_str(), line), ("load.think_time", 5));
}

#[test]
fn delay_kind_needs_a_delay() {
    let source =
        format!("{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"delay\"\nrates = [0.5]\n");
    let (field, _, message) = error_of(&source);
    assert_eq!(field, "fault.delay", "{message}");
}

#[test]
fn status_outside_error_range_is_rejected() {
    let source = format!("{MINIMAL}\n[fault]\ntarget = \"payment\"\nstatus = 200\nrates = [0.5]\n");
    let (field, line, _) = error_of(&source);
    assert_eq!((field.as_str(), line), ("fault.status", 10));
}

#[test]
fn unknown_breaker_mode_names_field() {
    let source = format!("{MINIMAL}\n[breaker]\nmodes = [\"enforce\", \"sometimes\"]\n");
    let (field, line, message) = error_of(&source);
    assert_eq!(line, 9, "{message}");
    assert!(field.starts_with("breaker.modes"), "{field}: {message}");
}

#[test]
fn duplicate_breaker_mode_is_rejected() {
    let source = format!("{MINIMAL}\n[breaker]\nmodes = [\"enforce\", \"enforce\"]\n");
    let (field, _, _) = error_of(&source);
    assert_eq!(field, "breaker.modes[1]");
}

#[test]
fn missing_required_field_is_named() {
    let (field, _, message) = error_of("name = \"t\"\n[load]\nusers = 1\n");
    assert!(field.ends_with("duration"), "{field}: {message}");
}

#[test]
fn syntax_error_gives_a_line() {
    let error = ExperimentSpec::parse("name = \"t\nduration = 1\n").unwrap_err();
    assert_eq!(error.line(), Some(1), "{error}");
}

#[test]
fn error_message_names_field_and_line() {
    let error =
        ExperimentSpec::parse("name = \"t\"\nduration = \"10s\"\n[load]\nusers = 0\n").unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("load.users (line 4, column 9)"),
        "{message}"
    );
}

/// Found by `tests/fuzz_spec.rs`: a bare `[` was a field error naming the empty field.
#[test]
fn a_bare_table_bracket_is_a_syntax_error_not_an_empty_field() {
    for source in ["[\n", "[]\n", &format!("{MINIMAL}\n[\n")] {
        let error = ExperimentSpec::parse(source).expect_err("not TOML");
        assert!(
            matches!(error, SpecError::Syntax { .. }),
            "{source:?}: {error:?}"
        );
    }
}
