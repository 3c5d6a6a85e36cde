//! The `[fault]` table: container kinds and signals, the match method.

use super::*;

#[test]
fn container_kinds_parse_with_kills_signal() {
    let source = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkinds = [\"pause\", \"kill\", \"restart\"]\nsignal = \"term\"\nrates = [0.0, 1.0]\n"
    );
    let spec = ExperimentSpec::parse(&source).expect("container kinds parse");
    assert_eq!(
        spec.fault.kinds,
        vec![
            FaultKind::Pause,
            FaultKind::Kill { signal: "SIGTERM" },
            FaultKind::Restart
        ]
    );
    assert!(
        spec.fault
            .kinds
            .iter()
            .all(|kind| kind.name().is_container())
    );
    let labels: Vec<String> = spec
        .plan()
        .iter()
        .map(|run| run.condition.label())
        .collect();
    assert!(
        labels
            .iter()
            .any(|label| label.starts_with("kill SIGTERM @ 100%")),
        "{labels:?}"
    );
}

#[test]
fn a_signal_needs_kind_kill_and_a_known_name() {
    let without_kill = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"pause\"\nsignal = \"KILL\"\nrates = [1.0]\n"
    );
    let (field, line, message) = error_of(&without_kill);
    assert_eq!((field.as_str(), line), ("fault.signal", 11), "{message}");
    let unknown = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"kill\"\nsignal = \"SIGWHAT\"\nrates = [1.0]\n"
    );
    let (field, _, message) = error_of(&unknown);
    assert_eq!(field, "fault.signal", "{message}");
    assert!(
        message.contains("SIGWHAT") && message.contains("SIGKILL"),
        "{message}"
    );
}

/// Found by `tests/fuzz_spec.rs`: a match method the agent refuses (empty, spaces) was accepted, so every run
/// failed to apply its fault.
#[test]
fn the_match_method_is_checked_by_the_agents_rule() {
    for method in ["", "G E T", "P0ST", &"A".repeat(33)] {
        let (field, _, message) = error_of(&format!(
            "{MINIMAL}\n[fault]\ntarget = \"payment\"\nrates = [1.0]\nmatch = {{ method = \"{method}\" }}\n"
        ));
        assert_eq!(field, "fault.match.method", "{method:?}: {message}");
    }
    let spec = ExperimentSpec::parse(&format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nrates = [1.0]\nmatch = {{ method = \"post\" }}\n"
    ))
    .unwrap();
    assert_eq!(spec.fault.match_rule.method.as_deref(), Some("POST"));
}
