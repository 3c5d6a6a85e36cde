//! The experiments page: the list, the create form (spec box) and the start, schedule and abort posts.

use askama::Template;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Response};
use http::HeaderMap;
use serde::Deserialize;
use serde_json::Value;

use super::posted::{CsrfForm, Posted};
use super::viewer::Viewer;
use super::{format_ms, format_optional_ms, page, redirect_with_notice, render};
use crate::api::parse_at;
use crate::error::{AppError, PageError};
use crate::operations::{ExperimentSummary, OperationError};
use crate::state::AppState;

page!(ExperimentsPage);

/// One row of the experiments list, preformatted.
#[derive(Debug, Clone)]
pub struct ExperimentLine {
    pub summary: ExperimentSummary,
    pub created: String,
    pub scheduled: String,
    pub progress: String,
    pub can_start: bool,
    pub can_abort: bool,
}

impl ExperimentLine {
    fn of(summary: ExperimentSummary) -> ExperimentLine {
        let status = summary.status.as_str();
        ExperimentLine {
            created: format_ms(summary.created_at_ms),
            scheduled: format_optional_ms(&summary.scheduled_at_ms),
            progress: match summary.finished_runs {
                Some(done) => format!("{done} / {}", summary.planned_runs),
                None => format!("– / {}", summary.planned_runs),
            },
            can_start: matches!(status, "pending" | "scheduled" | "interrupted" | "aborted"),
            can_abort: matches!(status, "running" | "scheduled"),
            summary,
        }
    }
}

#[derive(Template)]
#[template(path = "experiments.html")]
struct ExperimentsPage {
    viewer: Viewer,
    page: &'static str,
    experiments: Vec<ExperimentLine>,
    example_spec: &'static str,
    /// Why the last spec was refused (names the field and line).
    error: Option<String>,
    /// The spec box's text (kept when it was refused).
    spec: String,
}

/// A short experiment for the create form's placeholder.
pub const EXAMPLE_SPEC: &str = r#"name = "smoke"
rounds = 1
duration = "20s"
warmup = "2s"
time_scale = 1.0
seed = 7

[load]
users = 10
think_time = ["100ms", "300ms"]

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]

[breaker]
modes = ["enforce"]
"#;

async fn experiments_page(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<ExperimentsPage, PageError> {
    let experiments = state
        .operations
        .experiments()
        .await?
        .into_iter()
        .rev()
        .map(ExperimentLine::of)
        .collect();
    Ok(ExperimentsPage {
        viewer: Viewer::of(state, headers),
        page: "experiments",
        experiments,
        example_spec: EXAMPLE_SPEC,
        error: None,
        spec: String::new(),
    })
}

pub async fn experiments(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    render(&experiments_page(&state, &headers).await?)
}

#[derive(Debug, Deserialize)]
pub struct CreateForm {
    spec: String,
}

pub async fn create_experiment(
    State(state): State<AppState>,
    headers: HeaderMap,
    Posted(form): Posted<CreateForm>,
) -> Result<Response, PageError> {
    if form.spec.trim().is_empty() {
        return experiments_with_error(
            &state,
            &headers,
            "spec: empty — paste a TOML spec, load a file, or press “Insert example”".into(),
            form.spec,
        )
        .await;
    }
    match state.operations.create(form.spec.clone()).await {
        Ok(id) => Ok(redirect_with_notice(
            "/experiments",
            &format!("Created experiment {id}. Start it now or schedule it below."),
        )),
        Err(OperationError::Invalid(message)) => {
            experiments_with_error(&state, &headers, message, form.spec).await
        }
        Err(other) => Err(other.into()),
    }
}

/// The experiments page again, with why the spec was refused and the spec as it was typed.
async fn experiments_with_error(
    state: &AppState,
    headers: &HeaderMap,
    error: String,
    spec: String,
) -> Result<Response, PageError> {
    let mut page = experiments_page(state, headers).await?;
    page.error = Some(error);
    page.spec = spec;
    let html = page.render().map_err(AppError::from)?;
    Ok((http::StatusCode::BAD_REQUEST, Html(html)).into_response())
}

#[derive(Debug, Deserialize)]
pub struct StartForm {
    /// Unix ms (the page's script fills it from the datetime picker), or RFC 3339; empty = now.
    #[serde(default)]
    at: String,
}

pub async fn start_experiment(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Posted(form): Posted<StartForm>,
) -> Result<Response, PageError> {
    let at = parse_at(&Value::String(form.at))?;
    state.operations.start(id, at).await?;
    Ok(match at {
        Some(at) if at > controller::clock::now_ms() => redirect_with_notice(
            "/experiments",
            &format!("Experiment {id} is scheduled for {}.", format_ms(at)),
        ),
        _ => redirect_with_notice("/live", &format!("Started experiment {id}.")),
    })
}

pub async fn abort_experiment(
    State(state): State<AppState>,
    Path(id): Path<i64>,
    Posted(_): Posted<CsrfForm>,
) -> Result<Response, PageError> {
    state.operations.abort(id).await?;
    Ok(redirect_with_notice(
        "/experiments",
        &format!(
            "Aborted experiment {id}: its unfinished run is discarded and every fault cleared."
        ),
    ))
}
