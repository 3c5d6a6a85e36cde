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
//! Parsing is two steps, as for the breaker's config: serde reads the document into its raw shape
//! ([`RawFaultSpec`], `raw.rs`: unknown fields refused), then `FaultSpec::try_from` checks it into the checked
//! parts (`parts.rs`: [`Rate`], [`ErrorStatus`], [`Lease`]). The same path serves a document arriving at the
//! agent, one read back by a client and a fault built in code ([`FaultSpec::try_new`]), so every rejection
//! carries the name of the offending field ([`InvalidFault::field`]) and a [`FaultSpec`] that exists is a valid
//! one: its fields are private, read through accessors. Fields of another kind (`status` on a `delay`) are
//! refused too.

mod parts;
mod raw;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use parts::{
    ErrorStatus, InvalidFault, Lease, MAX_ERROR_BODY_BYTES, MAX_METHOD_BYTES,
    MAX_PATH_PREFIX_BYTES, MIN_LEASE, MatchRule, Rate, checked_method,
};
pub use raw::{RawFaultSpec, read_json_object};

/// Longest accepted fault id, in bytes.
pub const MAX_FAULT_ID_BYTES: usize = 128;

/// What a fault does to a request it fires on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// Answer at once with `status` (and `body`, if any), without calling the service.
    Error {
        status: ErrorStatus,
        body: Option<String>,
    },
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

/// One fault as set through `PUT /_agent/faults/{id}`, checked: built only from a [`RawFaultSpec`] by `TryFrom`
/// (parsing, [`FaultSpec::try_new`]). Serialises as its raw shape; deserialising checks it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawFaultSpec")]
pub struct FaultSpec {
    kind: FaultKind,
    rate: Rate,
    matcher: MatchRule,
    lease: Option<Lease>,
}

impl TryFrom<RawFaultSpec> for FaultSpec {
    type Error = InvalidFault;

    /// Checks the kind and its own fields, then rate, match and lease; the error names the first offending
    /// field. A field of another kind is refused naming it.
    fn try_from(raw: RawFaultSpec) -> Result<Self, InvalidFault> {
        let Some(kind_name) = raw.kind.as_deref() else {
            return Err(InvalidFault::new("kind", "missing"));
        };
        let own_fields: &[&str] = match kind_name {
            "error" => &["status", "body"],
            "delay" => &["delay", "jitter"],
            "hang" | "reset" => &[],
            other => {
                return Err(InvalidFault::new(
                    "kind",
                    format!("unknown kind `{other}`, expected one of error, hang, delay, reset"),
                ));
            }
        };
        let given = [
            ("status", raw.status.is_some()),
            ("body", raw.body.is_some()),
            ("delay", raw.delay.is_some()),
            ("jitter", raw.jitter.is_some()),
        ];
        if let Some((field, _)) = given
            .iter()
            .find(|(field, given)| *given && !own_fields.contains(field))
        {
            return Err(InvalidFault::new(
                *field,
                format!("unknown field for a `{kind_name}` fault"),
            ));
        }
        let kind = match kind_name {
            "error" => {
                let status = raw.status.ok_or_else(|| {
                    InvalidFault::new("status", "missing (an error fault needs a status)")
                })?;
                FaultKind::Error {
                    status: ErrorStatus::try_from(status)?,
                    body: parts::checked_error_body(raw.body)?,
                }
            }
            "delay" => {
                let delay = raw.delay.as_deref().ok_or_else(|| {
                    InvalidFault::new("delay", "missing (a delay fault needs a delay)")
                })?;
                FaultKind::Delay {
                    delay: duration_field("delay", delay)?,
                    jitter: match raw.jitter.as_deref() {
                        Some(jitter) => duration_field("jitter", jitter)?,
                        None => Duration::ZERO,
                    },
                }
            }
            "hang" => FaultKind::Hang,
            _ => FaultKind::Reset,
        };
        Ok(FaultSpec {
            kind,
            rate: Rate::try_from(raw.rate)?,
            matcher: raw.matcher.unwrap_or_default().checked()?,
            lease: raw
                .lease
                .as_deref()
                .map(|lease| Lease::try_from(duration_field("lease", lease)?))
                .transpose()?,
        })
    }
}

impl From<FaultSpec> for RawFaultSpec {
    fn from(spec: FaultSpec) -> Self {
        let mut raw = RawFaultSpec {
            body: None,
            delay: None,
            jitter: None,
            kind: Some(spec.kind.name().to_owned()),
            lease: spec.lease.map(|lease| format_duration(lease.get())),
            matcher: (spec.matcher != MatchRule::default()).then_some(spec.matcher),
            rate: spec.rate.get(),
            status: None,
        };
        match spec.kind {
            FaultKind::Error { status, body } => {
                raw.status = Some(u64::from(status.get()));
                raw.body = body;
            }
            FaultKind::Delay { delay, jitter } => {
                raw.delay = Some(format_duration(delay));
                raw.jitter = Some(format_duration(jitter));
            }
            FaultKind::Hang | FaultKind::Reset => {}
        }
        raw
    }
}

impl Serialize for FaultSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RawFaultSpec::from(self.clone()).serialize(serializer)
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
    ) -> Result<Self, InvalidFault> {
        let raw = RawFaultSpec {
            rate,
            matcher: Some(matcher),
            lease: lease.map(format_duration),
            ..RawFaultSpec::from(FaultSpec {
                kind,
                rate: Rate::ALWAYS,
                matcher: MatchRule::default(),
                lease: None,
            })
        };
        FaultSpec::try_from(raw)
    }

    /// An `error` fault at `rate` with no match rule and the default lease.
    pub fn error(status: u16, rate: f64) -> Result<Self, InvalidFault> {
        Self::try_new(
            FaultKind::Error {
                status: ErrorStatus::new(status)?,
                body: None,
            },
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
        self.rate.get()
    }

    /// Which requests the fault applies to (`match` on the wire).
    pub fn matcher(&self) -> &MatchRule {
        &self.matcher
    }

    /// Lease length; `None` means the agent's default lease.
    pub fn lease(&self) -> Option<Duration> {
        self.lease.map(Lease::get)
    }

    /// Parses and checks a JSON document (the body of `PUT /_agent/faults/{id}`). Every error names its field.
    pub fn from_json_slice(bytes: &[u8]) -> Result<Self, InvalidFault> {
        FaultSpec::try_from(RawFaultSpec::from_json_slice(bytes)?)
    }

    /// Checks a parsed JSON document. Every error names the field it is about.
    pub fn from_json_value(value: Value) -> Result<Self, InvalidFault> {
        FaultSpec::try_from(RawFaultSpec::from_json_value(value)?)
    }

    /// The JSON document of this fault, in the shape [`FaultSpec::from_json_value`] reads.
    pub fn to_json_value(&self) -> Value {
        serde_json::to_value(RawFaultSpec::from(self.clone())).unwrap_or(Value::Null)
    }
}

/// A duration field's text read as a duration; the error names `field`.
fn duration_field(field: &str, text: &str) -> Result<Duration, InvalidFault> {
    parse_duration(text).map_err(|error| InvalidFault::new(field, error.to_string()))
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

/// Validates a fault id from the URL: 1 to [`MAX_FAULT_ID_BYTES`] bytes of `A–Z a–z 0–9 . _ -`, not `.` or `..`.
pub fn validate_fault_id(id: &str) -> Result<(), InvalidFault> {
    if id.is_empty() || id.len() > MAX_FAULT_ID_BYTES {
        return Err(InvalidFault::new(
            "id",
            format!("must be 1 to {MAX_FAULT_ID_BYTES} bytes long"),
        ));
    }
    if !id
        .bytes()
        .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
    {
        return Err(InvalidFault::new("id", "may hold only A-Z a-z 0-9 . _ -"));
    }
    // A URL path resolves `.` and `..` as segments: a fault put under one could not be renewed or deleted.
    if id == "." || id == ".." {
        return Err(InvalidFault::new(
            "id",
            format!("`{id}` is a path segment of its own, not an id"),
        ));
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

/// Answer of `GET /_agent/limits`: the caps the agent checks a fault against, durations written as
/// [`format_duration`] writes them, so a controller can refuse a spec beyond them before it stores anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentLimits {
    /// The longest lease a fault may ask for.
    pub max_lease: String,
    /// The longest a hang is held, and the most a delay with its whole jitter may hold.
    pub max_hold: String,
    /// The lease of a fault put without one.
    pub default_lease: String,
    /// The most faults the table holds.
    pub max_faults: usize,
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
