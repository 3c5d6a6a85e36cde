//! The fault document as written, nothing checked: the wire shape [`RawFaultSpec`] with its serde attributes, and
//! reading it from JSON so that every refusal names its field. A [`FaultSpec`](super::FaultSpec) is made from it
//! by `TryFrom`.
//!
//! The shape is one flat object whose `kind` says which of the kind's own fields may appear (`status` and
//! `body` for an `error`, `delay` and `jitter` for a `delay`); `TryFrom` refuses the others. It is a struct with
//! the tag as a field rather than a serde enum with `tag = "kind"` because serde reads such an enum by buffering
//! the document first, and then cannot say which field a wrong value was in (`serde_path_to_error` sees only the
//! document as a whole); a struct read through `serde_path_to_error` can. The fields are in alphabetical order,
//! the order the document has always been written in.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeOwned, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::parts::{InvalidFault, MatchRule};

/// A fault document as written (the body of `PUT /_agent/faults/{id}`), nothing checked yet. Durations are
/// strings such as `"250ms"` or `"30s"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFaultSpec {
    /// The answer's body of an `error` fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// How long a `delay` fault holds a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// The most a `delay` fault adds to `delay`, drawn uniformly per request (default `"0s"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<String>,
    /// `error`, `hang`, `delay` or `reset`: the tag saying which other fields belong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Lease length; absent means the agent's default lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
    /// Which requests the fault applies to; absent matches every request.
    #[serde(
        default,
        rename = "match",
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_or_null"
    )]
    pub matcher: Option<MatchRule>,
    /// Probability that the fault fires on a matching request.
    #[serde(default = "always")]
    pub rate: f64,
    /// The status of an `error` fault.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u64>,
}

fn always() -> f64 {
    1.0
}

/// A table read only from a JSON object (or `null`, as absent): serde's derived structs also read an array,
/// field by field in order, which would take `["GET"]` for a `match` on `GET`.
fn object_or_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct ObjectOrNull<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectOrNull<T> {
        type Value = Option<T>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("an object")
        }

        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
            T::deserialize(MapAccessDeserializer::new(map)).map(Some)
        }
    }

    deserializer.deserialize_any(ObjectOrNull(PhantomData))
}

impl RawFaultSpec {
    /// Reads a document from JSON bytes. A document that is not a JSON object, or not JSON, is refused naming
    /// `body`; a wrong value names its field (`rate`, `match.method`, an unknown `colour`, ...).
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, InvalidFault> {
        read_json_object(bytes)
    }

    /// Reads a document from a parsed JSON value, with the same refusals as [`RawFaultSpec::from_json_slice`].
    pub fn from_json_value(value: serde_json::Value) -> Result<Self, InvalidFault> {
        if !value.is_object() {
            return Err(InvalidFault::new("body", "expected a JSON object"));
        }
        serde_path_to_error::deserialize(value).map_err(refusal)
    }
}

/// Reads a JSON object of the control API (a fault document, a renew request) into `T`. Anything but one JSON
/// object is refused naming `body`; a wrong value or an unknown key names its field by its path.
pub fn read_json_object<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, InvalidFault> {
    if !bytes.trim_ascii_start().starts_with(b"{") {
        return Err(InvalidFault::new("body", "expected a JSON object"));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(refusal)?;
    deserializer
        .end()
        .map_err(|error| InvalidFault::new("body", format!("malformed JSON: {error}")))?;
    Ok(value)
}

/// A serde refusal as the field it is about: malformed JSON is the `body`'s, a value or an unknown key is the
/// field's at its path, a repeated key that key's.
fn refusal(error: serde_path_to_error::Error<serde_json::Error>) -> InvalidFault {
    let path = error.path().to_string();
    let error = error.into_inner();
    if !error.is_data() {
        return InvalidFault::new("body", format!("malformed JSON: {error}"));
    }
    let message = message_of(&error);
    let repeated = message
        .strip_prefix("duplicate field `")
        .and_then(|rest| rest.split('`').next());
    let mut field = match (path.as_str(), repeated) {
        (".", Some(key)) => key.to_owned(),
        (".", None) => "body".to_owned(),
        (path, Some(key)) => format!("{path}.{key}"),
        (path, None) => path.to_owned(),
    };
    // An empty key (`{"": 1}`) still gets a name a reader can see.
    if field.is_empty() || field.ends_with('.') {
        field.push_str("\"\"");
    }
    let message = match (message.split_once(", expected "), expected_of(&field)) {
        (Some((found, _)), Some(expected)) => format!("{found}, expected {expected}"),
        _ => message,
    };
    InvalidFault::new(field, message)
}

/// What a field of the document holds, in the reader's words rather than serde's (`f64`, `u64`).
fn expected_of(field: &str) -> Option<&'static str> {
    Some(match field {
        "rate" => "a number in [0, 1]",
        "status" => "an integer in 400–599",
        "delay" | "jitter" | "lease" => "a duration string such as \"250ms\" or \"30s\"",
        "kind" => "one of error, hang, delay, reset",
        "body" | "match.method" | "match.path_prefix" => "a string",
        "match" => "an object",
        _ => return None,
    })
}

/// serde_json's message without the position it appends (`… at line 1 column 9`): the field says where.
fn message_of(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    text.strip_suffix(&position).unwrap_or(&text).to_owned()
}
