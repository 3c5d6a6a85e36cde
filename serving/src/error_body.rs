//! The one JSON body of every 4xx/5xx answer of the stack — the agent's fault API, the boutique services and the
//! dashboard's API: `{"error": "<message>"}`, plus `"field"` when the error is about one field of the request
//! and `"error_id"` when a server failure's detail went to the server's log under that id.

use std::fmt;

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::{Deserialize, Serialize};

/// Body of every error answer. The message names the field when there is one; the optional keys are left out
/// when they have no value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Human-readable message, naming the field when there is one.
    pub error: String,
    /// The offending field of the request, when the error is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The id a server failure's detail is logged under (the message carries it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_id: Option<String>,
}

impl ErrorBody {
    /// A body with only a message.
    pub fn new(error: impl Into<String>) -> Self {
        ErrorBody {
            error: error.into(),
            field: None,
            error_id: None,
        }
    }

    /// The same body naming the offending field.
    pub fn with_field(self, field: impl Into<String>) -> Self {
        ErrorBody {
            field: Some(field.into()),
            ..self
        }
    }

    /// The same body carrying the id the failure's detail is logged under.
    pub fn with_error_id(self, error_id: impl Into<String>) -> Self {
        ErrorBody {
            error_id: Some(error_id.into()),
            ..self
        }
    }

    /// The answer: `status` with this body as JSON.
    pub fn into_response_with(self, status: StatusCode) -> Response {
        (status, Json(self)).into_response()
    }
}

impl fmt::Display for ErrorBody {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_optional_keys_are_written_only_when_set() {
        let plain = serde_json::to_string(&ErrorBody::new("no such product")).unwrap();
        assert_eq!(plain, r#"{"error":"no such product"}"#);
        let named = ErrorBody::new("rate: 2 is outside [0, 1]").with_field("rate");
        assert_eq!(
            serde_json::to_string(&named).unwrap(),
            r#"{"error":"rate: 2 is outside [0, 1]","field":"rate"}"#
        );
        let logged = ErrorBody::new("internal error (error id 0a)").with_error_id("0a");
        assert_eq!(
            serde_json::to_string(&logged).unwrap(),
            r#"{"error":"internal error (error id 0a)","error_id":"0a"}"#
        );
        let back: ErrorBody = serde_json::from_str(r#"{"error":"x","field":"id"}"#).unwrap();
        assert_eq!(back, ErrorBody::new("x").with_field("id"));
    }
}
