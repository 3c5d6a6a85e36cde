//! The simulator page: sliders for the simulator's settings, redrawn from `GET /api/simulate` as they move
//! (`static/simulate.js`), and a button that turns them into an experiment spec (`GET /api/simulate/spec`).

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use breaker::sim::Settings;
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
    /// The published model's defaults as the sliders' query (`outage_start=20&…`), applied when it is chosen.
    published_defaults: String,
}

/// The sliders' settings of the published simulator's defaults, as a query string.
fn published_defaults() -> String {
    let s = Settings::published();
    format!(
        "outage_start={}&outage={}&threshold={}&open_window={}&successes_to_close={}&rate={}&timeout={}&failure_rate={}&instances={}&jitter={}&window={}&fault=hang&half_open={}",
        s.outage_start.as_secs_f64(),
        s.outage.as_secs_f64(),
        s.threshold,
        s.open_window.as_secs_f64(),
        s.successes_to_close,
        s.rate,
        s.timeout.as_secs_f64(),
        s.failure_rate,
        s.instances,
        s.jitter,
        s.window.as_secs_f64(),
        s.half_open,
    )
}

pub async fn simulate(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    render(&SimulatePage {
        viewer: Viewer::of(&state, &headers),
        page: "simulate",
        published_defaults: published_defaults(),
    })
}
