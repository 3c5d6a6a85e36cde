//! The error boundary of every handler: a status and a short message, never internals of the controller. A client
//! error (4xx) keeps its message, which names the field; an internal failure (5xx) answers a generic message with
//! an error id, and the full detail goes to the log under the same id. Both are the stack's one error body
//! ([`ErrorBody`]: `error`, and `error_id` for a server failure).

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serving::ErrorBody;

use crate::auth::AuthError;
use crate::operations::OperationError;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    Operations(#[from] OperationError),
    /// The request itself is malformed; the message names the field.
    #[error("{0}")]
    BadRequest(String),
    /// No such page or route.
    #[error("{0}")]
    NotFound(String),
    /// More requests than the endpoint takes; the message says the bound.
    #[error("{0}")]
    TooMany(String),
    /// The dashboard is at a stated capacity (anonymous live readers); the message says the bound.
    #[error("{0}")]
    Unavailable(String),
    #[error("page rendering failed")]
    Template(#[from] askama::Error),
    /// A failure of the dashboard itself (a task that did not finish); the message says which.
    #[error("{0}")]
    Internal(String),
}

impl AppError {
    pub fn status(&self) -> StatusCode {
        match self {
            AppError::Auth(AuthError::Missing | AuthError::WrongToken) => StatusCode::UNAUTHORIZED,
            AppError::Auth(AuthError::Csrf | AuthError::Origin) => StatusCode::FORBIDDEN,
            AppError::Auth(AuthError::Throttled { .. }) => StatusCode::TOO_MANY_REQUESTS,
            AppError::Operations(OperationError::Invalid(_)) | AppError::BadRequest(_) => {
                StatusCode::BAD_REQUEST
            }
            AppError::Operations(OperationError::NotFound(_)) | AppError::NotFound(_) => {
                StatusCode::NOT_FOUND
            }
            AppError::Operations(OperationError::Conflict(_)) => StatusCode::CONFLICT,
            AppError::Operations(OperationError::Failed(_)) => StatusCode::BAD_GATEWAY,
            AppError::TooMany(_) => StatusCode::TOO_MANY_REQUESTS,
            AppError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Template(_)
            | AppError::Internal(_)
            | AppError::Operations(OperationError::Internal(_)) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The status and the message the client may read. A server error is logged here with its detail under a
    /// fresh error id, and the client reads only a generic message carrying that id.
    fn answer(&self) -> (StatusCode, String, Option<String>) {
        let status = self.status();
        if !status.is_server_error() || matches!(self, AppError::Unavailable(_)) {
            return (status, self.to_string(), None);
        }
        let id = format!("{:08x}", rand::random::<u32>());
        tracing::error!(error_id = %id, status = status.as_u16(), error = %self, "dashboard request failed");
        let what = if status == StatusCode::BAD_GATEWAY {
            "the testbed behind the controller failed"
        } else {
            "internal error"
        };
        let message = format!("{what}; the detail is in the controller log (error id {id})");
        (status, message, Some(id))
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (status, message, id) = self.answer();
        let body = ErrorBody::new(message);
        let mut response = match id {
            Some(id) => body.with_error_id(id),
            None => body,
        }
        .into_response_with(status);
        match self {
            AppError::Auth(AuthError::Throttled { retry_after }) => {
                serving::throttle::set_retry_after(&mut response, retry_after);
            }
            AppError::Unavailable(_) => {
                serving::throttle::set_retry_after(&mut response, UNAVAILABLE_RETRY_AFTER);
            }
            _ => {}
        }
        response
    }
}

/// When a client refused for capacity ([`AppError::Unavailable`]) is told to try again.
pub const UNAVAILABLE_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(5);

/// The same errors answered as an HTML page, for the pages and their form posts: a person submitting a form
/// reads the message in the dashboard's layout, never a bare JSON document.
#[derive(Debug)]
pub struct PageError(pub AppError);

impl<E: Into<AppError>> From<E> for PageError {
    fn from(error: E) -> Self {
        PageError(error.into())
    }
}

#[derive(askama::Template)]
#[template(path = "error.html")]
struct ErrorPage {
    viewer: crate::pages::viewer::Viewer,
    page: &'static str,
    status: u16,
    message: String,
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, message, _) = self.0.answer();
        let retry_after = match self.0 {
            AppError::Auth(AuthError::Throttled { retry_after }) => Some(retry_after),
            _ => None,
        };
        let page = ErrorPage {
            viewer: crate::pages::viewer::Viewer::anonymous(),
            page: "error",
            status: status.as_u16(),
            message,
        };
        let mut response = match askama::Template::render(&page) {
            Ok(html) => (status, axum::response::Html(html)).into_response(),
            Err(error) => {
                tracing::error!(%error, "the error page did not render");
                (status, page.message).into_response()
            }
        };
        if let Some(retry_after) = retry_after {
            serving::throttle::set_retry_after(&mut response, retry_after);
        }
        response
    }
}
