//! The table and the decision without a clock: every `now` is written out, so leases, renewals and the order of
//! faults are checked at exact instants.

use std::time::Duration;

use super::decision::{DecisionRules, Injection, Request, decide};
use super::*;
use crate::api::{FaultSpec, MatchRule};

const SECOND: Duration = Duration::from_secs(1);

const RULES: DecisionRules = DecisionRules {
    seed: 7,
    max_hold: Duration::from_secs(60),
};

fn request(index: u64) -> Request<'static> {
    Request {
        method: "POST",
        path: "/charge",
        index,
    }
}

fn error_fault(id: &str, rate: f64, lease: Duration, now: Duration) -> ActiveFault {
    ActiveFault::new(
        id,
        FaultSpec::error(503, rate).expect("a valid fault"),
        lease,
        now,
    )
}

/// The id of the fault that fires on request `index` at `now`, if any.
fn fired(table: &FaultTable, index: u64, now: Duration) -> Option<String> {
    decide(&table.snapshot(), &request(index), now, RULES).map(|(fault, _)| fault.id.clone())
}

#[test]
fn a_fault_fires_until_its_deadline_and_is_reaped_at_it() {
    let mut table = FaultTable::default();
    table
        .put(error_fault("f", 1.0, 10 * SECOND, Duration::ZERO))
        .unwrap();
    let released = table.snapshot()[0].released.clone();
    let just_before = 10 * SECOND - Duration::from_nanos(1);
    assert_eq!(fired(&table, 0, just_before).as_deref(), Some("f"));
    assert_eq!(fired(&table, 1, 10 * SECOND), None, "not after its lease");
    assert!(table.reap(just_before).is_empty());
    assert_eq!(table.next_deadline(), Some(10 * SECOND));
    assert_eq!(table.reap(10 * SECOND), vec!["f".to_owned()]);
    assert!(released.is_cancelled(), "the requests it held are released");
    assert_eq!(table.next_deadline(), None);
}

#[test]
fn a_renewal_extends_from_now_and_a_lapsed_fault_cannot_be_renewed() {
    let mut table = FaultTable::default();
    table
        .put(error_fault("f", 1.0, 10 * SECOND, Duration::ZERO))
        .unwrap();
    let renewed = table.renew("f", None, 4 * SECOND).unwrap();
    assert_eq!(renewed.view(4 * SECOND).expires_in_ms, 10_000);
    assert_eq!(table.next_deadline(), Some(14 * SECOND));
    table.renew("f", Some(2 * SECOND), 5 * SECOND).unwrap();
    assert_eq!(table.next_deadline(), Some(7 * SECOND));
    let lapsed = table.renew("f", None, 7 * SECOND).unwrap_err();
    assert_eq!(lapsed, AgentError::NotFound { id: "f".into() });
}

#[test]
fn faults_are_checked_in_id_order_each_with_its_own_draw() {
    let mut table = FaultTable::default();
    for id in ["b", "a"] {
        table
            .put(error_fault(id, 0.5, SECOND, Duration::ZERO))
            .unwrap();
    }
    let requests = 4000;
    let (mut a, mut b) = (0, 0);
    for index in 0..requests {
        match fired(&table, index, Duration::ZERO).as_deref() {
            Some("a") => a += 1,
            Some("b") => b += 1,
            _ => {}
        }
    }
    // `a` sorts first and fires on half the requests; `b` only on half of the rest.
    assert!((1800..=2200).contains(&a), "a fired {a} times");
    assert!((850..=1150).contains(&b), "b fired {b} times");
    // The same request index draws the same way every time.
    assert_eq!(
        fired(&table, 17, Duration::ZERO),
        fired(&table, 17, Duration::ZERO)
    );
}

#[test]
fn a_match_rule_limits_which_requests_a_fault_sees() {
    let mut table = FaultTable::default();
    let spec = FaultSpec::try_new(
        crate::api::FaultKind::Reset,
        1.0,
        MatchRule {
            method: Some("GET".into()),
            path_prefix: None,
        },
        None,
    )
    .unwrap();
    table
        .put(ActiveFault::new("get-only", spec, SECOND, Duration::ZERO))
        .unwrap();
    assert_eq!(
        fired(&table, 0, Duration::ZERO),
        None,
        "a POST is not matched"
    );
    let get = Request {
        method: "GET",
        ..request(0)
    };
    let snapshot = table.snapshot();
    let decided = decide(&snapshot, &get, Duration::ZERO, RULES);
    assert!(matches!(decided, Some((_, Injection::Reset))));
}

#[test]
fn the_table_is_bounded_and_a_replacement_releases_the_old_fault() {
    let mut table = FaultTable::default();
    for i in 0..MAX_FAULTS {
        let replaced = table
            .put(error_fault(&format!("f{i}"), 0.0, SECOND, Duration::ZERO))
            .unwrap();
        assert!(!replaced);
    }
    let refused = table.put(error_fault("one-more", 0.0, SECOND, Duration::ZERO));
    assert_eq!(refused, Err(AgentError::TooManyFaults { max: MAX_FAULTS }));
    let old = table.snapshot()[0].released.clone();
    assert_eq!(
        table.put(error_fault("f0", 1.0, SECOND, Duration::ZERO)),
        Ok(true)
    );
    assert!(old.is_cancelled());
    assert_eq!(table.clear().len(), MAX_FAULTS);
    assert!(table.snapshot().is_empty());
}
