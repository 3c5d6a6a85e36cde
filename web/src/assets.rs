//! Plain JS and CSS, compiled into the binary: the dashboard needs no CDN and no files on disk.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};

/// `(file name, content type, content)`.
const ASSETS: [(&str, &str, &str); 9] = [
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../static/app.css"),
    ),
    (
        "common.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/common.js"),
    ),
    (
        "panels.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/panels.js"),
    ),
    (
        "live.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/live.js"),
    ),
    (
        "charts.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/charts.js"),
    ),
    (
        "runview.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/runview.js"),
    ),
    (
        "replay.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/replay.js"),
    ),
    (
        "simulate.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/simulate.js"),
    ),
    (
        "advisor.js",
        "text/javascript; charset=utf-8",
        include_str!("../static/advisor.js"),
    ),
];

/// `GET /static/{file}`.
pub async fn serve(Path(file): Path<String>) -> Response {
    match ASSETS.iter().find(|(name, _, _)| *name == file) {
        Some((_, content_type, body)) => (
            [(CONTENT_TYPE, *content_type), (CACHE_CONTROL, "no-cache")],
            *body,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}
