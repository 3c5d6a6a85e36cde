//! The HTML pages (askama templates in `web/templates/`) and the form posts they make. Forms carry the
//! session's CSRF token in a hidden `csrf` field; a refused post answers 401/403 like the API.

use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::HeaderMap;
use http::header::SET_COOKIE;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::api::{check_mode, parse_at, store_annotation};
use crate::app::AppState;
use crate::auth::Auth;
use crate::error::AppError;
use crate::operations::{AnnotationEntry, BREAKER_MODES, ExperimentSummary, FaultRequest, Results};

/// What every page's layout needs.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub logged_in: bool,
    /// The session's CSRF token (empty when not logged in).
    pub csrf: String,
}

impl Viewer {
    fn of(state: &AppState, headers: &HeaderMap) -> Viewer {
        match state.auth.session(headers) {
            Some(session) => Viewer {
                logged_in: true,
                csrf: session.csrf,
            },
            None => Viewer {
                logged_in: false,
                csrf: String::new(),
            },
        }
    }
}

fn render(template: &impl Template) -> Result<Response, AppError> {
    Ok(Html(template.render()?).into_response())
}

/// `1732896000123` → `2024-11-29 16:00:00 UTC`.
pub fn format_ms(ms: i64) -> String {
    if ms <= 0 {
        return String::from("–");
    }
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    let text = humantime::format_rfc3339_seconds(time).to_string();
    text.replace('T', " ").replace('Z', " UTC")
}

fn format_optional_ms(ms: &Option<i64>) -> String {
    ms.map(format_ms).unwrap_or_else(|| String::from("–"))
}

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

pub async fn experiments(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let experiments = state
        .operations
        .experiments()
        .await?
        .into_iter()
        .rev()
        .map(ExperimentLine::of)
        .collect();
    render(&ExperimentsPage {
        viewer: Viewer::of(&state, &headers),
        page: "experiments",
        experiments,
        example_spec: EXAMPLE_SPEC,
    })
}

#[derive(Template)]
#[template(path = "live.html")]
struct LivePage {
    viewer: Viewer,
    page: &'static str,
}

pub async fn live(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, AppError> {
    render(&LivePage {
        viewer: Viewer::of(&state, &headers),
        page: "live",
    })
}

/// A results cell, preformatted.
#[derive(Debug, Clone)]
pub struct CellText {
    pub mean: String,
    pub interval: String,
}

fn number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude == 0.0 {
        "0".into()
    } else if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// An annotation as the pages list it, preformatted.
#[derive(Debug, Clone)]
pub struct AnnotationLine {
    pub at: String,
    pub text: String,
    /// `alice`, or empty.
    pub author: String,
    /// `run 12`, or empty when it was written between runs.
    pub run: String,
}

impl AnnotationLine {
    fn of(entry: &AnnotationEntry) -> AnnotationLine {
        AnnotationLine {
            at: format_ms(entry.at_ms),
            text: entry.text.clone(),
            author: entry.author.clone().unwrap_or_default(),
            run: entry
                .run_id
                .map(|run| format!("run {run}"))
                .unwrap_or_default(),
        }
    }
}

#[derive(Template)]
#[template(path = "results.html")]
struct ResultsPage {
    viewer: Viewer,
    page: &'static str,
    results: Results,
    rows: Vec<(String, usize, Vec<CellText>)>,
    verdicts: Vec<(String, String, String, String, bool)>,
    annotations: Vec<AnnotationLine>,
}

pub async fn results(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Result<Response, AppError> {
    let results = state.operations.results(id).await?;
    let rows = results
        .conditions
        .iter()
        .map(|condition| {
            let cells = condition
                .cells
                .iter()
                .map(|cell| match cell {
                    Some(cell) => CellText {
                        mean: number(cell.mean),
                        interval: match cell.half_width {
                            Some(half) => format!("± {} (n = {})", number(half), cell.n),
                            None => format!("(n = {})", cell.n),
                        },
                    },
                    None => CellText {
                        mean: "–".into(),
                        interval: String::new(),
                    },
                })
                .collect();
            (condition.label.clone(), condition.runs, cells)
        })
        .collect();
    let verdicts = results
        .verdicts
        .iter()
        .map(|verdict| {
            (
                format!(
                    "{} at {:.0} %",
                    verdict.fault_kind,
                    verdict.fault_rate * 100.0
                ),
                verdict.metric.clone(),
                format!(
                    "{} [{}, {}]",
                    number(verdict.difference),
                    number(verdict.ci_low),
                    number(verdict.ci_high)
                ),
                verdict.verdict.clone(),
                verdict.intervals_separate,
            )
        })
        .collect();
    let annotations = results.annotations.iter().map(AnnotationLine::of).collect();
    render(&ResultsPage {
        viewer: Viewer::of(&state, &headers),
        page: "results",
        results,
        rows,
        verdicts,
        annotations,
    })
}

#[derive(Template)]
#[template(path = "gameday.html")]
struct GameDayPage {
    viewer: Viewer,
    page: &'static str,
    services: Vec<String>,
    modes: &'static [&'static str],
    /// The latest stored annotations, newest first.
    annotations: Vec<AnnotationLine>,
}

/// Stored annotations the game day page lists.
const GAME_DAY_ANNOTATIONS: usize = 20;

pub async fn gameday(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let annotations = state
        .operations
        .latest_annotations(GAME_DAY_ANNOTATIONS)
        .await?
        .iter()
        .rev()
        .map(AnnotationLine::of)
        .collect();
    render(&GameDayPage {
        viewer: Viewer::of(&state, &headers),
        page: "gameday",
        services: state.operations.services(),
        modes: &BREAKER_MODES,
        annotations,
    })
}

#[derive(Template)]
#[template(path = "login.html")]
struct LoginPage {
    viewer: Viewer,
    page: &'static str,
    next: String,
    failed: bool,
}

#[derive(Debug, Deserialize)]
pub struct NextQuery {
    next: Option<String>,
    failed: Option<String>,
}

/// Only local paths are followed after a login (no open redirect).
fn local_path(next: Option<String>) -> String {
    next.filter(|next| next.starts_with('/') && !next.starts_with("//"))
        .unwrap_or_else(|| "/".into())
}

pub async fn login_form(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(query): Query<NextQuery>,
) -> Result<Response, AppError> {
    render(&LoginPage {
        viewer: Viewer::of(&state, &headers),
        page: "login",
        next: local_path(query.next),
        failed: query.failed.is_some(),
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
    Form(form): Form<LoginForm>,
) -> Result<Response, AppError> {
    let next = local_path(form.next);
    match state.auth.login(form.token.trim()) {
        Ok(session) => Ok((
            [(SET_COOKIE, Auth::session_cookie(&session))],
            Redirect::to(&next),
        )
            .into_response()),
        Err(_) => {
            let page = LoginPage {
                viewer: Viewer::of(&state, &headers),
                page: "login",
                next,
                failed: true,
            };
            Ok((http::StatusCode::UNAUTHORIZED, Html(page.render()?)).into_response())
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

pub async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    state.auth.logout(&headers);
    Ok(([(SET_COOKIE, Auth::expired_cookie())], Redirect::to("/")).into_response())
}

#[derive(Debug, Deserialize)]
pub struct CreateForm {
    #[serde(default)]
    csrf: String,
    spec: String,
}

pub async fn create_experiment(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<CreateForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    state.operations.create(form.spec).await?;
    Ok(Redirect::to("/experiments").into_response())
}

#[derive(Debug, Deserialize)]
pub struct StartForm {
    #[serde(default)]
    csrf: String,
    /// Unix ms (the page's script fills it from the datetime picker), or RFC 3339; empty = now.
    #[serde(default)]
    at: String,
}

pub async fn start_experiment(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<StartForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    let at = parse_at(&Value::String(form.at))?;
    state.operations.start(id, at).await?;
    let next = if at.is_some() {
        "/experiments"
    } else {
        "/live"
    };
    Ok(Redirect::to(next).into_response())
}

pub async fn abort_experiment(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CsrfForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    state.operations.abort(id).await?;
    Ok(Redirect::to("/experiments").into_response())
}

pub async fn halt(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<CsrfForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    state.operations.halt().await?;
    Ok(Redirect::to("/gameday").into_response())
}

#[derive(Debug, Deserialize)]
pub struct FaultForm {
    #[serde(default)]
    csrf: String,
    target: String,
    kind: String,
    #[serde(default)]
    status: String,
    /// Percent, 0–100 (the slider).
    rate: f64,
    lease: String,
    #[serde(default)]
    delay: String,
}

/// The agent's fault document from the game day form (the agent validates it again and names bad fields).
pub fn fault_document(form: &FaultForm) -> Result<Value, AppError> {
    if !(0.0..=100.0).contains(&form.rate) {
        return Err(AppError::BadRequest("rate: expected 0–100 %".into()));
    }
    let mut fault = Map::new();
    fault.insert("kind".into(), Value::String(form.kind.clone()));
    fault.insert("rate".into(), serde_json::json!(form.rate / 100.0));
    fault.insert("lease".into(), Value::String(form.lease.trim().to_owned()));
    match form.kind.as_str() {
        "error" => {
            let status: u16 = form
                .status
                .trim()
                .parse()
                .map_err(|_| AppError::BadRequest("status: expected an HTTP status".into()))?;
            fault.insert("status".into(), serde_json::json!(status));
        }
        "delay" => {
            fault.insert("delay".into(), Value::String(form.delay.trim().to_owned()));
        }
        "hang" | "reset" => {}
        other => {
            return Err(AppError::BadRequest(format!(
                "kind: `{other}` is not one of error, hang, delay, reset"
            )));
        }
    }
    Ok(Value::Object(fault))
}

/// The fault id the game day page uses.
pub const GAME_DAY_FAULT_ID: &str = "gameday";

pub async fn set_fault(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<FaultForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    let fault = fault_document(&form)?;
    state
        .operations
        .set_fault(FaultRequest {
            id: GAME_DAY_FAULT_ID.into(),
            target: form.target.clone(),
            fault,
        })
        .await?;
    Ok(Redirect::to("/gameday").into_response())
}

#[derive(Debug, Deserialize)]
pub struct ClearFaultForm {
    #[serde(default)]
    csrf: String,
    target: String,
}

pub async fn clear_fault(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<ClearFaultForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    state
        .operations
        .clear_fault(form.target, GAME_DAY_FAULT_ID.into())
        .await?;
    Ok(Redirect::to("/gameday").into_response())
}

#[derive(Debug, Deserialize)]
pub struct BreakerForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    service: String,
    mode: String,
}

pub async fn set_breaker_mode(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<BreakerForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    check_mode(&form.mode)?;
    let service = Some(form.service).filter(|service| !service.is_empty() && service != "all");
    state
        .operations
        .set_breaker_mode(service, form.mode)
        .await?;
    Ok(Redirect::to("/gameday").into_response())
}

#[derive(Debug, Deserialize)]
pub struct AnnotateForm {
    #[serde(default)]
    csrf: String,
    text: String,
    #[serde(default)]
    author: Option<String>,
    next: Option<String>,
}

pub async fn annotate(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<AnnotateForm>,
) -> Result<Response, AppError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    store_annotation(&state, form.text, form.author, None).await?;
    Ok(Redirect::to(&local_path(form.next)).into_response())
}
