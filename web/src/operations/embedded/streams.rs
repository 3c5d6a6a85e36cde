//! Following the testbed's websockets into the hub: every service's `/_breakers/stream` (transitions) and
//! the agent's `/_agent/stream` (fault changes), reconnecting whenever one drops; and the foreign breakers' transitions
//! a run scrapes.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

use super::{AGENT_SERVICE, EmbeddedOperations};
use controller::runner::TransitionSink;

use crate::hub::{FaultChange, Hub, LiveEvent};

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
        for (_, url) in &self.inner.testbed.services {
            let hub = self.inner.hub.clone();
            let ws = format!(
                "ws://{}/_breakers/stream",
                url.trim_start_matches("http://")
            );
            tasks.push(tokio::spawn(follow(ws, move |text| {
                if let Ok(event) = serde_json::from_str::<breaker::TransitionEvent>(text) {
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
        tasks
    }
}

/// An agent stream message as a fault change.
fn fault_change(text: &str) -> Option<FaultChange> {
    let value: Value = serde_json::from_str(text).ok()?;
    let event = value.get("event")?.as_str()?;
    let at_ms = value.get("at_ms").and_then(Value::as_u64).unwrap_or(0);
    let fault_id = value
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let fault = value.get("fault");
    let renewed = value
        .get("renewed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let name = match event {
        "applied" if renewed => "renewed",
        "applied" => "applied",
        "expired" => "expired",
        "removed" => "removed",
        _ => return None,
    };
    let field = |name: &str| fault.and_then(|fault| fault.get(name));
    let detail = match (field("status"), field("delay")) {
        (Some(status), _) => format!("status {status}"),
        (None, Some(Value::String(delay))) => format!("delay {delay}"),
        _ => String::new(),
    };
    let matches = match field("match") {
        Some(rule) => {
            let method = rule.get("method").and_then(Value::as_str).unwrap_or("");
            let path = rule
                .get("path_prefix")
                .and_then(Value::as_str)
                .unwrap_or("");
            match (method, path) {
                ("", "") => "every request".to_owned(),
                (method, "") => format!("{method} requests"),
                (method, path) => format!("{method} {path}…").trim_start().to_owned(),
            }
        }
        None => "every request".to_owned(),
    };
    let expires_at_ms = value
        .get("lease_ms")
        .and_then(Value::as_u64)
        .map(|lease| at_ms + lease);
    Some(FaultChange {
        at_ms,
        detail,
        matches,
        expires_at_ms,
        event: name.into(),
        fault_id,
        target: AGENT_SERVICE.into(),
        kind: fault
            .and_then(|fault| fault.get("kind"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        rate: fault
            .and_then(|fault| fault.get("rate"))
            .and_then(Value::as_f64)
            .unwrap_or(if name == "applied" || name == "renewed" {
                1.0
            } else {
                0.0
            }),
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
