//! How a page answers: rendered templates, redirects, error pages for failed calls and bad forms, and the extractors of a visit and a checked form.

use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Form};

use super::forms::{InvalidForm, PostedForm};
use super::pages::{ErrorPage, Header};
use super::session::ShopperSession;
use super::state::FrontendState;
use crate::client::{CallError, REJECTED_HEADER};

pub(super) fn render(template: &impl Template, status: StatusCode) -> Response {
    match template.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(error) => {
            tracing::error!(%error, "template failed to render");
            (StatusCode::INTERNAL_SERVER_ERROR, "template error").into_response()
        }
    }
}

/// A 302 Found to `location`, as Online Boutique answers its form posts.
pub(super) fn found(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => (StatusCode::FOUND, [(header::LOCATION, value)]).into_response(),
        Err(_) => (
            StatusCode::FOUND,
            [(header::LOCATION, HeaderValue::from_static("/"))],
        )
            .into_response(),
    }
}

fn plain_header(session: &ShopperSession) -> Header {
    Header::new(&[], &session.currency, None)
}

/// The error page, with `x-tolerant-rejected` when a breaker rejected the request.
pub(super) fn error_page(
    session: &ShopperSession,
    status: StatusCode,
    message: String,
    rejected_by: Option<String>,
) -> Response {
    let page = ErrorPage {
        header: plain_header(session),
        status: status.as_u16(),
        message,
        rejected_by: rejected_by.clone(),
    };
    let mut response = render(&page, status);
    if let Some(value) = rejected_by.and_then(|breaker| HeaderValue::from_str(&breaker).ok()) {
        response.headers_mut().insert(REJECTED_HEADER, value);
    }
    response
}

/// The page for a failed call on a path that cannot degrade.
pub(super) fn call_failed(session: &ShopperSession, what: &str, error: &CallError) -> Response {
    if let Some(breaker) = error.rejected_by() {
        return error_page(
            session,
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{what}: {error}"),
            Some(breaker.to_owned()),
        );
    }
    error_page(
        session,
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("{what}: {error}"),
        None,
    )
}

pub(super) fn invalid_form(session: &ShopperSession, error: InvalidForm) -> Response {
    error_page(
        session,
        StatusCode::UNPROCESSABLE_ENTITY,
        error.to_string(),
        None,
    )
}

/// What every shop handler that calls a dependency reads: the frontend's state and the visitor's session (put
/// in the request by [`session::ensure_session`]).
pub(super) struct Visit {
    pub(super) state: Arc<FrontendState>,
    pub(super) session: ShopperSession,
}

impl FromRequestParts<Arc<FrontendState>> for Visit {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<FrontendState>,
    ) -> Result<Self, Response> {
        let Extension(session) = Extension::<ShopperSession>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Visit {
            state: state.clone(),
            session,
        })
    }
}

/// A posted form, read and checked: a handler gets it valid; a body that is not a form, or a form with invalid
/// fields, is answered with the 422 error page naming them.
pub(super) struct Valid<F>(pub(super) F);

impl<S: Send + Sync, F: PostedForm> FromRequest<S> for Valid<F> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let Extension(session) = Extension::<ShopperSession>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let posted =
            Form::<HashMap<String, String>>::from_request(Request::from_parts(parts, body), state)
                .await;
        let form = match posted {
            Ok(Form(fields)) => F::parse(&fields),
            Err(rejection) => Err(InvalidForm {
                problems: vec![rejection.to_string()],
            }),
        };
        form.map(Valid)
            .map_err(|error| invalid_form(&session, error))
    }
}
