//! The game day page and its posts: halt, fault (on the agent, or on a container of the compose project when
//! the dashboard reaches its engine), breaker mode, annotation and the background load.

use std::time::Duration;

use agent::api::{ErrorStatus, FaultKind, FaultSpec, MatchRule};
use askama::Template;
use axum::extract::State;
use axum::response::Response;
use http::HeaderMap;
use serde::Deserialize;

use super::login::local_path;
use super::posted::Posted;
use super::viewer::Viewer;
use super::{AnnotationLine, page, redirect_with_notice, redirect_with_problem, render};
use crate::api::{mode_request, parse_mode, parse_service, store_annotation};
use crate::container_fault::{ContainerFaultForm, container_fault_of_form};
use crate::error::{AppError, PageError};
use crate::hub::FaultChange;
use crate::operations::{ContainerLine, FaultRequest, LoadRequest, ModeRequest};
use crate::state::AppState;
use controller::target::ServiceId;

page!(GameDayPage);

#[derive(Template)]
#[template(path = "gameday.html")]
struct GameDayPage {
    viewer: Viewer,
    page: &'static str,
    services: Vec<ServiceId>,
    modes: [&'static str; 4],
    /// The latest stored annotations, newest first.
    annotations: Vec<AnnotationLine>,
    /// The compose project's containers (empty without an engine, see `containers_note`).
    containers: Vec<ContainerLine>,
    /// Why container faults are not offered, when they are not.
    containers_note: String,
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
    let (containers, containers_note) = match state.operations.containers().await {
        Ok(Some(containers)) => (containers, String::new()),
        Ok(None) => (
            Vec::new(),
            "The dashboard reaches no Docker Engine: container faults need a compose stack (TOLERANT_COMPOSE)."
                .to_owned(),
        ),
        Err(error) => (Vec::new(), format!("The Docker Engine did not answer: {error}")),
    };
    render(&GameDayPage {
        containers,
        containers_note,
        viewer: Viewer::of(&state, &headers),
        page: "gameday",
        services: state.operations.services(),
        modes: breaker::Mode::ALL.map(breaker::Mode::as_str),
        annotations,
    })
}

/// A game-day action's answer: what it did, or why not said on the game day page itself (a bad field, no
/// fault to remove, an agent that refused), not on an error page. A refused login or CSRF check is not an
/// action's answer and stays what it is.
fn on_game_day(done: Result<Response, PageError>) -> Result<Response, PageError> {
    match done {
        Err(PageError(error)) if !matches!(error, AppError::Auth(_)) => Ok(redirect_with_problem(
            "/gameday",
            &format!("Not done: {error}"),
        )),
        other => other,
    }
}

#[derive(Debug, Deserialize)]
pub struct HaltForm {
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
    Posted(form): Posted<HaltForm>,
) -> Result<Response, PageError> {
    on_game_day(halt_now(state, form).await)
}

async fn halt_now(state: AppState, form: HaltForm) -> Result<Response, PageError> {
    let active: Vec<String> = state
        .hub
        .active_faults()
        .iter()
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
    // One statement of where the breakers are: their startup config, and enforce when asked.
    if form.enforce.is_some() {
        state
            .operations
            .set_breaker_mode(ModeRequest::every(None, breaker::Mode::Enforce))
            .await?;
        notice.push_str(" Every breaker is back to enforce, on its service's startup config.");
    } else {
        notice.push_str(" Every breaker is back to its service's startup config and mode.");
    }
    Ok(redirect_with_notice("/gameday", &notice))
}

#[derive(Debug, Deserialize)]
pub struct FaultForm {
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
                .map_err(|_| AppError::BadRequest("status: expected an HTTP status".into()))
                .and_then(|status| {
                    ErrorStatus::new(status)
                        .map_err(|error| AppError::BadRequest(error.to_string()))
                })?,
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
    FaultSpec::try_new(
        kind,
        form.rate / 100.0,
        MatchRule::default(),
        Some(duration("lease", &form.lease)?),
    )
    .map_err(|error| AppError::BadRequest(error.to_string()))
}

/// The fault id the game day page uses.
pub const GAME_DAY_FAULT_ID: &str = "gameday";

pub async fn set_fault(
    State(state): State<AppState>,
    Posted(form): Posted<FaultForm>,
) -> Result<Response, PageError> {
    on_game_day(set_fault_now(state, form).await)
}

async fn set_fault_now(state: AppState, form: FaultForm) -> Result<Response, PageError> {
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
            target: parse_service("target", &form.target)?,
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
    target: String,
}

pub async fn clear_fault(
    State(state): State<AppState>,
    Posted(form): Posted<ClearFaultForm>,
) -> Result<Response, PageError> {
    on_game_day(clear_fault_now(state, form).await)
}

async fn clear_fault_now(state: AppState, form: ClearFaultForm) -> Result<Response, PageError> {
    state
        .operations
        .clear_fault(
            parse_service("target", &form.target)?,
            GAME_DAY_FAULT_ID.into(),
        )
        .await?;
    Ok(redirect_with_notice(
        "/gameday",
        &format!("Removed fault {GAME_DAY_FAULT_ID} from {}.", form.target),
    ))
}

#[derive(Debug, Deserialize)]
pub struct BreakerForm {
    #[serde(default)]
    service: String,
    /// One breaker of `service` (a tile's switch); empty: every breaker of it.
    #[serde(default)]
    breaker: String,
    mode: String,
}

pub async fn set_breaker_mode(
    State(state): State<AppState>,
    Posted(form): Posted<BreakerForm>,
) -> Result<Response, PageError> {
    on_game_day(set_breaker_mode_now(state, form).await)
}

async fn set_breaker_mode_now(state: AppState, form: BreakerForm) -> Result<Response, PageError> {
    let mode = parse_mode(&form.mode)?;
    let service = Some(form.service).filter(|service| service != "all");
    let request = mode_request(service, Some(form.breaker), mode)?;
    let which = match (&request.service, &request.breaker) {
        (Some(service), Some(breaker)) => format!("Breaker {breaker} of {service}"),
        (Some(service), None) => format!("Every breaker of {service}"),
        (None, _) => "Every breaker of every service".to_owned(),
    };
    let lease = state.operations.mode_lease();
    state.operations.set_breaker_mode(request).await?;
    Ok(redirect_with_notice(
        "/gameday",
        &format!(
            "{which} is now {}, its config kept, under a {} lease renewed while the dashboard runs \
             (a halt or an experiment's start ends it).",
            mode.as_str(),
            agent::api::format_duration(lease)
        ),
    ))
}

#[derive(Debug, Deserialize)]
pub struct AnnotateForm {
    text: String,
    #[serde(default)]
    author: Option<String>,
    next: Option<String>,
}

pub async fn annotate(
    State(state): State<AppState>,
    Posted(form): Posted<AnnotateForm>,
) -> Result<Response, PageError> {
    store_annotation(&state, form.text, form.author, None).await?;
    Ok(redirect_with_notice(
        &local_path(form.next),
        "Annotation added to the timeline.",
    ))
}

#[derive(Debug, Deserialize)]
pub struct LoadForm {
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
    Posted(form): Posted<LoadForm>,
) -> Result<Response, PageError> {
    on_game_day(set_load_now(state, form).await)
}

async fn set_load_now(state: AppState, form: LoadForm) -> Result<Response, PageError> {
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

/// `POST /ui/container-fault`.
pub async fn set_container_fault(
    State(state): State<AppState>,
    Posted(form): Posted<ContainerFaultForm>,
) -> Result<Response, PageError> {
    on_game_day(set_container_fault_now(state, form).await)
}

async fn set_container_fault_now(
    state: AppState,
    form: ContainerFaultForm,
) -> Result<Response, PageError> {
    let request = container_fault_of_form(&form)?;
    let what = match request.action.detail() {
        detail if detail.is_empty() => request.action.name().to_owned(),
        detail => format!("{} ({detail})", request.action.name()),
    };
    let replica = request.replica.clone();
    let id = state.operations.set_container_fault(request).await?;
    Ok(redirect_with_notice(
        "/gameday",
        &format!(
            "Applied container fault container-{id} on {replica}: {what}, lease {} (undone then, or on undo or halt).",
            form.lease.trim()
        ),
    ))
}

#[derive(Debug, Deserialize)]
pub struct ClearContainerFaultForm {
    id: i64,
}

/// `POST /ui/container-fault/clear`.
pub async fn clear_container_fault(
    State(state): State<AppState>,
    Posted(form): Posted<ClearContainerFaultForm>,
) -> Result<Response, PageError> {
    on_game_day(clear_container_fault_now(state, form).await)
}

async fn clear_container_fault_now(
    state: AppState,
    form: ClearContainerFaultForm,
) -> Result<Response, PageError> {
    state.operations.clear_container_fault(form.id).await?;
    Ok(redirect_with_notice(
        "/gameday",
        &format!("Undid container fault container-{}.", form.id),
    ))
}
