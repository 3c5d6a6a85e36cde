//! The advisor page: the `tolerant tune` input as a form (the TOML it makes shown and editable), the front drawn
//! from `POST /api/tune` with the config and costs of the point under the pointer, the current config marked,
//! the recommendation downloadable in each library's format (`static/advisor.js`), and a button that creates and
//! starts the verification experiment through the operations (`POST /ui/advisor/verify`).

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use http::HeaderMap;
use serde::Deserialize;

use super::posted::Posted;
use super::viewer::Viewer;
use super::{page, redirect_with_notice, render};
use crate::error::PageError;
use crate::state::AppState;

page!(AdvisorPage);

/// The shipped example, the form's starting point.
const EXAMPLE: &str = include_str!("../../../experiments/tune-partial-failure.toml");
/// The study's breaker, the starting current config.
const STUDY: &str = include_str!("../../../experiments/breakers/study.toml");

#[derive(Template)]
#[template(path = "advisor.html")]
struct AdvisorPage {
    viewer: Viewer,
    page: &'static str,
    example: &'static str,
    study: &'static str,
}

pub async fn advisor(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    render(&AdvisorPage {
        viewer: Viewer::of(&state, &headers),
        page: "advisor",
        example: EXAMPLE,
        study: STUDY,
    })
}

#[derive(Debug, Deserialize)]
pub struct VerifyForm {
    /// The verification's experiment spec (from `POST /api/tune`'s `spec`).
    spec: String,
}

/// `POST /ui/advisor/verify`: create the verification experiment and start it, as the experiments page would.
pub async fn verify(
    State(state): State<AppState>,
    Posted(form): Posted<VerifyForm>,
) -> Result<Response, PageError> {
    let id = state.operations.create(form.spec).await?;
    state.operations.start(id, None).await?;
    Ok(redirect_with_notice(
        "/live",
        &format!(
            "Started the verification, experiment {id}: its report compares the candidates' measured costs."
        ),
    ))
}
