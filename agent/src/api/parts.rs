//! The parts of a fault document, each made only valid by `TryFrom` (or a checking function) whose error names
//! its field ([`InvalidFault`]): [`Rate`] (in [0, 1]), [`ErrorStatus`] (400–599), [`Lease`] (at least
//! [`MIN_LEASE`]), an `error` body within [`MAX_ERROR_BODY_BYTES`], a [`MatchRule`]'s method and path prefix.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Longest accepted `body` of an `error` fault, in bytes.
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// Shortest lease a fault may ask for (a shorter one could not even be reported: leases are listed in ms).
pub const MIN_LEASE: Duration = Duration::from_millis(1);
/// Longest accepted `match.method`, in bytes.
pub const MAX_METHOD_BYTES: usize = 32;
/// Longest accepted `match.path_prefix`, in bytes.
pub const MAX_PATH_PREFIX_BYTES: usize = 1024;

/// A refused fault document: which field is wrong and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidFault {
    /// The offending field (`rate`, `status`, `match.method`, ...), or `body` when the document itself is unusable.
    pub field: String,
    pub message: String,
}

impl InvalidFault {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        InvalidFault {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Which requests a fault applies to; an empty rule matches every request. Its wire and file shape too (the
/// agent's `match`, an experiment spec's `[fault.match]`): a fault or a spec checks it with
/// [`MatchRule::checked`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchRule {
    /// HTTP method, upper case (`GET`, `POST`, ...); `None` matches every method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path prefix starting with `/`, compared byte-wise against the request path; `None` matches every path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
}

/// Probability that a fault fires on a matching request: a number in [0, 1] (`rate`).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate(f64);

impl Rate {
    /// Fires on every matching request (the default `rate`).
    pub const ALWAYS: Rate = Rate(1.0);

    /// The probability, in [0, 1].
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Rate {
    type Error = InvalidFault;

    fn try_from(rate: f64) -> Result<Self, InvalidFault> {
        if (0.0..=1.0).contains(&rate) {
            Ok(Rate(rate))
        } else {
            Err(InvalidFault::new(
                "rate",
                format!("{rate} is outside [0, 1]"),
            ))
        }
    }
}

/// The status an `error` fault answers with: 400–599 (`status`). 1xx, 2xx and 3xx would look like success (or a
/// protocol switch), not like a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorStatus(u16);

impl ErrorStatus {
    /// 500, an error fault's status where none is given (an experiment spec's default).
    pub const INTERNAL_SERVER_ERROR: ErrorStatus = ErrorStatus(500);

    /// The status; the error names `status`.
    pub fn new(status: u16) -> Result<Self, InvalidFault> {
        Self::try_from(u64::from(status))
    }

    /// The status code, 400–599.
    pub fn get(self) -> u16 {
        self.0
    }
}

impl TryFrom<u64> for ErrorStatus {
    type Error = InvalidFault;

    fn try_from(status: u64) -> Result<Self, InvalidFault> {
        match u16::try_from(status) {
            Ok(status @ 400..=599) => Ok(ErrorStatus(status)),
            _ => Err(InvalidFault::new(
                "status",
                format!("{status} is not an error status (400–599)"),
            )),
        }
    }
}

/// Written as the number.
impl serde::Serialize for ErrorStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u16(self.0)
    }
}

impl fmt::Display for ErrorStatus {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

/// How long a fault lasts unless renewed: at least [`MIN_LEASE`] (`lease`). The agent caps it further with its
/// own `max_lease`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lease(Duration);

impl Lease {
    /// The lease's length.
    pub fn get(self) -> Duration {
        self.0
    }
}

impl TryFrom<Duration> for Lease {
    type Error = InvalidFault;

    fn try_from(lease: Duration) -> Result<Self, InvalidFault> {
        if lease < MIN_LEASE {
            return Err(InvalidFault::new("lease", "must be at least 1ms"));
        }
        Ok(Lease(lease))
    }
}

/// An `error` fault's body: at most [`MAX_ERROR_BODY_BYTES`]; the error names `body`.
pub(super) fn checked_error_body(body: Option<String>) -> Result<Option<String>, InvalidFault> {
    match body {
        Some(body) if body.len() > MAX_ERROR_BODY_BYTES => Err(InvalidFault::new(
            "body",
            format!("longer than {MAX_ERROR_BODY_BYTES} bytes"),
        )),
        body => Ok(body),
    }
}

/// A match rule's method: letters and `-` (at most [`MAX_METHOD_BYTES`]), upper-cased; an error names
/// `match.method`.
pub fn checked_method(method: &str) -> Result<String, InvalidFault> {
    let valid = !method.is_empty()
        && method.len() <= MAX_METHOD_BYTES
        && method
            .bytes()
            .all(|byte| byte.is_ascii_alphabetic() || byte == b'-');
    if !valid {
        return Err(InvalidFault::new(
            "match.method",
            format!("`{method}` is not an HTTP method"),
        ));
    }
    Ok(method.to_ascii_uppercase())
}

/// A match rule's path prefix: starts with `/`, at most [`MAX_PATH_PREFIX_BYTES`]; an error names
/// `match.path_prefix`.
fn checked_path_prefix(prefix: String) -> Result<String, InvalidFault> {
    if prefix.len() > MAX_PATH_PREFIX_BYTES {
        return Err(InvalidFault::new(
            "match.path_prefix",
            format!("longer than {MAX_PATH_PREFIX_BYTES} bytes"),
        ));
    }
    if !prefix.starts_with('/') {
        return Err(InvalidFault::new(
            "match.path_prefix",
            format!("`{prefix}` does not start with `/`"),
        ));
    }
    Ok(prefix)
}

impl MatchRule {
    /// The rule with its method checked and upper-cased and its path prefix checked; errors name
    /// `match.method` or `match.path_prefix`.
    pub fn checked(self) -> Result<MatchRule, InvalidFault> {
        Ok(MatchRule {
            method: self.method.as_deref().map(checked_method).transpose()?,
            path_prefix: self.path_prefix.map(checked_path_prefix).transpose()?,
        })
    }
}
