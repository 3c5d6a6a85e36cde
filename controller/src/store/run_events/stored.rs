//! A run event as its two stored texts: the detail object every earlier version wrote for each kind, and the
//! one shape each kind's detail is read back in (anything else is no event).

use agent::api::FaultSpec;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{
    AgentReport, BreakerHoldFailure, FaultCall, PutFault, ReplicaEvent, RunEvent, RunEventKind,
};
use crate::actions::{ContainerAction, PodAction};

impl RunEvent {
    /// The detail as stored: a JSON object (keys sorted when written as text).
    pub fn detail_json(&self) -> Value {
        let error_of = |error: &str| json!({ "error": error });
        match self {
            RunEvent::Fault(call) => match call {
                FaultCall::Applied(PutFault::Agent { fault, period }) => {
                    fault_with(fault, *period, None)
                }
                FaultCall::Applied(PutFault::Container { container, action }) => {
                    json!({ "container": container, "action": action })
                }
                FaultCall::Applied(PutFault::Pod {
                    pod,
                    replica,
                    action,
                }) => json!({ "pod": pod, "replica": replica, "action": action }),
                FaultCall::ApplyFailed {
                    fault,
                    period,
                    error,
                } => fault_with(fault, *period, Some(error)),
                FaultCall::Renewed => json!({}),
                FaultCall::RenewFailed { error } => error_of(error),
                FaultCall::Removed { period } => with_period(Map::new(), *period),
                FaultCall::RemoveFailed { period, error } => {
                    let mut object = Map::new();
                    object.insert("error".into(), Value::from(error.as_str()));
                    with_period(object, *period)
                }
            },
            RunEvent::Agent(AgentReport::Event(event)) => {
                serde_json::to_value(event).unwrap_or(Value::Null)
            }
            RunEvent::Agent(AgentReport::StreamUnavailable { error })
            | RunEvent::ContainerStatsFailed { error } => error_of(error),
            RunEvent::BreakerHold(
                BreakerHoldFailure::RenewFailed { service, error }
                | BreakerHoldFailure::RestoreFailed { service, error }
                | BreakerHoldFailure::JoinFailed { service, error },
            ) => json!({ "service": service, "error": error }),
            RunEvent::Replica(replica) => match replica {
                ReplicaEvent::Added(seen) => json!(seen),
                ReplicaEvent::Removed(gone) => json!(gone),
                ReplicaEvent::Replaced(replacement) => json!(replacement),
                ReplicaEvent::Followed(stream) => json!(stream),
                ReplicaEvent::FollowFailed(failed) => json!(failed),
            },
            RunEvent::ScrapeFailed { source, error } => {
                json!({ "source": source, "error": error })
            }
            RunEvent::TransitionsNotStored {
                service,
                breaker,
                source,
                count,
                why,
            } => json!({
                "service": service, "breaker": breaker, "source": source, "count": count, "why": why
            }),
            RunEvent::ProbeBuckets(read) => json!(read),
        }
    }

    /// The event stored as `kind` with the detail text `detail`, when the detail has the shape that kind is
    /// written with; `None` otherwise.
    pub fn from_stored(kind: RunEventKind, detail: &str) -> Option<RunEvent> {
        let object: Map<String, Value> = serde_json::from_str(detail).ok()?;
        Some(match kind {
            RunEventKind::Applied if object.contains_key("container") => {
                let ContainerPut { container, action } = shaped(object)?;
                RunEvent::Fault(FaultCall::Applied(PutFault::Container {
                    container,
                    action,
                }))
            }
            RunEventKind::Applied if object.contains_key("pod") => {
                let PodPut {
                    pod,
                    replica,
                    action,
                } = shaped(object)?;
                RunEvent::Fault(FaultCall::Applied(PutFault::Pod {
                    pod,
                    replica,
                    action,
                }))
            }
            RunEventKind::Applied => {
                let (fault, period, error) = fault_of(object)?;
                if error.is_some() {
                    return None;
                }
                RunEvent::Fault(FaultCall::Applied(PutFault::Agent { fault, period }))
            }
            RunEventKind::ApplyFailed => {
                let (fault, period, error) = fault_of(object)?;
                RunEvent::Fault(FaultCall::ApplyFailed {
                    fault,
                    period,
                    error: error?,
                })
            }
            RunEventKind::Renewed => {
                let Empty {} = shaped(object)?;
                RunEvent::Fault(FaultCall::Renewed)
            }
            RunEventKind::RenewFailed => {
                let ErrorOnly { error } = shaped(object)?;
                RunEvent::Fault(FaultCall::RenewFailed { error })
            }
            RunEventKind::Removed => {
                let PeriodOnly { period } = shaped(object)?;
                RunEvent::Fault(FaultCall::Removed { period })
            }
            RunEventKind::RemoveFailed => {
                let PeriodError { period, error } = shaped(object)?;
                RunEvent::Fault(FaultCall::RemoveFailed { period, error })
            }
            RunEventKind::StatsFailed => {
                let ErrorOnly { error } = shaped(object)?;
                RunEvent::ContainerStatsFailed { error }
            }
            RunEventKind::AgentStreamUnavailable => {
                let ErrorOnly { error } = shaped(object)?;
                RunEvent::Agent(AgentReport::StreamUnavailable { error })
            }
            RunEventKind::BreakersRenewFailed => {
                let ServiceError { service, error } = shaped(object)?;
                RunEvent::BreakerHold(BreakerHoldFailure::RenewFailed { service, error })
            }
            RunEventKind::BreakersRestoreFailed => {
                let ServiceError { service, error } = shaped(object)?;
                RunEvent::BreakerHold(BreakerHoldFailure::RestoreFailed { service, error })
            }
            RunEventKind::BreakersJoinFailed => {
                let ServiceError { service, error } = shaped(object)?;
                RunEvent::BreakerHold(BreakerHoldFailure::JoinFailed { service, error })
            }
            RunEventKind::ReplicaAdded => RunEvent::Replica(ReplicaEvent::Added(shaped(object)?)),
            RunEventKind::ReplicaRemoved => {
                RunEvent::Replica(ReplicaEvent::Removed(shaped(object)?))
            }
            RunEventKind::ReplicaReplaced => {
                RunEvent::Replica(ReplicaEvent::Replaced(shaped(object)?))
            }
            RunEventKind::ReplicaFollowed => {
                RunEvent::Replica(ReplicaEvent::Followed(shaped(object)?))
            }
            RunEventKind::ReplicaFollowFailed => {
                RunEvent::Replica(ReplicaEvent::FollowFailed(shaped(object)?))
            }
            RunEventKind::SourceScrapeFailed => {
                let SourceError { source, error } = shaped(object)?;
                RunEvent::ScrapeFailed { source, error }
            }
            RunEventKind::TransitionsNotStored => {
                let NotStored {
                    service,
                    breaker,
                    source,
                    count,
                    why,
                } = shaped(object)?;
                RunEvent::TransitionsNotStored {
                    service,
                    breaker,
                    source,
                    count,
                    why,
                }
            }
            RunEventKind::ProbeBuckets => RunEvent::ProbeBuckets(shaped(object)?),
            RunEventKind::AgentApplied
            | RunEventKind::AgentRenewed
            | RunEventKind::AgentExpired
            | RunEventKind::AgentRemoved
            | RunEventKind::AgentLagged => {
                let event = RunEvent::agent(shaped(object)?);
                // The name says which event it is: a detail of another one is not this one.
                if event.kind() != kind {
                    return None;
                }
                event
            }
        })
    }
}

/// The fault document's object with the schedule's `period` and a failure's `error` beside its fields.
fn fault_with(fault: &FaultSpec, period: Option<usize>, error: Option<&str>) -> Value {
    let mut object = match serde_json::to_value(fault) {
        Ok(Value::Object(object)) => object,
        _ => Map::new(),
    };
    if let Some(error) = error {
        object.insert("error".into(), Value::from(error));
    }
    with_period(object, period)
}

fn with_period(mut object: Map<String, Value>, period: Option<usize>) -> Value {
    if let Some(period) = period {
        object.insert("period".into(), Value::from(period));
    }
    Value::Object(object)
}

/// The fault document, the period and the error of an object [`fault_with`] wrote.
fn fault_of(mut object: Map<String, Value>) -> Option<(FaultSpec, Option<usize>, Option<String>)> {
    let period = match object.remove("period") {
        Some(period) => Some(usize::try_from(period.as_u64()?).ok()?),
        None => None,
    };
    let error = match object.remove("error") {
        Some(Value::String(error)) => Some(error),
        Some(_) => return None,
        None => None,
    };
    let fault = FaultSpec::deserialize(Value::Object(object)).ok()?;
    Some((fault, period, error))
}

/// `object` read as `T` (every field known).
fn shaped<T: DeserializeOwned>(object: Map<String, Value>) -> Option<T> {
    serde_json::from_value(Value::Object(object)).ok()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Empty {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorOnly {
    error: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeriodOnly {
    period: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PeriodError {
    period: Option<usize>,
    error: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceError {
    service: String,
    error: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotStored {
    service: String,
    breaker: String,
    source: Option<String>,
    count: u64,
    why: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceError {
    source: String,
    error: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContainerPut {
    container: String,
    action: ContainerAction,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PodPut {
    pod: String,
    replica: String,
    action: PodAction,
}
