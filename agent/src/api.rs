//! Wire types of the agent control API, shared by the agent and the controller's agent client.
//!
//! A fault travels as one flat JSON object:
//!
//! ```json
//! {"kind":"error","status":500,"rate":0.5,"match":{"method":"POST","path_prefix":"/charge"},"lease":"30s"}
//! ```
//!
//! Kinds and their own fields:
//!
//! | kind    | fields                                                    |
//! |---------|-----------------------------------------------------------|
//! | `error` | `status` (400–599, required), `body` (string, optional)   |
//! | `hang`  | none: held until the client gives up or the agent's hold cap |
//! | `delay` | `delay` (duration, required), `jitter` (duration, default `"0s"`) |
//! | `reset` | none: the connection is dropped                           |
//!
//! Common fields: `rate` (number in [0, 1], default 1), `match` (optional `method`: letters and `-`, at most 32
//! bytes; optional `path_prefix`: starts with `/`, at most 1024 bytes),
//! `lease` (duration string such as `"30s"` or `"250ms"`, at least 1 ms; default the agent's default lease).
//!
//! Parsing goes through one validator ([`FaultSpec::from_json_value`]) whether the JSON arrives at the agent, is
//! read back by a client or a fault is built in code ([`FaultSpec::try_new`]), so every rejection carries the name
//! of the offending field ([`SpecError::field`]) and a [`FaultSpec`] that exists is a valid one: its fields are
//! private, read through accessors.
//! Unknown fields, including fields of another kind (`status` on a `delay`), are rejected.

use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// Longest accepted `body` of an `error` fault, in bytes.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// Longest accepted fault id, in bytes.
pub const MAX_FAULT_ID_BYTES: usize = 128;
/// Shortest lease a fault may ask for (a shorter one could not even be reported: leases are listed in ms).
pub const MIN_LEASE: Duration = Duration::from_millis(1);
/// Longest accepted `match.method`, in bytes.
pub const MAX_METHOD_BYTES: usize = 32;
/// Longest accepted `match.path_prefix`, in bytes.
pub const MAX_PATH_PREFIX_BYTES: usize = 1024;

/// What a fault does to a request it fires on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// Answer at once with `status` (and `body`, if any), without calling the service.
    Error { status: u16, body: Option<String> },
    /// Never answer: hold the request until the client gives up or the agent's hold cap elapses, then close the
    /// connection.
    Hang,
    /// Wait `delay` plus a uniform draw from `[0, jitter]`, then pass the request through.
    Delay { delay: Duration, jitter: Duration },
    /// Drop the connection without an answer.
    Reset,
}

impl FaultKind {
    /// The wire name of the kind (`error`, `hang`, `delay`, `reset`).
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Error { .. } => "error",
            FaultKind::Hang => "hang",
            FaultKind::Delay { .. } => "delay",
            FaultKind::Reset => "reset",
        }
    }
}

/// Which requests a fault applies to; an empty rule matches every request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MatchRule {
    /// HTTP method, upper case (`GET`, `POST`, ...); `None` matches every method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path prefix starting with `/`, compared byte-wise against the request path; `None` matches every path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
}

impl MatchRule {
    /// Whether a request with this method and path is covered by the rule.
    pub fn matches(&self, method: &str, path: &str) -> bool {
        self.method.as_deref().is_none_or(|wanted| wanted == method)
            && self
                .path_prefix
                .as_deref()
                .is_none_or(|prefix| path.starts_with(prefix))
    }

    fn is_empty(&self) -> bool {
        self.method.is_none() && self.path_prefix.is_none()
    }
}

/// One fault as set through `PUT /_agent/faults/{id}`, checked: built only by [`FaultSpec::try_new`] or parsing.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    kind: FaultKind,
    rate: f64,
    matcher: MatchRule,
    lease: Option<Duration>,
}

/// A rejected fault document: which field is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct SpecError {
    /// The offending field (`rate`, `status`, `match.method`, ...), or `body` when the document itself is unusable.
    pub field: String,
    pub message: String,
}

impl SpecError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        SpecError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl FaultSpec {
    /// A fault built in code, checked by the same rules as a document on the wire (every error names the
    /// field), so a form that builds one refuses what the agent would refuse. `lease: None` means the agent's
    /// default lease.
    pub fn try_new(
        kind: FaultKind,
        rate: f64,
        matcher: MatchRule,
        lease: Option<Duration>,
    ) -> Result<Self, SpecError> {
        let unchecked = FaultSpec {
            kind,
            rate,
            matcher,
            lease,
        };
        Self::from_json_value(unchecked.to_json_value())
    }

    /// An `error` fault at `rate` with no match rule and the default lease.
    pub fn error(status: u16, rate: f64) -> Result<Self, SpecError> {
        Self::try_new(
            FaultKind::Error { status, body: None },
            rate,
            MatchRule::default(),
            None,
        )
    }

    /// What the fault does to a request it fires on.
    pub fn kind(&self) -> &FaultKind {
        &self.kind
    }

    /// Probability in [0, 1] that the fault fires on a matching request, drawn per request.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Which requests the fault applies to (`match` on the wire).
    pub fn matcher(&self) -> &MatchRule {
        &self.matcher
    }

    /// Lease length; `None` means the agent's default lease.
    pub fn lease(&self) -> Option<Duration> {
        self.lease
    }

    /// Parses and validates a JSON document (the body of `PUT /_agent/faults/{id}`).
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, SpecError> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|error| SpecError::new("body", format!("malformed JSON: {error}")))?;
        Self::from_json_value(value)
    }

    /// Validates a parsed JSON document. Every error names the field it is about.
    pub fn from_json_value(value: Value) -> Result<Self, SpecError> {
        let Value::Object(mut object) = value else {
            return Err(SpecError::new("body", "expected a JSON object"));
        };
        let kind_name = match object.remove("kind") {
            Some(Value::String(name)) => name,
            Some(_) => return Err(SpecError::new("kind", "expected a string")),
            None => return Err(SpecError::new("kind", "missing")),
        };
        let kind = match kind_name.as_str() {
            "error" => {
                let status = match object.remove("status") {
                    Some(value) => parse_status(&value)?,
                    None => {
                        return Err(SpecError::new(
                            "status",
                            "missing (an error fault needs a status)",
                        ));
                    }
                };
                let body = match object.remove("body") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(body)) if body.len() <= MAX_ERROR_BODY_BYTES => Some(body),
                    Some(Value::String(_)) => {
                        return Err(SpecError::new(
                            "body",
                            format!("longer than {MAX_ERROR_BODY_BYTES} bytes"),
                        ));
                    }
                    Some(_) => return Err(SpecError::new("body", "expected a string")),
                };
                FaultKind::Error { status, body }
            }
            "hang" => FaultKind::Hang,
            "delay" => {
                let delay = match object.remove("delay") {
                    Some(value) => parse_duration_field("delay", &value)?,
                    None => {
                        return Err(SpecError::new(
                            "delay",
                            "missing (a delay fault needs a delay)",
                        ));
                    }
                };
                let jitter = match object.remove("jitter") {
                    Some(value) => parse_duration_field("jitter", &value)?,
                    None => Duration::ZERO,
                };
                FaultKind::Delay { delay, jitter }
            }
            "reset" => FaultKind::Reset,
            other => {
                return Err(SpecError::new(
                    "kind",
                    format!("unknown kind `{other}`, expected one of error, hang, delay, reset"),
                ));
            }
        };
        let rate = match object.remove("rate") {
            None => 1.0,
            Some(value) => {
                let rate = value
                    .as_f64()
                    .ok_or_else(|| SpecError::new("rate", "expected a number in [0, 1]"))?;
                if !(0.0..=1.0).contains(&rate) {
                    return Err(SpecError::new("rate", format!("{rate} is outside [0, 1]")));
                }
                rate
            }
        };
        let matcher = match object.remove("match") {
            None | Some(Value::Null) => MatchRule::default(),
            Some(Value::Object(rule)) => parse_match(rule)?,
            Some(_) => return Err(SpecError::new("match", "expected an object")),
        };
        let lease = match object.remove("lease") {
            None | Some(Value::Null) => None,
            Some(value) => {
                let lease = parse_duration_field("lease", &value)?;
                if lease < MIN_LEASE {
                    return Err(SpecError::new("lease", "must be at least 1ms"));
                }
                Some(lease)
            }
        };
        if let Some(unknown) = object.keys().next() {
            return Err(SpecError::new(
                unknown.clone(),
                format!("unknown field for a `{kind_name}` fault"),
            ));
        }
        Ok(FaultSpec {
            kind,
            rate,
            matcher,
            lease,
        })
    }

    /// The JSON document of this fault, in the same shape [`FaultSpec::from_json_value`] reads.
    pub fn to_json_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("kind".into(), Value::from(self.kind.name()));
        match &self.kind {
            FaultKind::Error { status, body } => {
                object.insert("status".into(), Value::from(*status));
                if let Some(body) = body {
                    object.insert("body".into(), Value::from(body.clone()));
                }
            }
            FaultKind::Delay { delay, jitter } => {
                object.insert("delay".into(), Value::from(format_duration(*delay)));
                object.insert("jitter".into(), Value::from(format_duration(*jitter)));
            }
            FaultKind::Hang | FaultKind::Reset => {}
        }
        object.insert("rate".into(), Value::from(self.rate));
        if !self.matcher.is_empty() {
            object.insert(
                "match".into(),
                serde_json::to_value(&self.matcher).unwrap_or(Value::Null),
            );
        }
        if let Some(lease) = self.lease {
            object.insert("lease".into(), Value::from(format_duration(lease)));
        }
        Value::Object(object)
    }
}

impl Serialize for FaultSpec {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for FaultSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        FaultSpec::from_json_value(value).map_err(serde::de::Error::custom)
    }
}

fn parse_status(value: &Value) -> Result<u16, SpecError> {
    let status = value
        .as_u64()
        .ok_or_else(|| SpecError::new("status", "expected an integer in 400–599"))?;
    // 1xx, 2xx and 3xx would look like success (or a protocol switch), not like a fault.
    if !(400..=599).contains(&status) {
        return Err(SpecError::new(
            "status",
            format!("{status} is not an error status (400–599)"),
        ));
    }
    Ok(status as u16)
}

fn parse_match(mut rule: Map<String, Value>) -> Result<MatchRule, SpecError> {
    let method = match rule.remove("method") {
        None | Some(Value::Null) => None,
        Some(Value::String(method)) => Some(checked_method(&method)?),
        Some(_) => return Err(SpecError::new("match.method", "expected a string")),
    };
    let path_prefix = match rule.remove("path_prefix") {
        None | Some(Value::Null) => None,
        Some(Value::String(prefix)) if prefix.len() > MAX_PATH_PREFIX_BYTES => {
            return Err(SpecError::new(
                "match.path_prefix",
                format!("longer than {MAX_PATH_PREFIX_BYTES} bytes"),
            ));
        }
        Some(Value::String(prefix)) if prefix.starts_with('/') => Some(prefix),
        Some(Value::String(prefix)) => {
            return Err(SpecError::new(
                "match.path_prefix",
                format!("`{prefix}` does not start with `/`"),
            ));
        }
        Some(_) => return Err(SpecError::new("match.path_prefix", "expected a string")),
    };
    if let Some(unknown) = rule.keys().next() {
        return Err(SpecError::new(
            format!("match.{unknown}"),
            "unknown field, expected method or path_prefix",
        ));
    }
    Ok(MatchRule {
        method,
        path_prefix,
    })
}

/// A match rule's method: letters and `-` (at most [`MAX_METHOD_BYTES`]), upper-cased; an error names
/// `match.method`.
pub fn checked_method(method: &str) -> Result<String, SpecError> {
    let valid = !method.is_empty()
        && method.len() <= MAX_METHOD_BYTES
        && method
            .bytes()
            .all(|byte| byte.is_ascii_alphabetic() || byte == b'-');
    if !valid {
        return Err(SpecError::new(
            "match.method",
            format!("`{method}` is not an HTTP method"),
        ));
    }
    Ok(method.to_ascii_uppercase())
}

fn parse_duration_field(field: &str, value: &Value) -> Result<Duration, SpecError> {
    match value {
        Value::String(text) => {
            parse_duration(text).map_err(|error| SpecError::new(field, error.to_string()))
        }
        _ => Err(SpecError::new(
            field,
            "expected a duration string such as \"250ms\" or \"30s\"",
        )),
    }
}

/// A duration string that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a duration such as \"250ms\" or \"30s\": {reason}")]
pub struct DurationError {
    pub text: String,
    pub reason: String,
}

/// Reads a duration string such as `"250ms"`, `"30s"` or `"1m 30s"` (humantime syntax).
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    humantime::parse_duration(text.trim()).map_err(|error| DurationError {
        text: text.to_owned(),
        reason: error.to_string(),
    })
}

/// Writes a duration the way [`parse_duration`] reads it (`"30s"`, `"250ms"`).
pub fn format_duration(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

/// Validates a fault id from the URL: 1 to [`MAX_FAULT_ID_BYTES`] bytes of `A–Z a–z 0–9 . _ -`.
pub fn validate_fault_id(id: &str) -> Result<(), SpecError> {
    if id.is_empty() || id.len() > MAX_FAULT_ID_BYTES {
        return Err(SpecError::new(
            "id",
            format!("must be 1 to {MAX_FAULT_ID_BYTES} bytes long"),
        ));
    }
    if !id
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    {
        return Err(SpecError::new("id", "may hold only A-Z a-z 0-9 . _ -"));
    }
    Ok(())
}

/// One active fault as listed by `GET /_agent/faults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultView {
    pub id: String,
    pub fault: FaultSpec,
    /// Length of the current lease in milliseconds (what a renew without a body extends by).
    pub lease_ms: u64,
    /// Milliseconds until the lease runs out and the agent removes the fault.
    pub expires_in_ms: u64,
    /// How many requests this fault has fired on since it was put.
    pub injected: u64,
}

/// Body of `POST /_agent/faults/{id}/renew` (optional: an empty body renews for the fault's own lease length).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenewRequest {
    /// New lease length as a duration string; `None` keeps the current lease length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<String>,
}

/// Answer of `POST /_agent/halt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HaltResponse {
    /// How many faults were active and are now removed.
    pub removed: usize,
}

/// Why a fault left the table before its lease ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemovalReason {
    /// `DELETE /_agent/faults/{id}`.
    Deleted,
    /// `POST /_agent/halt` (or [`crate::Agent::halt`]).
    Halt,
    /// Replaced by a new `PUT` with the same id (an `applied` event follows).
    Replaced,
}

/// One message of `GET /_agent/stream`, a JSON object tagged by `event`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A fault was put (new or replacing one with the same id) or its lease renewed (`renewed: true`).
    Applied {
        id: String,
        fault: FaultSpec,
        lease_ms: u64,
        #[serde(default)]
        renewed: bool,
        at_ms: u64,
        seq: u64,
    },
    /// A fault's lease ran out and the agent removed it.
    Expired { id: String, at_ms: u64, seq: u64 },
    /// A fault was removed by a request.
    Removed {
        id: String,
        reason: RemovalReason,
        at_ms: u64,
        seq: u64,
    },
    /// Sent on the websocket only: this subscriber fell behind and `missed` events were dropped for it
    /// (`GET /_agent/faults` has the current table).
    Lagged { missed: u64 },
}

impl AgentEvent {
    /// The id of the fault the event is about (`None` for `lagged`).
    pub fn fault_id(&self) -> Option<&str> {
        match self {
            AgentEvent::Applied { id, .. }
            | AgentEvent::Expired { id, .. }
            | AgentEvent::Removed { id, .. } => Some(id),
            AgentEvent::Lagged { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests;
