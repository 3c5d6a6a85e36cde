//! The login page, login and logout posts, and the same-site check of a `next` path.

use askama::Template;
use axum::Form;
use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::HeaderMap;
use http::header::SET_COOKIE;
use serde::Deserialize;

use super::posted::{CsrfForm, Posted};
use super::viewer::Viewer;
use super::{page, render};
use crate::auth::{Auth, AuthError};
use crate::error::{AppError, PageError};
use crate::state::AppState;

page!(LoginPage);

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    viewer: Viewer,
    page: &'static str,
    next: String,
    failed: bool,
    /// Refused unread: too many wrong logins in a row.
    throttled: bool,
}

#[derive(Debug, Deserialize)]
pub struct NextQuery {
    next: Option<String>,
    failed: Option<String>,
}

/// Only same-site paths are followed after a login or a form (no open redirect): `/` then a character that
/// is not `/` or `\\`, and no backslash, whitespace or control character anywhere — browsers read `/\\evil/`
/// as `//evil/` and drop tabs and newlines, so `/<TAB>/evil` is `//evil` too.
pub(crate) fn local_path(next: Option<String>) -> String {
    next.filter(|next| is_same_site_path(next))
        .unwrap_or_else(|| "/".into())
}

fn is_same_site_path(next: &str) -> bool {
    let mut chars = next.chars();
    chars.next() == Some('/')
        && !matches!(chars.next(), Some('/'))
        && !next
            .chars()
            .any(|c| c == '\\' || c.is_whitespace() || c.is_control())
}

pub async fn login_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<NextQuery>,
) -> Result<Response, PageError> {
    render(&LoginPage {
        viewer: Viewer::of(&state, &headers),
        page: "login",
        next: local_path(query.next),
        failed: query.failed.is_some(),
        throttled: false,
    })
}

#[derive(Debug, Deserialize)]
pub struct LoginForm {
    token: String,
    next: Option<String>,
}

pub async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    extensions: http::Extensions,
    Form(form): Form<LoginForm>,
) -> Result<Response, PageError> {
    let next = local_path(form.next);
    let client = serving::throttle::client_address(&extensions);
    let mut retry_after = None;
    let status = match state.auth.login(form.token.trim(), client) {
        Ok(session) => {
            return Ok((
                [(SET_COOKIE, Auth::session_cookie(&session))],
                Redirect::to(&next),
            )
                .into_response());
        }
        Err(AuthError::Throttled { retry_after: wait }) => {
            retry_after = Some(wait);
            http::StatusCode::TOO_MANY_REQUESTS
        }
        Err(_) => http::StatusCode::UNAUTHORIZED,
    };
    let page = LoginPage {
        viewer: Viewer::of(&state, &headers),
        page: "login",
        next,
        failed: true,
        throttled: status == http::StatusCode::TOO_MANY_REQUESTS,
    };
    let html = page.render().map_err(AppError::from)?;
    let mut response = (status, Html(html)).into_response();
    if let Some(wait) = retry_after {
        serving::throttle::set_retry_after(&mut response, wait);
    }
    Ok(response)
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Posted(_): Posted<CsrfForm>,
) -> Result<Response, PageError> {
    state.auth.logout(&headers);
    Ok(([(SET_COOKIE, Auth::expired_cookie())], Redirect::to("/")).into_response())
}
