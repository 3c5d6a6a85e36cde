//! Collects the fault agent's own account of a run from `GET /_agent/stream` (applied, renewed,
//! expired, removed), stored beside the runner's record of its control calls as `agent:<event>`.

use std::sync::Arc;

use futures::StreamExt;
use parking_lot::Mutex;
use tokio_tungstenite::tungstenite::Message;

use agent::api::AgentEvent;

use super::setup_error::SetupError;
use super::task::RunTask;
use crate::store::{AgentReport, RunEvent, RunEventRecord};

/// A subscription to the agent's event stream.
pub struct AgentStream {
    events: Arc<Mutex<Vec<RunEventRecord>>>,
    reader: RunTask<()>,
}

impl AgentStream {
    /// Connects to `{agent_url}/_agent/stream`; returns once subscribed.
    pub async fn connect(agent_url: &str) -> Result<Self, SetupError> {
        let mut stream = super::transitions::subscribe(agent_url, "/_agent/stream").await?;
        let events = Arc::new(Mutex::new(Vec::new()));
        let reader = {
            let events = Arc::clone(&events);
            RunTask::spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    if let Some(record) = parse_agent_event(text.as_str()) {
                        events.lock().push(record);
                    }
                }
            })
        };
        Ok(AgentStream { events, reader })
    }

    /// Waits (at most `grace`) until the agent reported `fault_id` removed, then stops listening
    /// and returns the events seen: the removal is sent on the socket after the DELETE answered.
    pub async fn finish_after_removal(
        self,
        fault_id: &str,
        grace: std::time::Duration,
    ) -> (Vec<RunEventRecord>, Option<String>) {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            let removed = self
                .events
                .lock()
                .iter()
                .any(|e| e.fault_id == fault_id && is_removal(&e.event));
            if removed || tokio::time::Instant::now() >= deadline || self.reader.is_finished() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        self.finish().await
    }

    /// Stops listening and returns the events seen and, if the reader had panicked, its message.
    pub async fn finish(self) -> (Vec<RunEventRecord>, Option<String>) {
        let panicked = self.reader.stop().await;
        (std::mem::take(&mut *self.events.lock()), panicked)
    }
}

/// One message of the agent's stream, decoded into the agent's own [`AgentEvent`], as a fault event
/// record (`agent:<event>`; `applied` with `renewed: true` becomes `agent:renewed`); `None` for what is
/// not an agent event.
pub fn parse_agent_event(text: &str) -> Option<RunEventRecord> {
    let event: AgentEvent = serde_json::from_str(text).ok()?;
    let at_ms = match &event {
        AgentEvent::Applied { at_ms, .. }
        | AgentEvent::Expired { at_ms, .. }
        | AgentEvent::Removed { at_ms, .. } => i64::try_from(*at_ms).ok(),
        AgentEvent::Lagged { .. } => None,
    }
    .unwrap_or_else(crate::clock::now_ms);
    Some(RunEventRecord {
        at_ms,
        fault_id: event.fault_id().unwrap_or("").to_owned(),
        event: RunEvent::agent(event),
    })
}

fn is_removal(event: &RunEvent) -> bool {
    matches!(
        event,
        RunEvent::Agent(AgentReport::Event(AgentEvent::Removed { .. }))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_events_become_records() {
        let applied = parse_agent_event(
            r#"{"event":"applied","id":"f1","fault":{"kind":"error","status":500,"rate":1.0},"lease_ms":30000,"renewed":false,"at_ms":10,"seq":1}"#,
        )
        .unwrap();
        assert_eq!(
            (
                applied.event.kind().as_str(),
                applied.fault_id.as_str(),
                applied.at_ms
            ),
            ("agent:applied", "f1", 10)
        );
        let renewed = parse_agent_event(
            r#"{"event":"applied","id":"f1","fault":{"kind":"error","status":500,"rate":1.0},"lease_ms":30000,"renewed":true,"at_ms":20,"seq":2}"#,
        )
        .unwrap();
        assert_eq!(renewed.event.kind().as_str(), "agent:renewed");
        let removed = parse_agent_event(
            r#"{"event":"removed","id":"f1","reason":"deleted","at_ms":30,"seq":3}"#,
        )
        .unwrap();
        assert_eq!(removed.event.kind().as_str(), "agent:removed");
        assert_eq!(removed.event.detail_json()["reason"], "deleted");
        let lagged = parse_agent_event(r#"{"event":"lagged","missed":3}"#).unwrap();
        assert_eq!(
            (lagged.event.kind().as_str(), lagged.fault_id.as_str()),
            ("agent:lagged", "")
        );
        assert!(parse_agent_event("[]").is_none());
        // A message that is not the agent's shape is not guessed at.
        assert!(parse_agent_event(r#"{"event":"applied","id":"f1"}"#).is_none());
    }
}
