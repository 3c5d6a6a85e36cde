//! Collects breaker transitions from every service's `/_breakers/stream` websocket during a run.

use std::sync::Arc;

use futures::StreamExt;
use parking_lot::Mutex;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use crate::store::TransitionRecord;

/// Subscriptions to the services' transition streams; events land in one shared list.
pub struct TransitionCollector {
    events: Arc<Mutex<Vec<TransitionRecord>>>,
    readers: JoinSet<()>,
}

impl TransitionCollector {
    /// Connects to `{url}/_breakers/stream` of every service (base URLs `http://…`). Returns once
    /// every subscription is established, so no transition after this call is missed.
    pub async fn connect(service_urls: &[String]) -> Result<Self, String> {
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut readers = JoinSet::new();
        for url in service_urls {
            let ws_url = format!(
                "ws://{}/_breakers/stream",
                url.trim_start_matches("http://")
            );
            let (mut stream, _) = tokio_tungstenite::connect_async(ws_url.as_str())
                .await
                .map_err(|e| format!("{ws_url}: {e}"))?;
            let events = Arc::clone(&events);
            readers.spawn(async move {
                while let Some(Ok(message)) = stream.next().await {
                    let Message::Text(text) = message else {
                        continue;
                    };
                    if let Some(record) = parse_transition(text.as_str()) {
                        events.lock().push(record);
                    }
                }
            });
        }
        Ok(TransitionCollector { events, readers })
    }

    /// Stops listening and returns every transition seen, in time order, and the message of every
    /// reader that had panicked.
    pub async fn finish(mut self) -> (Vec<TransitionRecord>, Vec<String>) {
        self.readers.abort_all();
        let mut panics = Vec::new();
        while let Some(joined) = self.readers.join_next().await {
            if let Some(message) = joined.err().and_then(crate::panic::join_panic) {
                panics.push(message);
            }
        }
        let mut events = std::mem::take(&mut *self.events.lock());
        events.sort_by_key(|event| (event.at_ms, event.seq));
        (events, panics)
    }
}

/// One message of `/_breakers/stream`, decoded into the breaker's own [`breaker::TransitionEvent`], as a
/// stored record; `None` for what is not a transition event.
pub fn parse_transition(text: &str) -> Option<TransitionRecord> {
    let event: breaker::TransitionEvent = serde_json::from_str(text).ok()?;
    Some(TransitionRecord::from_event(&event))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_design_shape() {
        let record = parse_transition(
            r#"{"service":"frontend","breaker":"frontend->checkout","from":"closed","to":"open",
                "reason":"consecutive_failures","detail":{"failures":5},"at_ms":1732896000123,"seq":42,"shadow":false}"#,
        )
        .unwrap();
        assert_eq!(record.breaker, "frontend->checkout");
        assert_eq!(
            (record.from.as_str(), record.to.as_str()),
            ("closed", "open")
        );
        assert_eq!(record.detail["failures"], 5);
        assert_eq!(
            (record.at_ms, record.seq, record.shadow),
            (1_732_896_000_123, 42, false)
        );
        assert!(parse_transition("{\"service\":\"x\"}").is_none());
        assert!(parse_transition("not json").is_none());
    }

    /// A message that is not the breaker's shape (a state or reason it does not have) is not guessed at.
    #[test]
    fn a_message_not_of_the_breakers_shape_is_not_stored() {
        let event = |from: &str, reason: &str| {
            format!(
                r#"{{"service":"frontend","breaker":"frontend->checkout","from":"{from}","to":"open",
                    "reason":"{reason}","detail":{{}},"at_ms":1,"seq":1,"shadow":false}}"#
            )
        };
        assert!(parse_transition(&event("closed", "consecutive_failures")).is_some());
        assert!(parse_transition(&event("ajar", "consecutive_failures")).is_none());
        assert!(parse_transition(&event("closed", "bad_luck")).is_none());
    }
}
