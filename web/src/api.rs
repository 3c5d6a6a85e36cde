//! The controller HTTP API (docs/wire.md), served with the dashboard. Reads are open; every mutation needs the
//! bearer token or the login cookie with its CSRF header.

use axum::Json;
use axum::extract::{FromRequestParts, Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use http::request::Parts;
use serde::Deserialize;
use serde_json::Value;

use std::sync::Arc;

use agent::api::FaultSpec;
use axum::extract::FromRef;
use controller::clock::now_ms;
use controller::report::Format;
use controller::sources::{PushError, PushInbox};
use controller::target::ServiceId;

pub mod answers;
mod breaker_mode;

pub use breaker_mode::{BreakerModeBody, set_breaker_mode};
pub(crate) use breaker_mode::{mode_request, parse_mode};

use answers::{
    AbortAnswer, BreakerEventsAnswer, ClearedAnswer, ContainerFaultAnswer, ContainersAnswer,
    ExperimentAnswer, HaltAnswer, IdAnswer, StartAnswer,
};

use crate::auth::Auth;
use crate::error::AppError;
use crate::hub::Hub;
use crate::hub::LiveEvent;
use crate::operations::{AnnotationEntry, AnnotationRequest, FaultRequest, MAX_ANNOTATIONS_LISTED};
use crate::state::AppState;

/// A request allowed to act: the bearer token, or the login cookie with its CSRF header. Every mutating handler
/// takes one; it is checked before the request's body is read, a wrong token counted against the client's
/// address (429 with `Retry-After` once over, [`serving::throttle`]).
#[derive(Debug)]
pub struct Acting;

impl<S: Send + Sync> FromRequestParts<S> for Acting
where
    Arc<Auth>: FromRef<S>,
{
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, AppError> {
        let client = serving::throttle::client_address(&parts.extensions);
        Arc::<Auth>::from_ref(state).authorize(&parts.headers, client, None)?;
        Ok(Acting)
    }
}

impl FromRef<AppState> for Arc<Auth> {
    fn from_ref(state: &AppState) -> Self {
        Arc::clone(&state.auth)
    }
}

impl FromRef<BreakerEventsState> for Arc<Auth> {
    fn from_ref(state: &BreakerEventsState) -> Self {
        Arc::clone(&state.auth)
    }
}

/// Annotations `GET /api/annotations` returns without an experiment or a `limit`.
pub const DEFAULT_ANNOTATIONS_LISTED: usize = 200;

/// A start time: Unix milliseconds, or an RFC 3339 timestamp (`2026-11-29T19:00:00Z`).
pub fn parse_at(value: &Value) -> Result<Option<i64>, AppError> {
    match value {
        Value::Null => Ok(None),
        Value::Number(number) => number
            .as_i64()
            .map(Some)
            .ok_or_else(|| AppError::BadRequest("at: expected Unix milliseconds".into())),
        Value::String(text) if text.trim().is_empty() => Ok(None),
        Value::String(text) => {
            if let Ok(ms) = text.trim().parse::<i64>() {
                return Ok(Some(ms));
            }
            let at = humantime::parse_rfc3339_weak(text.trim()).map_err(|error| {
                AppError::BadRequest(format!("at: expected an RFC 3339 time: {error}"))
            })?;
            let ms = at
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|_| AppError::BadRequest("at: before 1970".into()))?
                .as_millis();
            Ok(Some(ms as i64))
        }
        _ => Err(AppError::BadRequest(
            "at: expected Unix milliseconds or an RFC 3339 time".into(),
        )),
    }
}

pub async fn list_experiments(State(state): State<AppState>) -> Result<Response, AppError> {
    Ok(Json(state.operations.experiments().await?).into_response())
}

pub async fn experiment(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Response, AppError> {
    let list = state.operations.experiments().await?;
    let summary = list
        .into_iter()
        .find(|experiment| experiment.id == id)
        .ok_or(crate::operations::OperationError::NotFound(id))?;
    let spec = state.operations.spec(id).await?;
    Ok(Json(ExperimentAnswer {
        experiment: summary,
        spec,
    })
    .into_response())
}

/// `POST /api/experiments`, body: the TOML spec.
pub async fn create_experiment(
    State(state): State<AppState>,
    _: Acting,
    body: String,
) -> Result<Response, AppError> {
    let id = state.operations.create(body).await?;
    Ok((StatusCode::CREATED, Json(IdAnswer { id })).into_response())
}

#[derive(Debug, Deserialize)]
pub struct AtQuery {
    at: Option<String>,
}

/// `POST /api/experiments/{id}/start`, optional `at` in the query or a JSON body `{"at": …}`.
pub async fn start_experiment(
    State(state): State<AppState>,
    _: Acting,
    Path(id): Path<i64>,
    Query(query): Query<AtQuery>,
    body: String,
) -> Result<Response, AppError> {
    let mut at = match query.at {
        Some(text) => parse_at(&Value::String(text))?,
        None => None,
    };
    if !body.trim().is_empty() {
        let value: Value = serde_json::from_str(&body)
            .map_err(|error| AppError::BadRequest(format!("body: malformed JSON: {error}")))?;
        if let Some(from_body) = value.get("at") {
            at = parse_at(from_body)?;
        }
    }
    state.operations.start(id, at).await?;
    Ok(Json(StartAnswer { at, id }).into_response())
}

pub async fn abort_experiment(
    State(state): State<AppState>,
    _: Acting,
    Path(id): Path<i64>,
) -> Result<Response, AppError> {
    state.operations.abort(id).await?;
    Ok(Json(AbortAnswer { aborted: true, id }).into_response())
}

pub async fn results(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Response, AppError> {
    Ok(Json(state.operations.results(id).await?).into_response())
}

/// `GET /api/experiments/{id}/runs/{run}/timeline`: a stored run's timeline for the replay.
pub async fn run_timeline(
    State(state): State<AppState>,
    Path((id, run)): Path<(i64, i64)>,
) -> Result<Response, AppError> {
    let timeline = state
        .operations
        .run_timeline(id, run)
        .await?
        .ok_or_else(|| AppError::NotFound(format!("run: experiment {id} has no run {run}")))?;
    Ok(Json(timeline).into_response())
}

fn download(content_type: &'static str, file_name: String, body: String) -> Response {
    (
        [
            (CONTENT_TYPE, content_type.to_owned()),
            (
                CONTENT_DISPOSITION,
                format!("attachment; filename=\"{file_name}\""),
            ),
        ],
        body,
    )
        .into_response()
}

pub async fn results_csv(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Response, AppError> {
    let csv = state.operations.report(id, Format::Csv).await?;
    Ok(download(
        "text/csv; charset=utf-8",
        format!("experiment-{id}.csv"),
        csv,
    ))
}

pub async fn results_json(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Response, AppError> {
    let json = state.operations.report(id, Format::Json).await?;
    Ok(download(
        "application/json",
        format!("experiment-{id}.json"),
        json,
    ))
}

pub async fn halt(State(state): State<AppState>, _: Acting) -> Result<Response, AppError> {
    state.operations.halt().await?;
    Ok(Json(HaltAnswer { halted: true }).into_response())
}

/// Stores an annotation through the operations (which validates it and ties it to what is running), then
/// publishes it live.
pub(crate) async fn store_annotation(
    state: &AppState,
    text: String,
    author: Option<String>,
    experiment_id: Option<i64>,
) -> Result<AnnotationEntry, AppError> {
    let entry = state
        .operations
        .annotate(AnnotationRequest {
            at_ms: now_ms(),
            text,
            author,
            experiment_id,
        })
        .await?;
    state.hub.publish(LiveEvent::Annotation(entry.live()));
    Ok(entry)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnnotationBody {
    text: String,
    #[serde(default)]
    author: Option<String>,
    /// The experiment the note is about (the running one when absent).
    #[serde(default)]
    experiment: Option<i64>,
}

/// `POST /api/annotations`, body `{"text": …, "author"?: …, "experiment"?: id}`; answers the stored annotation.
pub async fn annotate(
    State(state): State<AppState>,
    _: Acting,
    body: String,
) -> Result<Response, AppError> {
    let body: AnnotationBody = serde_json::from_str(&body)
        .map_err(|error| AppError::BadRequest(format!("body: {error}")))?;
    let entry = store_annotation(&state, body.text, body.author, body.experiment).await?;
    Ok((StatusCode::CREATED, Json(entry)).into_response())
}

#[derive(Debug, Deserialize)]
pub struct AnnotationsQuery {
    experiment: Option<String>,
    limit: Option<String>,
}

/// `GET /api/annotations?experiment=ID` (that experiment's, oldest first) or `?limit=N` (the latest N of any,
/// oldest first; 200 unless given, at most 1,000).
pub async fn annotations(
    State(state): State<AppState>,
    Query(query): Query<AnnotationsQuery>,
) -> Result<Response, AppError> {
    let experiment = match query.experiment.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(text) => Some(text.parse::<i64>().map_err(|_| {
            AppError::BadRequest(format!("experiment: `{text}` is not an experiment id"))
        })?),
    };
    let limit = match query.limit.as_deref().map(str::trim) {
        None | Some("") => DEFAULT_ANNOTATIONS_LISTED,
        Some(text) => match text.parse::<usize>() {
            Ok(limit) if (1..=MAX_ANNOTATIONS_LISTED).contains(&limit) => limit,
            _ => {
                return Err(AppError::BadRequest(format!(
                    "limit: expected 1 to {MAX_ANNOTATIONS_LISTED}, got `{text}`"
                )));
            }
        },
    };
    let list = match experiment {
        Some(id) => state.operations.annotations(id).await?,
        None => state.operations.latest_annotations(limit).await?,
    };
    Ok(Json(list).into_response())
}

#[derive(Debug, Deserialize)]
pub struct TargetQuery {
    target: Option<String>,
}

/// `PUT /api/faults/{id}?target=payment`, body: the agent's fault document.
pub async fn set_fault(
    State(state): State<AppState>,
    _: Acting,
    Path(id): Path<String>,
    Query(query): Query<TargetQuery>,
    body: String,
) -> Result<Response, AppError> {
    check_fault_id(&id)?;
    let fault = FaultSpec::from_json_slice(body.as_bytes())
        .map_err(|error| AppError::BadRequest(error.to_string()))?;
    let target = fault_target(query)?;
    state
        .operations
        .set_fault(FaultRequest {
            id: id.clone(),
            target,
            fault,
        })
        .await?;
    Ok(Json(IdAnswer { id }).into_response())
}

/// The agent's own id rule, before anything is sent: the id (decoded from the path) must be one path segment
/// as it is, so the id reported is the id created (`x%3Fy` decodes to `x?y` and is refused).
fn check_fault_id(id: &str) -> Result<(), AppError> {
    agent::api::validate_fault_id(id).map_err(|error| AppError::BadRequest(error.to_string()))
}

pub async fn clear_fault(
    State(state): State<AppState>,
    _: Acting,
    Path(id): Path<String>,
    Query(query): Query<TargetQuery>,
) -> Result<Response, AppError> {
    check_fault_id(&id)?;
    let target = fault_target(query)?;
    state.operations.clear_fault(target, id.clone()).await?;
    Ok(Json(ClearedAnswer { cleared: true, id }).into_response())
}

/// `GET /api/containers`: the compose project's containers (`null` when the dashboard reaches no engine).
pub async fn containers(State(state): State<AppState>) -> Result<Response, AppError> {
    let containers = state.operations.containers().await?;
    Ok(Json(ContainersAnswer { containers }).into_response())
}

/// `POST /api/containers`, body: `{"container": "payment", "kind": "pause", "lease": "30s"}` (and `signal`,
/// `net_delay`, `loss` as the game-day form has them, as text): applies a container fault, returns its id.
pub async fn set_container_fault(
    State(state): State<AppState>,
    _: Acting,
    body: String,
) -> Result<Response, AppError> {
    let form: crate::container_fault::ContainerFaultForm = serde_json::from_str(&body)
        .map_err(|error| AppError::BadRequest(format!("body: {error}")))?;
    if form.csrf.is_some() {
        return Err(AppError::BadRequest(
            "body: unknown field `csrf` (the API takes the token in Authorization)".into(),
        ));
    }
    let request = crate::container_fault::container_fault_of_form(&form)?;
    let id = state.operations.set_container_fault(request).await?;
    Ok(Json(ContainerFaultAnswer {
        fault_id: format!("container-{id}"),
        id,
    })
    .into_response())
}

/// `DELETE /api/containers/faults/{id}`: undoes a container fault now.
pub async fn clear_container_fault(
    State(state): State<AppState>,
    _: Acting,
    Path(id): Path<i64>,
) -> Result<Response, AppError> {
    state.operations.clear_container_fault(id).await?;
    Ok(Json(ClearedAnswer { cleared: true, id }).into_response())
}

/// A service's name as given in `field`, checked by [`ServiceId`]; the error names the field and what is wrong.
pub(crate) fn parse_service(field: &str, name: &str) -> Result<ServiceId, AppError> {
    ServiceId::new(name).map_err(|error| AppError::BadRequest(format!("{field}: {error}")))
}

/// The service whose agent a fault of the API goes to: `?target=`, Payment's when not given.
fn fault_target(query: TargetQuery) -> Result<ServiceId, AppError> {
    match query.target {
        Some(target) => parse_service("target", &target),
        None => Ok(boutique::ServiceName::Payment.into()),
    }
}

/// What `POST /api/breaker-events` needs: the token check, the inbox, and the live hub when a dashboard runs.
#[derive(Clone)]
pub struct BreakerEventsState {
    pub auth: Arc<Auth>,
    pub inbox: PushInbox,
    pub hub: Option<Hub>,
}

impl FromRef<AppState> for BreakerEventsState {
    fn from_ref(state: &AppState) -> Self {
        BreakerEventsState {
            auth: Arc::clone(&state.auth),
            inbox: state.breaker_inbox.clone(),
            hub: Some(state.hub.clone()),
        }
    }
}

/// `POST /api/breaker-events`: state changes of breakers Tolerant did not write, pushed by their listener hooks
/// (one event object or an array; see `controller::sources::push`). Every transition goes on the live timeline
/// (when a dashboard runs) and into the run being recorded; answers how many were taken.
pub async fn breaker_events(
    State(state): State<BreakerEventsState>,
    _: Acting,
    body: String,
) -> Result<Response, AppError> {
    // Pushed times are checked against the controller's clock (never before the epoch).
    let now = u64::try_from(now_ms()).unwrap_or(0);
    let ingested = state
        .inbox
        .ingest(&body, now)
        .map_err(|error| match error {
            PushError::RateLimited => AppError::TooMany(error.to_string()),
            PushError::Invalid { .. } => AppError::BadRequest(error.to_string()),
        })?;
    if let Some(hub) = &state.hub {
        for event in &ingested.events {
            hub.publish(LiveEvent::Transition(event.clone()));
        }
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(BreakerEventsAnswer {
            accepted: ingested.events.len(),
            unchanged: ingested.unchanged,
        }),
    )
        .into_response())
}
