//! The ten services, one module each with `fn router(state) -> Router`, and the answers they share.

pub mod ad;
pub mod cart;
pub mod checkout;
pub mod currency;
pub mod email;
pub mod frontend;
pub mod payment;
pub mod productcatalog;
pub mod recommendation;
pub mod shipping;

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use serving::ErrorBody;

use crate::client::{CallError, REJECTED_HEADER};

/// A JSON error answer `{"error": message}`: the stack's one error body ([`ErrorBody`]).
pub fn json_error(status: StatusCode, message: impl Into<String>) -> Response {
    ErrorBody::new(message).into_response_with(status)
}

/// The answer a JSON service gives when a dependency call failed: 503 with `x-tolerant-rejected` when a
/// breaker (here or further down) rejected it, the same 4xx when the dependency blamed the request,
/// 504 on a timeout, 502 otherwise.
pub fn dependency_failure(error: &CallError) -> Response {
    if let Some(breaker) = error.rejected_by() {
        let mut response = json_error(StatusCode::SERVICE_UNAVAILABLE, error.to_string());
        if let Ok(value) = HeaderValue::from_str(breaker) {
            response.headers_mut().insert(REJECTED_HEADER, value);
        }
        return response;
    }
    if let Some(status) = error.client_error_status() {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
        return json_error(status, error.to_string());
    }
    match error {
        CallError::Timeout { .. } => json_error(StatusCode::GATEWAY_TIMEOUT, error.to_string()),
        _ => json_error(StatusCode::BAD_GATEWAY, error.to_string()),
    }
}
