//! The API scripts drive a game day with (the Chaos Toolkit extension in `integrations/chaostoolkit/`, CI
//! jobs): every breaker's state and counters now, the running experiment's load workers, the faults the agent
//! holds now, the game day's load on and off, a stored run's figures and a stored experiment's `[[validate]]`
//! verdict. Reads are open; the load switch needs [`Acting`].

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};

use controller::stats::CriterionResult;

use crate::api::Acting;
use crate::error::AppError;
use crate::hub::BreakerTile;
use crate::operations::{AgentFaults, LoadRequest, RunFigures};
use crate::state::AppState;

/// `GET /api/breakers`: the breaker board as the dashboard's sampler last read it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakersAnswer {
    /// When the board was read, Unix ms; `None` before the first read.
    pub at_ms: Option<u64>,
    pub breakers: Vec<BreakerTile>,
}

/// `GET /api/breakers`: every breaker's state, mode, counters and last-10-seconds window.
pub async fn breakers(State(state): State<AppState>) -> Json<BreakersAnswer> {
    let board = state.hub.board();
    Json(BreakersAnswer {
        at_ms: board.as_ref().map(|board| board.at_ms),
        breakers: board.map(|board| board.breakers).unwrap_or_default(),
    })
}

/// `GET /api/workers`: where the running (or last) experiment's virtual users run, as the live page's panel
/// was last published (once a second while it runs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkersAnswer {
    /// When the panel was published, Unix ms; `None`: no experiment has run since the dashboard started.
    pub at_ms: Option<u64>,
    pub experiment_id: Option<i64>,
    /// `workers` (its `[load] workers`), `in-process` (in the dashboard's process) or `none` (nothing ran).
    pub load: &'static str,
    /// The pool's URL, wanted and connected counts and every worker (lost ones with `lost_from_second`).
    pub pool: Option<controller::workers::WorkersView>,
}

/// `GET /api/workers`: see [`WorkersAnswer`].
pub async fn workers(State(state): State<AppState>) -> Json<WorkersAnswer> {
    let panel = state.hub.workers();
    Json(WorkersAnswer {
        at_ms: panel.as_ref().map(|panel| panel.at_ms),
        experiment_id: panel.as_ref().map(|panel| panel.experiment_id),
        load: match &panel {
            None => "none",
            Some(panel) if panel.pool.is_none() => "in-process",
            Some(_) => "workers",
        },
        pool: panel.and_then(|panel| panel.pool),
    })
}

/// `GET /api/faults`: the faults the agent holds now, asked of the agent.
pub async fn faults(State(state): State<AppState>) -> Result<Json<AgentFaults>, AppError> {
    Ok(Json(state.operations.faults().await?))
}

/// Body of `PUT /api/load`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadBody {
    users: u64,
    think_min_ms: u64,
    think_max_ms: u64,
}

/// `PUT /api/load` and `DELETE /api/load`: the game day's load now (`null` once stopped).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadAnswer {
    pub load: Option<LoadRequest>,
}

/// `PUT /api/load`, body `{"users": 20, "think_min_ms": 100, "think_max_ms": 500}`: starts (or replaces) the
/// game day's load on the Online Boutique mix; refused (409) while an experiment runs.
pub async fn start_load(
    State(state): State<AppState>,
    _: Acting,
    body: String,
) -> Result<Json<LoadAnswer>, AppError> {
    let body: LoadBody = serde_json::from_str(&body)
        .map_err(|error| AppError::BadRequest(format!("body: {error}")))?;
    let users = u32::try_from(body.users).unwrap_or(u32::MAX);
    let request = LoadRequest::checked(users, body.think_min_ms, body.think_max_ms)?;
    state.operations.set_load(Some(request)).await?;
    Ok(Json(LoadAnswer {
        load: Some(request),
    }))
}

/// `DELETE /api/load`: stops the game day's load (nothing to stop is fine).
pub async fn stop_load(
    State(state): State<AppState>,
    _: Acting,
) -> Result<Json<LoadAnswer>, AppError> {
    state.operations.set_load(None).await?;
    Ok(Json(LoadAnswer { load: None }))
}

/// `GET /api/experiments/{id}/runs/{run}/figures`: one finished run's figures (a run's id is in the results'
/// `runs`); 404 naming `run` when the experiment has no such finished run.
pub async fn run_figures(
    State(state): State<AppState>,
    Path((id, run)): Path<(i64, i64)>,
) -> Result<Json<RunFigures>, AppError> {
    state
        .operations
        .run_figures(id, run)
        .await?
        .map(Json)
        .ok_or_else(|| {
            AppError::NotFound(format!("run: experiment {id} has no finished run {run}"))
        })
}

/// `GET /api/experiments/{id}/validate`: the release gate's verdict on a stored experiment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateAnswer {
    pub experiment_id: i64,
    /// Every criterion passed (what `tolerant validate` exits 0 for).
    pub passed: bool,
    pub results: Vec<CriterionResult>,
}

/// `GET /api/experiments/{id}/validate`: experiment `id`'s `[[validate]]` criteria judged on its stored 95 %
/// intervals; 409 when its spec has none.
pub async fn validate(
    State(state): State<AppState>,
    Path(id): Path<i64>,
) -> Result<Json<GateAnswer>, AppError> {
    let report = state.operations.validate(id).await?;
    Ok(Json(GateAnswer {
        experiment_id: id,
        passed: report.passed(),
        results: report.results,
    }))
}
