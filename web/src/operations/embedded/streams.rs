//! Following the testbed's websockets into the hub: every service's `/_breakers/stream` (transitions) and
//! the agent's `/_agent/stream` (fault changes), reconnecting whenever one drops; and the foreign breakers' transitions
//! a run scrapes.

use std::time::Duration;

use agent::api::{AgentEvent, FaultKind, format_duration};
use futures::StreamExt;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use super::{AGENT_SERVICE, EmbeddedOperations};
use controller::runner::{TransitionSink, as_replica};

use crate::hub::{FaultChange, FaultChangeEvent, Hub, LiveEvent};

/// A sink whose transitions (foreign breakers a run's `[[sources]]` scrapes see) go to the hub as they come.
pub(super) fn publish_transitions(hub: Hub) -> TransitionSink {
    let (sink, mut seen) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(event) = seen.recv().await {
            hub.publish(LiveEvent::Transition(event));
        }
    });
    sink
}

impl EmbeddedOperations {
    /// Subscribes to every transition stream and the agent stream, and samples once per second, publishing
    /// into the hub until the returned tasks are aborted.
    pub fn spawn_live_feeds(&self) -> Vec<JoinHandle<()>> {
        let mut tasks = Vec::new();
        for (label, url) in &self.inner.testbed.services {
            let hub = self.inner.hub.clone();
            let ws = format!(
                "ws://{}/_breakers/stream",
                url.trim_start_matches("http://")
            );
            let label = label.clone();
            tasks.push(tokio::spawn(follow(ws, move |text| {
                if let Ok(mut event) = serde_json::from_str::<breaker::TransitionEvent>(text) {
                    // A replica's lanes are its own (`checkout#2`), as the runner stores them.
                    as_replica(&label, &mut event.service, &mut event.breaker);
                    hub.publish(LiveEvent::Transition(event));
                }
            })));
        }
        let hub = self.inner.hub.clone();
        let ws = format!(
            "ws://{}/_agent/stream",
            self.inner.testbed.agent.trim_start_matches("http://")
        );
        tasks.push(tokio::spawn(follow(ws, move |text| {
            if let Some(change) = fault_change(text) {
                hub.publish(LiveEvent::Fault(change));
            }
        })));
        let operations = self.clone();
        tasks.push(tokio::spawn(
            async move { operations.sample_forever().await },
        ));
        if self.inner.containers.is_some() {
            let operations = self.clone();
            tasks.push(tokio::spawn(async move {
                operations.sample_containers_forever().await
            }));
        }
        tasks
    }
}

/// An agent stream message, decoded into the agent's own [`AgentEvent`], as a fault change (`None` for
/// `lagged` and for what is not an agent event).
fn fault_change(text: &str) -> Option<FaultChange> {
    let change = |event: FaultChangeEvent, id: String, at_ms: u64| FaultChange {
        at_ms,
        event,
        fault_id: id,
        target: AGENT_SERVICE.into(),
        kind: String::new(),
        rate: 0.0,
        detail: String::new(),
        matches: String::new(),
        expires_at_ms: None,
    };
    Some(match serde_json::from_str::<AgentEvent>(text).ok()? {
        AgentEvent::Applied {
            id,
            fault,
            lease_ms,
            renewed,
            at_ms,
            ..
        } => FaultChange {
            kind: fault.kind().name().to_owned(),
            rate: fault.rate(),
            detail: match fault.kind() {
                FaultKind::Error { status, .. } => format!("status {status}"),
                FaultKind::Delay { delay, .. } => format!("delay {}", format_duration(*delay)),
                FaultKind::Hang | FaultKind::Reset => String::new(),
            },
            matches: match (
                fault.matcher().method.as_deref().unwrap_or(""),
                fault.matcher().path_prefix.as_deref().unwrap_or(""),
            ) {
                ("", "") => "every request".to_owned(),
                (method, "") => format!("{method} requests"),
                (method, path) => format!("{method} {path}…").trim_start().to_owned(),
            },
            expires_at_ms: Some(at_ms + lease_ms),
            ..change(
                if renewed {
                    FaultChangeEvent::Renewed
                } else {
                    FaultChangeEvent::Applied
                },
                id,
                at_ms,
            )
        },
        AgentEvent::Expired { id, at_ms, .. } => change(FaultChangeEvent::Expired, id, at_ms),
        AgentEvent::Removed { id, at_ms, .. } => change(FaultChangeEvent::Removed, id, at_ms),
        AgentEvent::Lagged { .. } => return None,
    })
}

/// Follows a websocket, reconnecting after a second whenever it drops.
async fn follow(url: String, mut on_text: impl FnMut(&str) + Send) {
    loop {
        if let Ok((mut stream, _)) = tokio_tungstenite::connect_async(url.as_str()).await {
            while let Some(Ok(message)) = stream.next().await {
                if let Message::Text(text) = message {
                    on_text(text.as_str());
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_events_become_fault_changes() {
        let applied = r#"{"event":"applied","id":"f","fault":{"kind":"error","status":500,"rate":0.5},"lease_ms":30000,"at_ms":9,"seq":1}"#;
        let change = fault_change(applied).expect("applied");
        assert_eq!(
            (change.event.as_str(), change.rate, change.kind.as_str()),
            ("applied", 0.5, "error")
        );
        assert!(change.is_active());
        assert_eq!(
            (
                change.detail.as_str(),
                change.matches.as_str(),
                change.expires_at_ms
            ),
            ("status 500", "every request", Some(30_009))
        );
        let matched = r#"{"event":"applied","id":"d","fault":{"kind":"delay","delay":"800ms","rate":1.0,"match":{"method":"POST","path_prefix":"/charge"}},"lease_ms":5000,"at_ms":1,"seq":3}"#;
        let change = fault_change(matched).expect("applied");
        assert_eq!(
            (change.detail.as_str(), change.matches.as_str()),
            ("delay 800ms", "POST /charge…")
        );
        let removed = r#"{"event":"removed","id":"f","reason":"deleted","at_ms":10,"seq":2}"#;
        let change = fault_change(removed).expect("removed");
        assert!(!change.is_active());
        assert!(fault_change(r#"{"event":"lagged","missed":3}"#).is_none());
    }
}
