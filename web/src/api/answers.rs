//! The JSON answers of the controller HTTP API, one type each (the lists and records it returns as they are —
//! experiments, results, annotations — are their own types already). Fields are in alphabetical order: the
//! order the answers had when they were written as `json!` maps, so the wire text is unchanged.

use serde::Serialize;

use crate::operations::{ContainerLine, ExperimentSummary};

/// `GET /api/experiments/{id}`: the experiment as listed and its spec text.
#[derive(Debug, Serialize)]
pub struct ExperimentAnswer {
    pub experiment: ExperimentSummary,
    pub spec: String,
}

/// `POST /api/experiments` (201) and `PUT /api/faults/{id}`: the id of what was made or set.
#[derive(Debug, Serialize)]
pub struct IdAnswer<Id> {
    pub id: Id,
}

/// `POST /api/experiments/{id}/start`: the experiment and when it starts (`null`: now).
#[derive(Debug, Serialize)]
pub struct StartAnswer {
    pub at: Option<i64>,
    pub id: i64,
}

/// `POST /api/experiments/{id}/abort`.
#[derive(Debug, Serialize)]
pub struct AbortAnswer {
    pub aborted: bool,
    pub id: i64,
}

/// `POST /api/halt`.
#[derive(Debug, Serialize)]
pub struct HaltAnswer {
    pub halted: bool,
}

/// `DELETE /api/faults/{id}` (a fault id) and `DELETE /api/containers/faults/{id}` (a container fault's id).
#[derive(Debug, Serialize)]
pub struct ClearedAnswer<Id> {
    pub cleared: bool,
    pub id: Id,
}

/// `GET /api/containers`: the compose project's containers, `null` when the dashboard reaches no engine.
#[derive(Debug, Serialize)]
pub struct ContainersAnswer {
    pub containers: Option<Vec<ContainerLine>>,
}

/// `POST /api/containers`: the container fault's id and the id its events carry (`container-<id>`).
#[derive(Debug, Serialize)]
pub struct ContainerFaultAnswer {
    pub fault_id: String,
    pub id: i64,
}

/// `POST /api/breakers`: the mode the chosen breakers now run in.
#[derive(Debug, Serialize)]
pub struct BreakerModeAnswer {
    pub mode: breaker::Mode,
}

/// `POST /api/breaker-events` (202): how many pushed transitions were taken, and how many named the state the
/// breaker was already in.
#[derive(Debug, Serialize)]
pub struct BreakerEventsAnswer {
    pub accepted: usize,
    pub unchanged: usize,
}
