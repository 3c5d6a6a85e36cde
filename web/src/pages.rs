//! The HTML pages (askama templates in `web/templates/`) and the form posts they make. Forms carry the
//! session's CSRF token in a hidden `csrf` field; a refused post answers 401/403 like the API.

use std::time::Duration;

use agent::api::{FaultKind, FaultSpec, MatchRule};
use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use http::HeaderMap;
use http::header::SET_COOKIE;
use serde::Deserialize;
use serde_json::Value;

use crate::api::{parse_at, parse_mode, store_annotation};
use crate::app::AppState;
use crate::auth::{Auth, AuthError};
use crate::error::{AppError, PageError};
use crate::hub::FaultChange;
use crate::operations::{
    AnnotationEntry, ExperimentSummary, FaultRequest, LoadRequest, OperationError, Results,
};

/// What every page's layout needs.
#[derive(Debug, Clone)]
pub struct Viewer {
    pub logged_in: bool,
    /// The session's CSRF token (empty when not logged in).
    pub csrf: String,
    /// The shop the header links to (empty: no link).
    pub shop_url: String,
    /// What the last action did, or why not (shown once, under the header).
    pub notice: Option<String>,
}

impl Viewer {
    fn of(state: &AppState, headers: &HeaderMap) -> Viewer {
        let shop_url = state.shop_url.clone().unwrap_or_default();
        match state.auth.session(headers) {
            Some(session) => Viewer {
                logged_in: true,
                csrf: session.csrf,
                shop_url,
                notice: take_notice(headers),
            },
            None => Viewer {
                shop_url,
                notice: take_notice(headers),
                ..Viewer::anonymous()
            },
        }
    }

    /// Nobody logged in, no shop link (the error page, which knows no state).
    pub fn anonymous() -> Viewer {
        Viewer {
            logged_in: false,
            csrf: String::new(),
            shop_url: String::new(),
            notice: None,
        }
    }
}

/// A page that has a viewer (every page extends `base.html`).
trait Page: Template {
    fn viewer(&self) -> &Viewer;
}

macro_rules! page {
    ($($page:ty),*) => {$(impl Page for $page { fn viewer(&self) -> &Viewer { &self.viewer } })*};
}

page!(
    ExperimentsPage,
    LivePage,
    ResultsPage,
    GameDayPage,
    LoginPage
);

/// Renders a page; a notice it shows is cleared so it shows once.
fn render(page: &impl Page) -> Result<Response, PageError> {
    let html = Html(page.render().map_err(AppError::from)?).into_response();
    Ok(with_notice_cleared(html, page.viewer().notice.is_some()))
}

/// The cookie carrying a one-time notice to the next page (`Path=/`, gone after 60 s or once shown).
const NOTICE_COOKIE: &str = "tolerant_notice";

/// A redirect to `to` that leaves `notice` for that page to show once (what the action did, or why not).
fn redirect_with_notice(to: &str, notice: &str) -> Response {
    let hex: String = notice
        .bytes()
        .take(600)
        .map(|byte| format!("{byte:02x}"))
        .collect();
    (
        [(
            SET_COOKIE,
            format!("{NOTICE_COOKIE}={hex}; Path=/; Max-Age=60; HttpOnly; SameSite=Strict"),
        )],
        Redirect::to(to),
    )
        .into_response()
}

/// The notice a redirect left, if any (and valid UTF-8).
fn take_notice(headers: &HeaderMap) -> Option<String> {
    let hex = headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .find_map(|pair| pair.trim().strip_prefix(&format!("{NOTICE_COOKIE}=")))?
        .to_owned();
    if hex.is_empty() || hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

/// A page response that also clears the notice it showed.
fn with_notice_cleared(response: Response, had_notice: bool) -> Response {
    if !had_notice {
        return response;
    }
    (
        [(
            SET_COOKIE,
            format!("{NOTICE_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict"),
        )],
        response,
    )
        .into_response()
}

/// Any path the dashboard does not serve: the error page, not an empty answer.
pub async fn not_found() -> PageError {
    PageError(AppError::NotFound("no such page".into()))
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

/// One predicted metric of one condition beside its measurement, as the results page shows it.
struct PredictionLine {
    condition: String,
    metric: &'static str,
    predicted: String,
    measured: String,
    /// `within`, `outside` or empty (not measured yet).
    verdict: &'static str,
    reason: String,
}

impl PredictionLine {
    fn of(predicted: &controller::stats::PredictedCondition) -> Vec<PredictionLine> {
        let p = &predicted.prediction;
        let mut lines: Vec<PredictionLine> = p
            .bands()
            .into_iter()
            .map(|(metric, band)| {
                let check = predicted.checks.iter().find(|c| c.metric == metric);
                PredictionLine {
                    condition: predicted.label.clone(),
                    metric: metric.as_str(),
                    predicted: format!(
                        "{} [{}, {}]",
                        number(band.mean),
                        number(band.low),
                        number(band.high)
                    ),
                    measured: check.map_or_else(
                        || "not measured yet".to_owned(),
                        |c| match c.measured.half_width {
                            Some(half) => format!("{} ± {}", number(c.measured.mean), number(half)),
                            None => format!("{} (n = 1)", number(c.measured.mean)),
                        },
                    ),
                    verdict: match check.map(|c| c.flag) {
                        Some(Some(_)) => "outside",
                        Some(None) => "within",
                        None => "",
                    },
                    reason: check.and_then(|c| c.flag).unwrap_or_default().to_owned(),
                }
            })
            .collect();
        if let Some(bound) = p.opens_bound {
            lines.push(PredictionLine {
                condition: predicted.label.clone(),
                metric: "opens bound",
                predicted: match p.opens_estimate {
                    Some(estimate) => format!("≤ {bound} (estimate ≈ {})", number(estimate)),
                    None => format!("≤ {bound}"),
                },
                measured: String::new(),
                verdict: "",
                reason: String::new(),
            });
        }
        lines
    }
}

#[derive(Template)]
#[template(path = "results.html")]
struct ResultsPage {
    viewer: Viewer,
    page: &'static str,
    results: Results,
    rows: Vec<(String, usize, Vec<CellText>)>,
    /// Fault, metric, difference, verdict, and its class for the user: `better`, `worse` or `unclear`.
    verdicts: Vec<(String, String, String, String, &'static str)>,
    /// The curated summary shown before the full table.
    summary: crate::results_summary::Summary,
    predictions: Vec<PredictionLine>,
    annotations: Vec<AnnotationLine>,
    /// Finished runs but no condition with the two a confidence interval needs.
    one_round: bool,
    intervals_note: &'static str,
}

pub async fn results(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
) -> Result<Response, PageError> {
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
                crate::results_summary::verdict_class(
                    &verdict.metric,
                    verdict.difference,
                    verdict.intervals_separate,
                ),
            )
        })
        .collect();
    let annotations = results.annotations.iter().map(AnnotationLine::of).collect();
    let predictions = results
        .predictions
        .iter()
        .flat_map(PredictionLine::of)
        .collect();
    render(&ResultsPage {
        viewer: Viewer::of(&state, &headers),
        page: "results",
        one_round: !results.conditions.is_empty()
            && results
                .conditions
                .iter()
                .all(|condition| condition.runs < controller::stats::MIN_ROUNDS_FOR_INTERVALS),
        intervals_note: controller::stats::INTERVALS_NEED_TWO_ROUNDS,
        summary: crate::results_summary::Summary::of(&results),
        results,
        rows,
        verdicts,
        predictions,
        annotations,
    })
}

#[derive(Template)]
#[template(path = "gameday.html")]
struct GameDayPage {
    viewer: Viewer,
    page: &'static str,
    services: Vec<String>,
    modes: [&'static str; 4],
    /// The latest stored annotations, newest first.
    annotations: Vec<AnnotationLine>,
}

/// Stored annotations the game day page lists.
const GAME_DAY_ANNOTATIONS: usize = 20;

pub async fn gameday(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
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
        modes: breaker::Mode::ALL.map(breaker::Mode::as_str),
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
fn local_path(next: Option<String>) -> String {
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
    Form(form): Form<LoginForm>,
) -> Result<Response, PageError> {
    let next = local_path(form.next);
    let status = match state.auth.login(form.token.trim()) {
        Ok(session) => {
            return Ok((
                [(SET_COOKIE, Auth::session_cookie(&session))],
                Redirect::to(&next),
            )
                .into_response());
        }
        Err(AuthError::Throttled { .. }) => http::StatusCode::TOO_MANY_REQUESTS,
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
    Ok((status, Html(html)).into_response())
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
) -> Result<Response, PageError> {
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
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
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
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    let at = parse_at(&Value::String(form.at))?;
    state.operations.start(id, at).await?;
    Ok(match at {
        Some(at) if at > crate::api::now_ms() as i64 => redirect_with_notice(
            "/experiments",
            &format!("Experiment {id} is scheduled for {}.", format_ms(at)),
        ),
        _ => redirect_with_notice("/live", &format!("Started experiment {id}.")),
    })
}

pub async fn abort_experiment(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Form(form): Form<CsrfForm>,
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    state.operations.abort(id).await?;
    Ok(redirect_with_notice(
        "/experiments",
        &format!(
            "Aborted experiment {id}: its unfinished run is discarded and every fault cleared."
        ),
    ))
}

#[derive(Debug, Deserialize)]
pub struct HaltForm {
    #[serde(default)]
    csrf: String,
    /// `on` when the operator also wants every breaker back to `enforce` (config kept).
    #[serde(default)]
    enforce: Option<String>,
}

/// `50`, `12.5`: a percentage as people write it.
fn percent(value: f64) -> String {
    let rounded = (value * 10.0).round() / 10.0;
    if rounded.fract() == 0.0 {
        format!("{rounded:.0}")
    } else {
        format!("{rounded:.1}")
    }
}

/// `gameday (error at 100 % on payment)`.
fn describe_fault(fault: &FaultChange) -> String {
    let kind = if fault.kind.is_empty() {
        "fault"
    } else {
        fault.kind.as_str()
    };
    format!(
        "{} ({kind} at {} % on {})",
        fault.fault_id,
        percent(fault.rate * 100.0),
        fault.target
    )
}

pub async fn halt(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<HaltForm>,
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    let active: Vec<String> = state
        .hub
        .state()
        .active_faults
        .values()
        .map(describe_fault)
        .collect();
    state.operations.halt().await?;
    let mut notice = if active.is_empty() {
        "Halted: no fault was active; the agents hold none now.".to_owned()
    } else {
        format!(
            "Halted: cleared {} fault{}: {}.",
            active.len(),
            if active.len() == 1 { "" } else { "s" },
            active.join(", ")
        )
    };
    if form.enforce.is_some() {
        state
            .operations
            .set_breaker_mode(None, breaker::Mode::Enforce)
            .await?;
        notice.push_str(" Every breaker is back to enforce, its config kept.");
    }
    Ok(redirect_with_notice("/gameday", &notice))
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

/// The fault the game day form describes, checked by the agent's rules (errors name the form's field).
pub fn fault_of_form(form: &FaultForm) -> Result<FaultSpec, AppError> {
    if !(0.0..=100.0).contains(&form.rate) {
        return Err(AppError::BadRequest("rate: expected 0–100 %".into()));
    }
    let duration = |field: &str, text: &str| {
        agent::api::parse_duration(text)
            .map_err(|error| AppError::BadRequest(format!("{field}: {error}")))
    };
    let kind = match form.kind.as_str() {
        "error" => FaultKind::Error {
            status: form
                .status
                .trim()
                .parse()
                .map_err(|_| AppError::BadRequest("status: expected an HTTP status".into()))?,
            body: None,
        },
        "delay" => FaultKind::Delay {
            delay: duration("delay", &form.delay)?,
            jitter: Duration::ZERO,
        },
        "hang" => FaultKind::Hang,
        "reset" => FaultKind::Reset,
        other => {
            return Err(AppError::BadRequest(format!(
                "kind: `{other}` is not one of error, hang, delay, reset"
            )));
        }
    };
    FaultSpec {
        kind,
        rate: form.rate / 100.0,
        matcher: MatchRule::default(),
        lease: Some(duration("lease", &form.lease)?),
    }
    .validated()
    .map_err(|error| AppError::BadRequest(error.to_string()))
}

/// The fault id the game day page uses.
pub const GAME_DAY_FAULT_ID: &str = "gameday";

pub async fn set_fault(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<FaultForm>,
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    let fault = fault_of_form(&form)?;
    let what = match form.kind.as_str() {
        "error" => format!("error {}", form.status.trim()),
        "delay" => format!("delay {}", form.delay.trim()),
        other => other.to_owned(),
    };
    state
        .operations
        .set_fault(FaultRequest {
            id: GAME_DAY_FAULT_ID.into(),
            target: form.target.clone(),
            fault,
        })
        .await?;
    Ok(redirect_with_notice(
        "/gameday",
        &format!(
            "Applied fault {GAME_DAY_FAULT_ID} on {}: {what} at {} %, lease {} (it expires then unless applied again).",
            form.target,
            percent(form.rate),
            form.lease.trim()
        ),
    ))
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
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    state
        .operations
        .clear_fault(form.target.clone(), GAME_DAY_FAULT_ID.into())
        .await?;
    Ok(redirect_with_notice(
        "/gameday",
        &format!("Removed fault {GAME_DAY_FAULT_ID} from {}.", form.target),
    ))
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
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    let mode = parse_mode(&form.mode)?;
    let service = Some(form.service).filter(|service| !service.is_empty() && service != "all");
    let which = match &service {
        Some(service) => format!("Every breaker of {service}"),
        None => "Every breaker of every service".to_owned(),
    };
    state.operations.set_breaker_mode(service, mode).await?;
    Ok(redirect_with_notice(
        "/gameday",
        &format!("{which} is now {}, its config kept.", mode.as_str()),
    ))
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
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    store_annotation(&state, form.text, form.author, None).await?;
    Ok(redirect_with_notice(
        &local_path(form.next),
        "Annotation added to the timeline.",
    ))
}

#[derive(Debug, Deserialize)]
pub struct LoadForm {
    #[serde(default)]
    csrf: String,
    /// `start` (or replace) or `stop`.
    action: String,
    #[serde(default)]
    users: String,
    #[serde(default)]
    think_min_ms: String,
    #[serde(default)]
    think_max_ms: String,
}

/// A whole number from a form field; the error names the field.
fn form_number(field: &str, text: &str) -> Result<u64, AppError> {
    text.trim().parse().map_err(|_| {
        AppError::BadRequest(format!("{field}: expected a whole number, got `{text}`"))
    })
}

/// `POST /ui/load`: the game day's background load on or off.
pub async fn set_load(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<LoadForm>,
) -> Result<Response, PageError> {
    state.auth.authorize(&headers, Some(&form.csrf))?;
    match form.action.as_str() {
        "stop" => {
            state.operations.set_load(None).await?;
            Ok(redirect_with_notice("/gameday", "Load stopped."))
        }
        "start" => {
            let users = form_number("users", &form.users)?;
            let users = u32::try_from(users).unwrap_or(u32::MAX);
            let request = LoadRequest::checked(
                users,
                form_number("think_min_ms", &form.think_min_ms)?,
                form_number("think_max_ms", &form.think_max_ms)?,
            )?;
            state.operations.set_load(Some(request)).await?;
            Ok(redirect_with_notice(
                "/gameday",
                &format!(
                    "Load on: {} virtual users on the Online Boutique mix, thinking {}–{} ms between tasks, until stopped (at most 2 h).",
                    request.users, request.think_min_ms, request.think_max_ms
                ),
            ))
        }
        other => {
            Err(AppError::BadRequest(format!("action: `{other}` is not start or stop")).into())
        }
    }
}
