//! Fuzzing the agent's fault documents with proptest: the body of `PUT /_agent/faults/{id}` as raw bytes, as JSON
//! objects of arbitrary keys and absurd values, and as a valid document with one field changed, each read by
//! `FaultSpec::from_json_slice` and put into an [`Agent`] (the agent's caps: lease, hold, table size) the way the
//! control API does.
//!
//! Properties: nothing panics; every reject names a field (the error's `field` is set and its message carries
//! it; with one field changed, that field — or `jitter` for a `delay` whose sum with it passes the hold cap);
//! an accepted fault is within the documented bounds and survives a round trip through its JSON. `cargo test`
//! runs proptest's default 256 cases per property; `PROPTEST_CASES=100000` is the long profile (FUZZING.md).

use agent::api::{
    FaultKind, FaultSpec, InvalidFault, MAX_ERROR_BODY_BYTES, MAX_METHOD_BYTES,
    MAX_PATH_PREFIX_BYTES, MIN_LEASE,
};
use agent::{Agent, AgentConfig, AgentError, DEFAULT_MAX_HOLD, DEFAULT_MAX_LEASE, MAX_FAULTS};
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

/// Every key a fault document may hold, and one none does.
const KEYS: [&str; 9] = [
    "kind", "status", "body", "rate", "delay", "jitter", "lease", "match", "colour",
];

fn number() -> BoxedStrategy<Value> {
    let edges: Vec<Value> = vec![
        json!(0),
        json!(1),
        json!(-1),
        json!(99),
        json!(100),
        json!(101),
        json!(200),
        json!(302),
        json!(399),
        json!(400),
        json!(599),
        json!(600),
        json!(65535),
        json!(65536),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(0.0),
        json!(-0.0),
        json!(0.5),
        json!(1.0),
        json!(1.0000001),
        json!(500.0),
        json!(1e-300),
        json!(1e300),
        json!(f64::MAX),
        json!(5e-324),
    ];
    prop_oneof![
        select(edges),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (0.0..1.0f64).prop_map(Value::from),
    ]
    .boxed()
}

fn duration_text() -> BoxedStrategy<String> {
    let edges = vec![
        "500000000000y",
        "0s",
        "1ns",
        "250ms",
        "30s",
        "59s 999ms",
        "60s",
        "60s 1ns",
        "10m",
        "10m 1ns",
        "18446744073709551615s",
        "18446744073709551616s",
        "99999999999999999999999ns",
        "",
        "-1s",
        "soon",
    ];
    let units = select(vec!["ns", "us", "ms", "s", "m", "h", "d", "y"]);
    prop_oneof![
        select(edges).prop_map(str::to_owned),
        (any::<u64>(), units.clone()).prop_map(|(n, unit)| format!("{n}{unit}")),
        (0u64..2000, units).prop_map(|(n, unit)| format!("{n}{unit}")),
    ]
    .boxed()
}

fn text() -> BoxedStrategy<Value> {
    let words = vec![
        "error", "hang", "delay", "reset", "explode", "", "POST", "post", "G E T", "/charge",
        "charge", "/", "GET-X",
    ];
    prop_oneof![
        4 => select(words).prop_map(str::to_owned),
        3 => duration_text(),
        2 => "\\PC{0,40}",
        1 => select(vec![
            MAX_ERROR_BODY_BYTES,
            MAX_ERROR_BODY_BYTES + 1,
            MAX_PATH_PREFIX_BYTES,
            MAX_PATH_PREFIX_BYTES + 1,
            MAX_METHOD_BYTES + 1,
        ])
        .prop_map(|n| format!("/{}", "P".repeat(n - 1))),
    ]
    .prop_map(Value::String)
    .boxed()
}

fn match_rule() -> BoxedStrategy<Value> {
    (
        proptest::option::of(text()),
        proptest::option::of(text()),
        any::<bool>(),
    )
        .prop_map(|(method, prefix, extra)| {
            let mut rule = Map::new();
            if let Some(method) = method {
                rule.insert("method".into(), method);
            }
            if let Some(prefix) = prefix {
                rule.insert("path_prefix".into(), prefix);
            }
            if extra {
                rule.insert("verb".into(), json!("GET"));
            }
            Value::Object(rule)
        })
        .boxed()
}

/// Any JSON value: scalars, small arrays and objects.
fn value() -> BoxedStrategy<Value> {
    prop_oneof![
        2 => number(),
        3 => text(),
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => proptest::collection::vec(number(), 0..3).prop_map(Value::Array),
        1 => match_rule(),
    ]
    .boxed()
}

/// A value shaped for `key`, or any value.
fn value_for(key: &str) -> BoxedStrategy<Value> {
    let shaped = match key {
        "kind" => select(vec!["error", "hang", "delay", "reset", "explode"])
            .prop_map(Value::from)
            .boxed(),
        "status" | "rate" => number(),
        "delay" | "jitter" | "lease" => duration_text().prop_map(Value::String).boxed(),
        "match" => match_rule(),
        _ => text(),
    };
    prop_oneof![3 => shaped, 1 => value()].boxed()
}

/// A valid document of each kind.
fn valid_documents() -> Vec<Value> {
    vec![
        json!({"kind":"error","status":503,"body":"down","rate":0.5,
               "match":{"method":"POST","path_prefix":"/charge"},"lease":"30s"}),
        json!({"kind":"delay","delay":"100ms","jitter":"10ms","rate":1.0,"lease":"30s"}),
        json!({"kind":"hang","rate":0.25}),
        json!({"kind":"reset","match":{"path_prefix":"/"}}),
    ]
}

fn document() -> impl Strategy<Value = Value> {
    proptest::collection::vec((select(KEYS.to_vec()), any::<u8>()), 0..9).prop_flat_map(|keys| {
        let values: Vec<BoxedStrategy<(String, Value)>> = keys
            .into_iter()
            .map(|(key, _)| {
                value_for(key)
                    .prop_map(move |v| (key.to_owned(), v))
                    .boxed()
            })
            .collect();
        values.prop_map(|pairs| Value::Object(pairs.into_iter().collect()))
    })
}

fn agent() -> Agent {
    Agent::new(AgentConfig::default())
}

/// A reject names its field: set, and in the message.
fn check_named(field: &str, message: &str) -> Result<(), TestCaseError> {
    prop_assert!(!field.is_empty(), "no field: {message}");
    prop_assert!(message.contains(field), "`{field}` not in `{message}`");
    Ok(())
}

fn check_spec_error(error: &InvalidFault) -> Result<(), TestCaseError> {
    check_named(&error.field, &error.to_string())
}

fn check_agent_error(error: &AgentError) -> Result<(), TestCaseError> {
    let field = error.field().unwrap_or_default();
    check_named(field, &error.to_string())
}

/// An accepted fault is within the documented bounds, reads back the same from its JSON, and is held by the agent
/// within its caps.
fn check_accepted(spec: &FaultSpec, agent: &Agent) -> Result<Option<AgentError>, TestCaseError> {
    prop_assert!((0.0..=1.0).contains(&spec.rate()), "{spec:?}");
    match spec.kind() {
        FaultKind::Error { status, body } => {
            prop_assert!((400..=599).contains(&status.get()), "{spec:?}");
            prop_assert!(
                body.as_ref()
                    .is_none_or(|b| b.len() <= MAX_ERROR_BODY_BYTES)
            );
        }
        FaultKind::Delay { .. } | FaultKind::Hang | FaultKind::Reset => {}
    }
    if let Some(method) = &spec.matcher().method {
        prop_assert!(!method.is_empty() && method.len() <= MAX_METHOD_BYTES);
        prop_assert!(method.bytes().all(|b| b.is_ascii_uppercase() || b == b'-'));
    }
    if let Some(prefix) = &spec.matcher().path_prefix {
        prop_assert!(prefix.starts_with('/') && prefix.len() <= MAX_PATH_PREFIX_BYTES);
    }
    prop_assert!(spec.lease().is_none_or(|lease| lease >= MIN_LEASE));
    let again = FaultSpec::from_json_value(spec.to_json_value());
    prop_assert_eq!(again.as_ref(), Ok(spec), "round trip");

    match agent.put("fuzz", spec.clone()) {
        Ok(outcome) => {
            prop_assert!(outcome.view.lease_ms <= DEFAULT_MAX_LEASE.as_millis() as u64);
            prop_assert!(outcome.view.lease_ms > 0);
            if let FaultKind::Delay { delay, jitter } = spec.kind() {
                prop_assert!(
                    delay.saturating_add(*jitter) <= DEFAULT_MAX_HOLD,
                    "{spec:?}"
                );
            }
            prop_assert!(spec.lease().is_none_or(|lease| lease <= DEFAULT_MAX_LEASE));
            Ok(None)
        }
        Err(error) => {
            check_agent_error(&error)?;
            Ok(Some(error))
        }
    }
}

#[test]
fn valid_documents_are_accepted() {
    let agent = agent();
    for document in valid_documents() {
        let spec = FaultSpec::from_json_value(document.clone()).expect("valid");
        agent
            .put("f", spec)
            .unwrap_or_else(|e| panic!("{document}: {e}"));
    }
}

#[test]
fn the_table_is_bounded_and_says_so_by_id() {
    let agent = agent();
    for i in 0..MAX_FAULTS {
        agent
            .put(
                &format!("f{i}"),
                FaultSpec::error(500, 0.0).expect("a valid fault"),
            )
            .unwrap();
    }
    let error = agent
        .put(
            "one-more",
            FaultSpec::error(500, 0.0).expect("a valid fault"),
        )
        .unwrap_err();
    assert_eq!(error.field(), Some("id"));
    assert_eq!(agent.faults().len(), MAX_FAULTS);
    agent.halt();
    assert!(agent.faults().is_empty());
}

proptest! {
    #[test]
    fn raw_bodies_never_panic_and_name_a_field(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        match FaultSpec::from_json_slice(&bytes) {
            Ok(spec) => { check_accepted(&spec, &agent())?; }
            Err(error) => check_spec_error(&error)?,
        }
    }

    #[test]
    fn json_like_bodies_never_panic(text in "[{}\\[\\]\":,a-z0-9.e+-]{0,200}") {
        match FaultSpec::from_json_slice(text.as_bytes()) {
            Ok(spec) => { check_accepted(&spec, &agent())?; }
            Err(error) => check_spec_error(&error)?,
        }
    }

    #[test]
    fn arbitrary_documents_are_rejected_by_field_or_within_bounds(document in document()) {
        let bytes = serde_json::to_vec(&document).expect("serialises");
        match FaultSpec::from_json_slice(&bytes) {
            Ok(spec) => { check_accepted(&spec, &agent())?; }
            Err(error) => check_spec_error(&error)?,
        }
    }

    #[test]
    fn one_changed_field_is_the_field_blamed(
        base in select(valid_documents()),
        (key, value) in select(KEYS.to_vec()).prop_flat_map(|key| (Just(key), value_for(key))),
        remove in any::<bool>(),
    ) {
        let mut object = base.as_object().cloned().expect("object");
        if remove {
            object.remove(key);
        } else {
            object.insert(key.to_owned(), value);
        }
        let document = Value::Object(object);
        let rejected = match FaultSpec::from_json_value(document.clone()) {
            Ok(spec) => check_accepted(&spec, &agent())?.map(|error| error.field().unwrap_or_default().to_owned()),
            Err(error) => {
                check_spec_error(&error)?;
                Some(error.field)
            }
        };
        // A new kind changes what every other field means: any field may be the one blamed.
        if let (Some(field), false) = (rejected, key == "kind") {
            let blamed_it = field == key
                || field.starts_with(&format!("{key}."))
                || (key == "delay" && field == "jitter");
            prop_assert!(blamed_it, "{key} changed, {field} blamed: {document}");
        }
    }
}
