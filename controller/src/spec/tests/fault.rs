//! The `[fault]` table: container kinds and signals, the match method.

use super::*;
use crate::test_support;

#[test]
fn container_kinds_parse_with_kills_signal() {
    let source = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkinds = [\"pause\", \"kill\", \"restart\"]\nsignal = \"term\"\nrates = [0.0, 1.0]\n"
    );
    let spec = test_support::spec(&source);
    assert_eq!(
        spec.fault.kinds,
        vec![
            ConditionFault::Pause,
            ConditionFault::Kill { signal: "SIGTERM" },
            ConditionFault::Restart
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
    let spec = test_support::spec(&format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nrates = [1.0]\nmatch = {{ method = \"post\" }}\n"
    ));
    assert_eq!(spec.fault.match_rule.method.as_deref(), Some("POST"));
}

#[test]
fn network_kinds_take_the_delay_and_the_rate_as_the_loss_and_are_bounded() {
    let source = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkinds = [\"net_delay\", \"net_loss\"]\ndelay = \"250ms\"\nrates = [0.0, 0.2]\n"
    );
    let spec = test_support::spec(&source);
    assert_eq!(
        spec.fault.kinds,
        vec![
            ConditionFault::NetDelay {
                delay: Duration::from_millis(250)
            },
            ConditionFault::NetLoss
        ]
    );
    assert!(
        spec.fault
            .kinds
            .iter()
            .all(|kind| kind.name().is_container())
    );
    let loss = spec
        .plan()
        .into_iter()
        .find(|run| {
            run.condition.fault == ConditionFault::NetLoss && run.condition.fault_rate > 0.0
        })
        .expect("a net_loss run");
    assert_eq!(
        crate::lease::container_action(loss.condition.fault, loss.condition.fault_rate),
        Some(crate::docker::ContainerAction::NetLoss { percent: 20.0 })
    );

    let too_long = format!(
        "{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"net_delay\"\ndelay = \"61s\"\nrates = [1.0]\n"
    );
    let (field, _, message) = error_of(&too_long);
    assert_eq!(field, "fault.delay", "{message}");
    assert!(message.contains("net_delay"), "{message}");
    let without_delay =
        format!("{MINIMAL}\n[fault]\ntarget = \"payment\"\nkind = \"net_delay\"\nrates = [1.0]\n");
    let (field, _, message) = error_of(&without_delay);
    assert_eq!(field, "fault.delay", "{message}");
}
