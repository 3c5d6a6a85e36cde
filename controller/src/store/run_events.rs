//! A run's event log (the table `fault_events`): what the runner did to the run's fault, what the agent said
//! about it, what else failed around it (the run's leased breaker config, a container's stats, a foreign source's
//! scrape), and the replicas
//! an orchestrator started, stopped or replaced meanwhile. Each of those has its own type; [`RunEvent`] is one of
//! them.
//!
//! Stored as two texts, the ones every earlier version wrote: the event's name ([`RunEventKind::as_str`]) and its
//! detail as a JSON object with its keys sorted ([`RunEvent::detail_json`]). Reading takes the name, then the
//! detail in the one shape that name was ever written with ([`RunEvent::from_stored`]); anything else is no
//! guess but [`super::StoreError::Corrupt`].

use agent::api::{AgentEvent, FaultSpec};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::json;

use crate::actions::{ContainerAction, PodAction};

mod stored;

/// One entry of a run's event log.
#[derive(Debug, Clone, PartialEq)]
pub struct RunEventRecord {
    pub at_ms: i64,
    /// The fault the event is about (`experiment-1-run-2`, `container-7`); empty when it is about none.
    pub fault_id: String,
    pub event: RunEvent,
}

/// What happened, by who reported it.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEvent {
    /// A call of the runner on the run's fault, the agent's or a container's.
    Fault(FaultCall),
    /// The agent's own account, from its event stream.
    Agent(AgentReport),
    /// The run's leased breaker config could not be renewed or restored.
    BreakerHold(BreakerHoldFailure),
    /// A container's stats could not be read (the run against the compose stack).
    ContainerStatsFailed { error: String },
    /// An orchestrator's replica came, went or was replaced during the run (Swarm, Kubernetes).
    Replica(ReplicaEvent),
    /// A `[[sources]]` scrape failed during the run (the first of a run of failures): the source's name and why.
    ScrapeFailed { source: String, error: String },
    /// Transitions of one breaker counted instead of stored one by one (`runner::spool`): how many and why.
    TransitionsNotStored {
        service: String,
        breaker: String,
        /// The foreign source the breaker was seen through, if it is not a Tolerant one.
        source: Option<String>,
        count: u64,
        why: String,
    },
    /// The fault agent's half-open probes over the run in 10 ms buckets (`GET /_agent/probes` at its end).
    ProbeBuckets(ProbeBucketsRead),
}

/// Probes per 10 ms bucket over a run, summed over the agents that answered: what `probes_peak_per_10ms` and
/// `probes_peak_per_s_exact` are computed from (`stats::probes`), stored whole so a reader can re-derive them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeBucketsRead {
    /// The agents' base URLs that answered.
    pub agents: Vec<String>,
    /// Why an agent did not answer (its URL in the message); the buckets are then those of the others.
    pub errors: Vec<String>,
    /// The window asked for, `[since_ms, until_ms)`, ms since the Unix epoch.
    pub since_ms: i64,
    pub until_ms: i64,
    pub bucket_ms: u64,
    /// `[start_ms, probes]` of every non-empty bucket, ascending by start.
    pub buckets: Vec<(i64, u64)>,
}

/// What happened to a replica during a run, under its label (`checkout#2`).
#[derive(Debug, Clone, PartialEq)]
pub enum ReplicaEvent {
    /// The orchestrator started a replica under a new label (followed from then on).
    Added(ReplicaSeen),
    /// A replica stopped running or being ready.
    Removed(ReplicaGone),
    /// A new replica took the label of one that was gone (a dead task's slot, a deleted pod's number).
    Replaced(ReplicaReplacement),
    /// A replica that joined during the run: its transition stream is up.
    Followed(ReplicaStream),
    /// A replica that joined during the run whose transition stream did not open in time.
    FollowFailed(ReplicaStreamFailed),
}

/// A replica now running: its label, its instance (task or pod name) and base URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaSeen {
    pub replica: String,
    pub instance: String,
    pub url: String,
}

/// A replica gone: its label and the instance that held it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaGone {
    pub replica: String,
    pub instance: String,
}

/// A label taken over: the instance that held it before, the one now, and its base URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaReplacement {
    pub replica: String,
    pub previous: String,
    pub instance: String,
    pub url: String,
}

/// A replica's transition stream, followed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaStream {
    pub replica: String,
    pub url: String,
}

/// A replica's transition stream that did not open, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaStreamFailed {
    pub replica: String,
    pub url: String,
    pub error: String,
}

/// A fault the runner put on.
#[derive(Debug, Clone, PartialEq)]
pub enum PutFault {
    /// The agent's fault document; `period` is the index of its on-period when the fault is on a schedule.
    Agent {
        fault: FaultSpec,
        period: Option<usize>,
    },
    /// A container-level action on one container.
    Container {
        container: String,
        action: ContainerAction,
    },
    /// A pod fault on one pod, the replica it is (`checkout#2`).
    Pod {
        pod: String,
        replica: String,
        action: PodAction,
    },
}

/// A call of the runner on the run's fault and how it went; `period` as in [`PutFault::Agent`].
#[derive(Debug, Clone, PartialEq)]
pub enum FaultCall {
    Applied(PutFault),
    /// A scheduled period's fault the agent did not take.
    ApplyFailed {
        fault: FaultSpec,
        period: Option<usize>,
        error: String,
    },
    /// The lease was renewed.
    Renewed,
    RenewFailed {
        error: String,
    },
    Removed {
        period: Option<usize>,
    },
    RemoveFailed {
        period: Option<usize>,
        error: String,
    },
}

/// What the agent's stream said.
#[derive(Debug, Clone, PartialEq)]
pub enum AgentReport {
    /// One of its events, as it sent it.
    Event(AgentEvent),
    /// The stream could not be followed: the agent's account of the run is missing.
    StreamUnavailable { error: String },
}

/// The run's leased breaker config on one service (its base URL) could not be renewed or restored, or a replica
/// that joined mid-run never took it.
#[derive(Debug, Clone, PartialEq)]
pub enum BreakerHoldFailure {
    RenewFailed { service: String, error: String },
    RestoreFailed { service: String, error: String },
    JoinFailed { service: String, error: String },
}

/// The name a [`RunEvent`] is stored, serialised and shown under: the runner's own calls by name, the agent's
/// account prefixed `agent:`, the breaker config's lease `breakers:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunEventKind {
    #[serde(rename = "applied")]
    Applied,
    #[serde(rename = "apply_failed")]
    ApplyFailed,
    #[serde(rename = "renewed")]
    Renewed,
    #[serde(rename = "renew_failed")]
    RenewFailed,
    #[serde(rename = "removed")]
    Removed,
    #[serde(rename = "remove_failed")]
    RemoveFailed,
    #[serde(rename = "stats_failed")]
    StatsFailed,
    #[serde(rename = "agent:applied")]
    AgentApplied,
    #[serde(rename = "agent:renewed")]
    AgentRenewed,
    #[serde(rename = "agent:expired")]
    AgentExpired,
    #[serde(rename = "agent:removed")]
    AgentRemoved,
    /// The agent's stream skipped events (a slow reader).
    #[serde(rename = "agent:lagged")]
    AgentLagged,
    #[serde(rename = "agent:stream_unavailable")]
    AgentStreamUnavailable,
    #[serde(rename = "breakers:renew_failed")]
    BreakersRenewFailed,
    #[serde(rename = "breakers:restore_failed")]
    BreakersRestoreFailed,
    #[serde(rename = "breakers:join_failed")]
    BreakersJoinFailed,
    #[serde(rename = "replica:added")]
    ReplicaAdded,
    #[serde(rename = "replica:removed")]
    ReplicaRemoved,
    #[serde(rename = "replica:replaced")]
    ReplicaReplaced,
    #[serde(rename = "replica:followed")]
    ReplicaFollowed,
    #[serde(rename = "replica:follow_failed")]
    ReplicaFollowFailed,
    #[serde(rename = "source:scrape_failed")]
    SourceScrapeFailed,
    #[serde(rename = "transitions:not_stored")]
    TransitionsNotStored,
    #[serde(rename = "probes:buckets")]
    ProbeBuckets,
}

impl RunEventKind {
    /// Every kind, for reading stored text back.
    pub const ALL: [RunEventKind; 24] = [
        RunEventKind::Applied,
        RunEventKind::ApplyFailed,
        RunEventKind::Renewed,
        RunEventKind::RenewFailed,
        RunEventKind::Removed,
        RunEventKind::RemoveFailed,
        RunEventKind::StatsFailed,
        RunEventKind::AgentApplied,
        RunEventKind::AgentRenewed,
        RunEventKind::AgentExpired,
        RunEventKind::AgentRemoved,
        RunEventKind::AgentLagged,
        RunEventKind::AgentStreamUnavailable,
        RunEventKind::BreakersRenewFailed,
        RunEventKind::BreakersRestoreFailed,
        RunEventKind::BreakersJoinFailed,
        RunEventKind::ReplicaAdded,
        RunEventKind::ReplicaRemoved,
        RunEventKind::ReplicaReplaced,
        RunEventKind::ReplicaFollowed,
        RunEventKind::ReplicaFollowFailed,
        RunEventKind::SourceScrapeFailed,
        RunEventKind::TransitionsNotStored,
        RunEventKind::ProbeBuckets,
    ];

    /// The stored (and serialised) name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunEventKind::Applied => "applied",
            RunEventKind::ApplyFailed => "apply_failed",
            RunEventKind::Renewed => "renewed",
            RunEventKind::RenewFailed => "renew_failed",
            RunEventKind::Removed => "removed",
            RunEventKind::RemoveFailed => "remove_failed",
            RunEventKind::StatsFailed => "stats_failed",
            RunEventKind::AgentApplied => "agent:applied",
            RunEventKind::AgentRenewed => "agent:renewed",
            RunEventKind::AgentExpired => "agent:expired",
            RunEventKind::AgentRemoved => "agent:removed",
            RunEventKind::AgentLagged => "agent:lagged",
            RunEventKind::AgentStreamUnavailable => "agent:stream_unavailable",
            RunEventKind::BreakersRenewFailed => "breakers:renew_failed",
            RunEventKind::BreakersRestoreFailed => "breakers:restore_failed",
            RunEventKind::BreakersJoinFailed => "breakers:join_failed",
            RunEventKind::ReplicaAdded => "replica:added",
            RunEventKind::ReplicaRemoved => "replica:removed",
            RunEventKind::ReplicaReplaced => "replica:replaced",
            RunEventKind::ReplicaFollowed => "replica:followed",
            RunEventKind::ReplicaFollowFailed => "replica:follow_failed",
            RunEventKind::SourceScrapeFailed => "source:scrape_failed",
            RunEventKind::TransitionsNotStored => "transitions:not_stored",
            RunEventKind::ProbeBuckets => "probes:buckets",
        }
    }

    /// The kind stored as `text`, if it is one.
    pub fn parse(text: &str) -> Option<RunEventKind> {
        RunEventKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
    }

    /// Reported by the agent itself (`agent:…`), not a call of the runner.
    pub fn is_agent(self) -> bool {
        self.as_str().starts_with("agent:")
    }
}

impl std::fmt::Display for RunEventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl RunEvent {
    /// What the agent reported in `event` (`applied` with `renewed: true` is `agent:renewed`).
    pub fn agent(event: AgentEvent) -> Self {
        RunEvent::Agent(AgentReport::Event(event))
    }

    /// The name it is stored under.
    pub fn kind(&self) -> RunEventKind {
        match self {
            RunEvent::Fault(call) => match call {
                FaultCall::Applied(_) => RunEventKind::Applied,
                FaultCall::ApplyFailed { .. } => RunEventKind::ApplyFailed,
                FaultCall::Renewed => RunEventKind::Renewed,
                FaultCall::RenewFailed { .. } => RunEventKind::RenewFailed,
                FaultCall::Removed { .. } => RunEventKind::Removed,
                FaultCall::RemoveFailed { .. } => RunEventKind::RemoveFailed,
            },
            RunEvent::Agent(AgentReport::Event(event)) => match event {
                AgentEvent::Applied { renewed: true, .. } => RunEventKind::AgentRenewed,
                AgentEvent::Applied { .. } => RunEventKind::AgentApplied,
                AgentEvent::Expired { .. } => RunEventKind::AgentExpired,
                AgentEvent::Removed { .. } => RunEventKind::AgentRemoved,
                AgentEvent::Lagged { .. } => RunEventKind::AgentLagged,
            },
            RunEvent::Agent(AgentReport::StreamUnavailable { .. }) => {
                RunEventKind::AgentStreamUnavailable
            }
            RunEvent::BreakerHold(BreakerHoldFailure::RenewFailed { .. }) => {
                RunEventKind::BreakersRenewFailed
            }
            RunEvent::BreakerHold(BreakerHoldFailure::RestoreFailed { .. }) => {
                RunEventKind::BreakersRestoreFailed
            }
            RunEvent::BreakerHold(BreakerHoldFailure::JoinFailed { .. }) => {
                RunEventKind::BreakersJoinFailed
            }
            RunEvent::ContainerStatsFailed { .. } => RunEventKind::StatsFailed,
            RunEvent::Replica(replica) => match replica {
                ReplicaEvent::Added(_) => RunEventKind::ReplicaAdded,
                ReplicaEvent::Removed(_) => RunEventKind::ReplicaRemoved,
                ReplicaEvent::Replaced(_) => RunEventKind::ReplicaReplaced,
                ReplicaEvent::Followed(_) => RunEventKind::ReplicaFollowed,
                ReplicaEvent::FollowFailed(_) => RunEventKind::ReplicaFollowFailed,
            },
            RunEvent::ScrapeFailed { .. } => RunEventKind::SourceScrapeFailed,
            RunEvent::TransitionsNotStored { .. } => RunEventKind::TransitionsNotStored,
            RunEvent::ProbeBuckets(_) => RunEventKind::ProbeBuckets,
        }
    }
}

impl Serialize for RunEventRecord {
    /// `{"at_ms", "event" (the kind's name), "fault_id", "detail"}`, as the record was serialised before it was typed.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        json!({
            "at_ms": self.at_ms,
            "event": self.event.kind(),
            "fault_id": self.fault_id,
            "detail": self.event.detail_json(),
        })
        .serialize(serializer)
    }
}
