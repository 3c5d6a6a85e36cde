//! The simulator page: sliders for the simulator's settings, redrawn from `GET /api/simulate` as they move
//! (`static/simulate.js`), and a button that turns them into an experiment spec (`GET /api/simulate/spec`).

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use http::HeaderMap;

use super::viewer::Viewer;
use super::{page, render};
use crate::error::PageError;
use crate::state::AppState;

page!(SimulatePage);

#[derive(Template)]
#[template(path = "simulate.html")]
struct SimulatePage {
    viewer: Viewer,
    page: &'static str,
}

pub async fn simulate(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    render(&SimulatePage {
        viewer: Viewer::of(&state, &headers),
        page: "simulate",
    })
}
