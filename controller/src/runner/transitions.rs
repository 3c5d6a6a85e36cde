//! Collects breaker transitions from every service's `/_breakers/stream` websocket during a run. A stream
//! followed under a replica's label (`checkout#2`, a scaled compose service) has its transitions stored under
//! that label, service and caller alike (`checkout#2`, `checkout#2->payment`), so each replica keeps its own
//! lanes: every replica reports itself as plain `checkout` with a breaker `checkout->payment`.

use std::sync::Arc;

use futures::StreamExt;
use parking_lot::Mutex;
use tokio::task::JoinSet;
use tokio_tungstenite::tungstenite::Message;

use super::setup_error::SetupError;
use crate::store::TransitionRecord;
use crate::target::ServiceId;

/// The websocket stream at `path` of a target's base URL (`http://…`); an error names the URL.
pub(super) async fn subscribe(url: &str, path: &str) -> Result<Subscription, SetupError> {
    let ws_url = format!("ws://{}{path}", url.trim_start_matches("http://"));
    match tokio_tungstenite::connect_async(ws_url.as_str()).await {
        Ok((stream, _)) => Ok(stream),
        Err(error) => Err(SetupError::Subscribe {
            url: ws_url,
            source: Box::new(error),
        }),
    }
}

/// Subscriptions to the services' transition streams; events land in one shared list.
pub struct TransitionCollector {
    events: Arc<Mutex<Vec<TransitionRecord>>>,
    readers: JoinSet<()>,
}

impl TransitionCollector {
    /// Connects to `{url}/_breakers/stream` of every service (`(label, base URL http://…)`). Returns once
    /// every subscription is established, so no transition after this call is missed.
    pub async fn connect(services: &[(ServiceId, String)]) -> Result<Self, SetupError> {
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut readers = JoinSet::new();
        for (label, url) in services {
            let stream = subscribe(url, "/_breakers/stream").await?;
            readers.spawn(read_transitions(stream, label.clone(), Arc::clone(&events)));
        }
        Ok(TransitionCollector { events, readers })
    }

    /// Where the readers put what they read: a replica that joins during the run adds its reader's here.
    pub fn events(&self) -> Arc<Mutex<Vec<TransitionRecord>>> {
        Arc::clone(&self.events)
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

/// A websocket stream of a target that was subscribed to.
pub(super) type Subscription =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Reads `stream` to its end, each transition stored under `label` into `events`.
pub(super) async fn read_transitions(
    mut stream: Subscription,
    label: ServiceId,
    events: Arc<Mutex<Vec<TransitionRecord>>>,
) {
    while let Some(Ok(message)) = stream.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        if let Some(mut record) = parse_transition(text.as_str()) {
            as_replica(&label, &mut record.service, &mut record.breaker);
            events.lock().push(record);
        }
    }
}

/// Renames a transition of a stream followed under `label` as that replica's: `service` becomes the label and a
/// breaker named after the service as caller (`checkout->payment`) is named after the replica
/// (`checkout#2->payment`). Nothing changes when `label` is not a replica of `service`.
pub fn as_replica(label: &ServiceId, service: &mut String, breaker: &mut String) {
    if !label.is_replica_of(service) {
        return;
    }
    if let Some(dependency) = breaker
        .strip_prefix(service.as_str())
        .and_then(|rest| rest.strip_prefix("->"))
    {
        *breaker = format!("{label}->{dependency}");
    }
    *service = label.to_string();
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

    #[test]
    fn a_replica_label_qualifies_only_its_own_service() {
        let id = |label: &str| ServiceId::new(label).unwrap();
        let qualified = |label: &str, service: &str| id(label).is_replica_of(service);
        assert!(qualified("checkout#2", "checkout"));
        assert!(qualified("checkout#12", "checkout"));
        assert!(!qualified("checkout", "checkout"));
        assert!(!qualified("cart#2", "checkout"));
        assert!(!qualified("checkoutx#2", "checkout"));
        // What is not `NAME#N` is no label at all: `ServiceId` refuses it.
        assert!(ServiceId::new("checkout#").is_err() && ServiceId::new("checkout#2x").is_err());
        let renamed = |label: &str, service: &str, breaker: &str| {
            let (mut service, mut breaker) = (service.to_owned(), breaker.to_owned());
            as_replica(&id(label), &mut service, &mut breaker);
            (service, breaker)
        };
        assert_eq!(
            renamed("checkout#2", "checkout", "checkout->payment"),
            ("checkout#2".into(), "checkout#2->payment".into())
        );
        assert_eq!(
            renamed("checkout#2", "checkout", "legacy-breaker"),
            ("checkout#2".into(), "legacy-breaker".into())
        );
        assert_eq!(
            renamed("checkout", "checkout", "checkout->payment"),
            ("checkout".into(), "checkout->payment".into())
        );
    }
}
