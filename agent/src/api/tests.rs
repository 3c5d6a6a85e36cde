//! Tests of the fault document: parsing, every refusal naming its field, round trips.

use super::*;
use serde_json::{Value, json};

fn field_of(value: Value) -> String {
    FaultSpec::from_json_value(value).unwrap_err().field
}

#[test]
fn the_design_example_parses() {
    let spec = FaultSpec::from_json_slice(
        br#"{"kind":"error","status":500,"rate":0.5,"match":{"method":"POST","path_prefix":"/charge"},"lease":"30s"}"#,
    )
    .unwrap();
    assert_eq!(
        *spec.kind(),
        FaultKind::Error {
            status: ErrorStatus::new(500).unwrap(),
            body: None
        }
    );
    assert_eq!(spec.rate(), 0.5);
    assert_eq!(spec.matcher().method.as_deref(), Some("POST"));
    assert_eq!(spec.matcher().path_prefix.as_deref(), Some("/charge"));
    assert_eq!(spec.lease(), Some(Duration::from_secs(30)));
}

#[test]
fn every_kind_round_trips_through_json() {
    let specs = [
        json!({"kind":"error","status":503,"body":"down","rate":0.25}),
        json!({"kind":"hang","rate":1.0,"lease":"5s"}),
        json!({"kind":"delay","delay":"250ms","jitter":"50ms","rate":0.75,"match":{"method":"GET"}}),
        json!({"kind":"reset","rate":0.0,"match":{"path_prefix":"/x"}}),
    ];
    for value in specs {
        let spec = FaultSpec::from_json_value(value).unwrap();
        let again = FaultSpec::from_json_value(spec.to_json_value()).unwrap();
        assert_eq!(spec, again);
    }
}

#[test]
fn bad_documents_name_their_field() {
    assert_eq!(
        field_of(json!({"kind":"error","status":500,"rate":1.5})),
        "rate"
    );
    assert_eq!(
        field_of(json!({"kind":"error","status":500,"rate":-0.1})),
        "rate"
    );
    assert_eq!(
        field_of(json!({"kind":"error","status":500,"rate":"half"})),
        "rate"
    );
    assert_eq!(field_of(json!({"kind":"error","status":99})), "status");
    assert_eq!(field_of(json!({"kind":"error","status":600})), "status");
    assert_eq!(field_of(json!({"kind":"error"})), "status");
    assert_eq!(field_of(json!({"kind":"explode"})), "kind");
    assert_eq!(field_of(json!({"rate":0.5})), "kind");
    assert_eq!(field_of(json!({"kind":"hang","colour":"red"})), "colour");
    assert_eq!(
        field_of(json!({"kind":"delay","delay":"1s","status":500})),
        "status"
    );
    assert_eq!(field_of(json!({"kind":"delay"})), "delay");
    assert_eq!(field_of(json!({"kind":"delay","delay":"soon"})), "delay");
    assert_eq!(
        field_of(json!({"kind":"delay","delay":"1s","jitter":5})),
        "jitter"
    );
    assert_eq!(field_of(json!({"kind":"hang","lease":"0s"})), "lease");
    // Found by tests/fuzz_fault_json.rs: a 1 ns lease was held and listed as a 0 ms lease.
    assert_eq!(field_of(json!({"kind":"hang","lease":"999us"})), "lease");
    assert_eq!(
        field_of(
            json!({"kind":"hang","match":{"path_prefix":format!("/{}", "p".repeat(MAX_PATH_PREFIX_BYTES))}})
        ),
        "match.path_prefix"
    );
    assert_eq!(
        field_of(json!({"kind":"hang","match":{"method":"A".repeat(MAX_METHOD_BYTES + 1)}})),
        "match.method"
    );
    assert_eq!(
        field_of(json!({"kind":"hang","match":{"verb":"GET"}})),
        "match.verb"
    );
    assert_eq!(
        field_of(json!({"kind":"hang","match":{"path_prefix":"charge"}})),
        "match.path_prefix"
    );
    assert_eq!(
        field_of(json!({"kind":"hang","match":{"method":"G E T"}})),
        "match.method"
    );
    assert_eq!(field_of(json!([1, 2])), "body");
    assert_eq!(
        FaultSpec::from_json_slice(b"{\"kind\":").unwrap_err().field,
        "body"
    );
}

#[test]
fn rate_defaults_to_one_and_method_is_upper_cased() {
    let spec =
        FaultSpec::from_json_value(json!({"kind":"reset","match":{"method":"post"}})).unwrap();
    assert_eq!(spec.rate(), 1.0);
    assert_eq!(spec.matcher().method.as_deref(), Some("POST"));
}

#[test]
fn match_rules_compare_method_and_prefix() {
    let rule = MatchRule {
        method: Some("POST".into()),
        path_prefix: Some("/charge".into()),
    };
    assert!(rule.matches("POST", "/charge/123"));
    assert!(!rule.matches("GET", "/charge"));
    assert!(!rule.matches("POST", "/refund"));
    assert!(MatchRule::default().matches("DELETE", "/anything"));
}

#[test]
fn fault_ids_are_checked() {
    assert!(validate_fault_id("payment-errors_1.v2").is_ok());
    assert_eq!(validate_fault_id("").unwrap_err().field, "id");
    assert_eq!(validate_fault_id("a/b").unwrap_err().field, "id");
    assert_eq!(validate_fault_id(&"x".repeat(200)).unwrap_err().field, "id");
}

#[test]
fn events_serialize_tagged() {
    let event = AgentEvent::Expired {
        id: "f1".into(),
        at_ms: 5,
        seq: 1,
    };
    let text = serde_json::to_string(&event).unwrap();
    assert_eq!(text, r#"{"event":"expired","id":"f1","at_ms":5,"seq":1}"#);
    let back: AgentEvent = serde_json::from_str(&text).unwrap();
    assert_eq!(back, event);
}

#[test]
fn a_fault_built_in_code_is_checked_by_the_wire_rules_naming_the_field() {
    let error_status = |status| FaultKind::Error {
        status: ErrorStatus::new(status).expect("an error status"),
        body: None,
    };
    // An error status is checked where it is made, naming the field.
    assert_eq!(ErrorStatus::new(200).unwrap_err().field, "status");
    assert_eq!(ErrorStatus::new(600).unwrap_err().field, "status");
    let refused = |kind, rate, matcher, lease| {
        FaultSpec::try_new(kind, rate, matcher, lease)
            .expect_err("invalid")
            .field
    };
    assert_eq!(
        refused(error_status(500), 1.5, MatchRule::default(), None),
        "rate"
    );
    assert_eq!(
        refused(error_status(500), f64::NAN, MatchRule::default(), None),
        "rate"
    );
    let bad_method = MatchRule {
        method: Some("GET /".into()),
        path_prefix: None,
    };
    assert_eq!(
        refused(error_status(500), 1.0, bad_method, None),
        "match.method"
    );
    assert_eq!(
        refused(
            FaultKind::Reset,
            1.0,
            MatchRule::default(),
            Some(Duration::ZERO)
        ),
        "lease"
    );
    // What the checks accept comes back as given (the method upper-cased, as the wire rules do).
    let matcher = MatchRule {
        method: Some("post".into()),
        path_prefix: Some("/charge".into()),
    };
    let spec = FaultSpec::try_new(FaultKind::Hang, 0.25, matcher, Some(Duration::from_secs(5)))
        .expect("valid");
    assert_eq!(
        (spec.kind(), spec.rate(), spec.lease()),
        (&FaultKind::Hang, 0.25, Some(Duration::from_secs(5)))
    );
    assert_eq!(spec.matcher().method.as_deref(), Some("POST"));
    // Deserialising goes through the same rules.
    let error = serde_json::from_value::<FaultSpec>(json!({"kind":"error","status":200}))
        .expect_err("invalid");
    assert!(error.to_string().starts_with("status: "), "{error}");
}

#[test]
fn the_wire_text_keeps_its_keys_in_alphabetical_order() {
    // The order the document was always written in (a sorted JSON map), so stored and sent text is unchanged.
    let delay = FaultSpec::from_json_value(
        json!({"kind":"delay","delay":"250ms","rate":0.75,"match":{"path_prefix":"/p","method":"get"},"lease":"5s"}),
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&delay).unwrap(),
        r#"{"delay":"250ms","jitter":"0s","kind":"delay","lease":"5s","match":{"method":"GET","path_prefix":"/p"},"rate":0.75}"#
    );
    let error =
        FaultSpec::from_json_value(json!({"status":503,"kind":"error","body":"down"})).unwrap();
    assert_eq!(
        serde_json::to_string(&error).unwrap(),
        r#"{"body":"down","kind":"error","rate":1.0,"status":503}"#
    );
}

#[test]
fn refusals_of_the_raw_shape_name_their_field() {
    let refused = |text: &str| FaultSpec::from_json_slice(text.as_bytes()).unwrap_err();
    // A repeated key is that key's, and the position serde_json appends is left out: the field says where.
    let repeated = refused(r#"{"kind":"hang","rate":0.5,"rate":0.6}"#);
    assert_eq!(repeated.field, "rate");
    assert!(!repeated.message.contains("line"), "{repeated}");
    assert_eq!(
        refused(r#"{"kind":"hang","match":{"method":5}}"#).field,
        "match.method"
    );
    assert_eq!(refused(r#"{"kind":"hang","match":5}"#).field, "match");
    // Found by tests/fuzz_fault_json.rs: serde's derived struct read `["GET"]` as a match rule on GET, and an empty
    // key was blamed as an empty field name.
    assert_eq!(refused(r#"{"kind":"hang","match":["GET"]}"#).field, "match");
    assert_eq!(refused(r#"{"kind":"hang","":1}"#).field, r#""""#);
    assert_eq!(
        FaultSpec::from_json_slice(br#"{"kind":"hang","match":null}"#)
            .unwrap()
            .matcher(),
        &MatchRule::default()
    );
    assert_eq!(refused(r#"{"kind":"error","status":-1}"#).field, "status");
    // serde's own words for a wrong type give way to what the field holds.
    assert_eq!(
        refused(r#"{"kind":"hang","rate":"half"}"#).to_string(),
        r#"rate: invalid type: string "half", expected a number in [0, 1]"#
    );
    assert_eq!(
        refused(r#"{"kind":"delay","delay":5}"#).to_string(),
        r#"delay: invalid type: integer `5`, expected a duration string such as "250ms" or "30s""#
    );
    assert_eq!(
        refused(r#"{"kind":"error","status":500.5}"#).field,
        "status"
    );
    assert_eq!(refused(r#"{"kind":"hang","rate":null}"#).field, "rate");
    assert_eq!(refused(r#"{"kind":5}"#).field, "kind");
    // Not one JSON object: the body's.
    assert_eq!(refused(r#"["hang"]"#).field, "body");
    assert_eq!(refused(r#"{"kind":"hang"} {}"#).field, "body");
    assert_eq!(refused("").field, "body");
}
