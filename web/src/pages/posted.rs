//! A page's form post as the handlers take it: the form, read only once the session cookie and the form's
//! hidden `csrf` field passed the same check as the API's (a refused post answers 401/403).

use axum::Form;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::PageError;
use crate::state::AppState;

/// A form `F` posted by the logged-in operator. A body that is not the form answers as axum's `Form` does (before
/// any check, as before); a post without the session or its CSRF token is refused with the error page.
#[derive(Debug)]
pub struct Posted<F>(pub F);

/// A form that carries nothing but its CSRF token (log out, abort).
#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    pub(crate) csrf: String,
}

impl<F: DeserializeOwned + Send> FromRequest<AppState> for Posted<F> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &AppState) -> Result<Self, Response> {
        let (parts, body) = request.into_parts();
        let body = Bytes::from_request(Request::from_parts(parts.clone(), body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let read = |body: &Bytes| Request::from_parts(parts.clone(), Body::from(body.clone()));
        let Form(form) = Form::<F>::from_request(read(&body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let Form(CsrfForm { csrf }) = Form::<CsrfForm>::from_request(read(&body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        state
            .auth
            .authorize(
                &parts.headers,
                serving::throttle::client_address(&parts.extensions),
                Some(&csrf),
            )
            .map_err(|refused| PageError::from(refused).into_response())?;
        Ok(Posted(form))
    }
}
