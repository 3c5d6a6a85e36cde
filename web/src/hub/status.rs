//! The statuses live events and the dashboard's listings carry: an experiment's (the store's, plus the
//! dashboard's own `scheduled` and `start_failed`) and what happened to a fault. Serialised as the same lowercase
//! names the JavaScript and the templates read.

use controller::store::{RunEventKind, Status};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where an experiment is, as the dashboard shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentStatus {
    Pending,
    /// Pending with a start queued for later.
    Scheduled,
    Running,
    Finished,
    Aborted,
    Interrupted,
    /// A failed run aborted it (a stored experiment is never `failed`; kept for completeness).
    Failed,
    /// A run that lost a load worker mid-run (a stored experiment is never `degraded`; kept for completeness).
    Degraded,
    /// A scheduled start came due and could not start it.
    StartFailed,
}

impl ExperimentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExperimentStatus::Pending => "pending",
            ExperimentStatus::Scheduled => "scheduled",
            ExperimentStatus::Running => "running",
            ExperimentStatus::Finished => "finished",
            ExperimentStatus::Aborted => "aborted",
            ExperimentStatus::Interrupted => "interrupted",
            ExperimentStatus::Failed => "failed",
            ExperimentStatus::Degraded => "degraded",
            ExperimentStatus::StartFailed => "start_failed",
        }
    }

    /// No longer running (finished, aborted, interrupted, failed, or its start failed).
    pub fn has_ended(self) -> bool {
        matches!(
            self,
            ExperimentStatus::Finished
                | ExperimentStatus::Aborted
                | ExperimentStatus::Interrupted
                | ExperimentStatus::Failed
                | ExperimentStatus::Degraded
                | ExperimentStatus::StartFailed
        )
    }
}

impl From<Status> for ExperimentStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Pending => ExperimentStatus::Pending,
            Status::Running => ExperimentStatus::Running,
            Status::Finished => ExperimentStatus::Finished,
            Status::Aborted => ExperimentStatus::Aborted,
            Status::Interrupted => ExperimentStatus::Interrupted,
            Status::Failed => ExperimentStatus::Failed,
            Status::Degraded => ExperimentStatus::Degraded,
        }
    }
}

impl std::fmt::Display for ExperimentStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happened to a fault: the agent's account live, a stored run's events replayed, or the dashboard's halt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FaultChangeEvent {
    #[default]
    Applied,
    Renewed,
    Expired,
    Removed,
    /// Every fault cleared by the dashboard's halt.
    Halted,
    /// A stored event the live stream never sends (a failed call, the agent's stream lagging, …), shown by its
    /// stored name less `agent:`.
    Stored(RunEventKind),
}

impl FaultChangeEvent {
    /// A stored event as the live page names it: the runner's call and the agent's account of it alike.
    pub fn of_stored(event: RunEventKind) -> Self {
        match event {
            RunEventKind::Applied | RunEventKind::AgentApplied => FaultChangeEvent::Applied,
            RunEventKind::Renewed | RunEventKind::AgentRenewed => FaultChangeEvent::Renewed,
            RunEventKind::AgentExpired => FaultChangeEvent::Expired,
            RunEventKind::Removed | RunEventKind::AgentRemoved => FaultChangeEvent::Removed,
            other => FaultChangeEvent::Stored(other),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FaultChangeEvent::Applied => "applied",
            FaultChangeEvent::Renewed => "renewed",
            FaultChangeEvent::Expired => "expired",
            FaultChangeEvent::Removed => "removed",
            FaultChangeEvent::Halted => "halted",
            FaultChangeEvent::Stored(event) => {
                let name = event.as_str();
                name.strip_prefix("agent:").unwrap_or(name)
            }
        }
    }

    /// The event named `text` (as [`FaultChangeEvent::as_str`] writes it).
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "applied" => FaultChangeEvent::Applied,
            "renewed" => FaultChangeEvent::Renewed,
            "expired" => FaultChangeEvent::Expired,
            "removed" => FaultChangeEvent::Removed,
            "halted" => FaultChangeEvent::Halted,
            _ => FaultChangeEvent::Stored(
                RunEventKind::parse(text)
                    .or_else(|| RunEventKind::parse(&format!("agent:{text}")))?,
            ),
        })
    }
}

impl std::fmt::Display for FaultChangeEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for FaultChangeEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for FaultChangeEvent {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        FaultChangeEvent::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("event: `{text}` is not a fault change"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name written is read back as the same event, for every stored event too.
    #[test]
    fn fault_change_events_read_back_as_written() {
        let live = [
            FaultChangeEvent::Applied,
            FaultChangeEvent::Renewed,
            FaultChangeEvent::Expired,
            FaultChangeEvent::Removed,
            FaultChangeEvent::Halted,
        ];
        let stored = RunEventKind::ALL.map(FaultChangeEvent::of_stored);
        for event in live.into_iter().chain(stored) {
            let json = serde_json::to_string(&event).expect("serialises");
            assert_eq!(json, format!("\"{}\"", event.as_str()));
            assert_eq!(
                serde_json::from_str::<FaultChangeEvent>(&json).expect("reads"),
                event
            );
        }
        assert!(serde_json::from_str::<FaultChangeEvent>("\"exploded\"").is_err());
    }

    /// A replayed run names its events as the live page did before they were typed: `agent:` dropped, the
    /// runner's and the agent's applied alike.
    #[test]
    fn stored_events_keep_their_live_names() {
        let names: Vec<(&str, &str)> = RunEventKind::ALL
            .into_iter()
            .map(|event| (event.as_str(), FaultChangeEvent::of_stored(event).as_str()))
            .collect();
        for (stored, live) in names {
            assert_eq!(live, stored.strip_prefix("agent:").unwrap_or(stored));
        }
    }

    #[test]
    fn experiment_statuses_keep_the_store_names() {
        for status in Status::ALL {
            let ours = ExperimentStatus::from(status);
            assert_eq!(ours.as_str(), status.as_str());
            assert_eq!(
                serde_json::to_string(&ours).expect("serialises"),
                serde_json::to_string(&status).expect("serialises")
            );
        }
        assert_eq!(
            serde_json::to_string(&ExperimentStatus::StartFailed).expect("serialises"),
            "\"start_failed\""
        );
    }
}
