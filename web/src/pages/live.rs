//! The live page: a shell the websocket (`static/live.js`) fills.

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use http::HeaderMap;

use super::viewer::Viewer;
use super::{page, render};
use crate::error::PageError;
use crate::state::AppState;

page!(LivePage);

#[derive(Template)]
#[template(path = "live.html")]
struct LivePage {
    viewer: Viewer,
    page: &'static str,
}

pub async fn live(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    render(&LivePage {
        viewer: Viewer::of(&state, &headers),
        page: "live",
    })
}
