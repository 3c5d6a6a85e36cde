//! Pushed events checked field by field, rate- and size-bounded, and each kind's shape refused when it is wrong.

use super::*;

const NOW: u64 = 1_732_896_000_000;

#[test]
fn a_pybreaker_listener_body_becomes_a_transition() {
    let inbox = PushInbox::default();
    let mut listener = inbox.subscribe();
    let ingested = inbox
        .ingest(
            r#"{"service":"shop","breaker":"upstream","from":"closed","to":"open","source":"pybreaker"}"#,
            NOW,
        )
        .expect("valid");
    assert_eq!(ingested.unchanged, 0);
    let event = &ingested.events[0];
    assert_eq!(
        (event.from, event.to, event.seq, event.at_ms),
        (State::Closed, State::Open, 1, NOW)
    );
    assert_eq!(event.reason, Reason::Observed);
    assert_eq!(event.source.as_deref(), Some("push:pybreaker"));
    assert_eq!(listener.try_recv().ok().as_ref(), Some(event));
    // Polly's hooks only say where the breaker went: `from` is the state pushed before.
    let next = inbox
        .ingest(
            r#"[{"service":"shop","breaker":"upstream","to":"half-open","at_ms":1732896000500},
                {"service":"shop","breaker":"upstream","to":"HalfOpen"},
                {"service":"shop","breaker":"upstream","to":"closed","reason":"probes_succeeded"}]"#,
            NOW + 1_000,
        )
        .expect("valid");
    let path: Vec<(State, State, u64, u64)> = next
        .events
        .iter()
        .map(|e| (e.from, e.to, e.seq, e.at_ms))
        .collect();
    assert_eq!(
        path,
        vec![
            (State::Open, State::HalfOpen, 2, NOW + 500),
            (State::HalfOpen, State::Closed, 3, NOW + 1_000),
        ]
    );
    assert_eq!(next.unchanged, 1);
    assert_eq!(next.events[1].reason, Reason::ProbesSucceeded);
    assert_eq!(next.events[1].service, "shop");
    assert_eq!(next.events[1].source.as_deref(), Some("push"));
}

#[test]
fn errors_name_the_field_and_take_nothing() {
    let inbox = PushInbox::default();
    let refused = |body: &str| match inbox.ingest(body, NOW) {
        Err(PushError::Invalid { field, .. }) => field,
        other => panic!("{body}: {other:?}"),
    };
    assert_eq!(refused("{"), "body");
    assert_eq!(refused("[]"), "body");
    assert_eq!(refused(r#"{"to":"open"}"#), "breaker");
    assert_eq!(refused(r#"{"breaker":"b"}"#), "to");
    assert_eq!(refused(r#"{"breaker":"b","to":"opne"}"#), "to");
    assert_eq!(refused(r#"{"breaker":"","to":"open"}"#), "breaker");
    assert_eq!(refused(r#"{"breaker":7,"to":"open"}"#), "breaker");
    assert_eq!(
        refused(r#"{"breaker":"b","to":"open","colour":"red"}"#),
        "colour"
    );
    assert_eq!(
        refused(r#"{"breaker":"b","to":"open","reason":"bad luck"}"#),
        "reason"
    );
    assert_eq!(
        refused(r#"{"breaker":"b","to":"open","at_ms":-1}"#),
        "at_ms"
    );
    assert_eq!(
        refused(&format!(
            r#"{{"breaker":"b","to":"open","at_ms":{}}}"#,
            NOW + MAX_AHEAD_MS + 1
        )),
        "at_ms"
    );
    // The first event is valid, the second is not: neither is taken.
    assert_eq!(
        refused(r#"[{"breaker":"b","to":"open"},{"breaker":"b","to":"shut"}]"#),
        "events[1].to"
    );
    let many = format!(
        "[{}]",
        vec![r#"{"breaker":"b","to":"open"}"#; MAX_EVENTS_PER_BODY + 1].join(",")
    );
    assert_eq!(refused(&many), "body");
    let taken = inbox
        .ingest(r#"{"breaker":"b","to":"open"}"#, NOW)
        .expect("valid");
    assert_eq!(taken.events[0].seq, 1, "nothing was taken before");
    assert_eq!(taken.events[0].service, DEFAULT_SERVICE);
}

/// A pushed event's `service` follows the one service-name rule (`controller::target::ServiceId`).
#[test]
fn a_pushed_service_name_follows_the_service_name_rule() {
    let inbox = PushInbox::default();
    for bad in ["a b", "shop/x", "shop#1", "<script>"] {
        let body = format!(r#"{{"service":"{bad}","breaker":"b","to":"open"}}"#);
        match inbox.ingest(&body, NOW) {
            Err(PushError::Invalid { field, .. }) => assert_eq!(field, "service", "{bad}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    let body = r#"[{"breaker":"b","to":"open"},{"service":"shop","breaker":"b","to":"open"},{"service":"ok","breaker":"b","to":"open"},{"service":"no pe","breaker":"b","to":"open"}]"#;
    match inbox.ingest(body, NOW) {
        Err(PushError::Invalid { field, .. }) => assert_eq!(field, "events[3].service"),
        other => panic!("{other:?}"),
    }
    let taken = inbox
        .ingest(r#"{"service":"checkout#2","breaker":"b","to":"open"}"#, NOW)
        .expect("a replica's label is a service name");
    assert_eq!(taken.events[0].service, "checkout#2");
}

#[test]
fn the_rate_is_bounded_by_a_token_bucket() {
    let mut limit = RateLimit::new(10.0, 20.0);
    assert!(limit.admit(20, 0));
    assert!(!limit.admit(1, 0));
    assert!(!limit.admit(2, 100), "0.1 s brings one token");
    assert!(limit.admit(1, 100));
    assert!(
        limit.admit(20, 10_000),
        "never more than the burst saved up"
    );
    assert!(!limit.admit(1, 10_000));

    let inbox = PushInbox::new(RateLimit::new(1.0, 2.0));
    let body = r#"[{"breaker":"b","to":"open"},{"breaker":"b","to":"closed"}]"#;
    assert!(inbox.ingest(body, NOW).is_ok());
    assert_eq!(inbox.ingest(body, NOW + 500), Err(PushError::RateLimited));
    assert!(inbox.ingest(body, NOW + 2_500).is_ok());
}
