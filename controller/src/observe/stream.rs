//! Following one websocket stream for as long as someone asks: connect (within [`CONNECT_TIMEOUT`], messages
//! capped at [`MAX_MESSAGE_BYTES`]), decode every text message into an [`Observation`] and publish it, and after
//! a drop or a failed attempt try again [`RECONNECT_AFTER`] later. The follower's [`Connection`] says whether it
//! is up and how its last attempt failed.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::{self, Message, protocol::WebSocketConfig};

use super::observation::{AgentObservation, Observation};
use crate::clock::now_ms;
use crate::target::ServiceId;
use crate::task::OwnedTask;

/// Wait before a dropped or failed stream is tried again.
pub const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Longest a stream's connection (TCP and the websocket handshake) may take.
pub const CONNECT_TIMEOUT: Duration = crate::testbed::ADMIN_CALL_TIMEOUT;

/// Longest stream message taken (a transition or an agent event is well under a kilobyte).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// A stream that could not be followed: its `ws://` URL and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{url}: {source}")]
pub struct StreamUnavailable {
    pub url: String,
    #[source]
    pub source: Arc<tungstenite::Error>,
}

/// Which stream of which target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum StreamKey {
    /// `{url}/_breakers/stream`, its transitions named as `label`'s.
    Breakers { label: ServiceId, url: String },
    /// `{url}/_agent/stream`.
    Agent { url: String },
}

impl StreamKey {
    /// The stream's `ws://` URL (the target's base URL is `http://…`).
    pub(super) fn ws_url(&self) -> String {
        let (url, path) = match self {
            StreamKey::Breakers { url, .. } => (url, "/_breakers/stream"),
            StreamKey::Agent { url } => (url, "/_agent/stream"),
        };
        format!("ws://{}{path}", url.trim_start_matches("http://"))
    }

    /// What the key is called in [`super::Observer::followed`].
    pub(super) fn name(&self) -> String {
        match self {
            StreamKey::Breakers { label, .. } => format!("breakers:{label}"),
            StreamKey::Agent { .. } => "agent".to_owned(),
        }
    }

    /// One text message of this stream as an observation; `None` for what is not its shape.
    fn decode(&self, text: &str) -> Option<Observation> {
        match self {
            StreamKey::Breakers { label, .. } => {
                let mut event: breaker::TransitionEvent = serde_json::from_str(text).ok()?;
                as_replica(label, &mut event.service, &mut event.breaker);
                Some(Observation::Transition {
                    target: label.clone(),
                    event,
                })
            }
            StreamKey::Agent { .. } => Some(Observation::Agent(AgentObservation {
                event: serde_json::from_str(text).ok()?,
                received_ms: now_ms(),
            })),
        }
    }
}

/// Where a follower is.
#[derive(Debug, Clone, Default)]
pub(super) struct Connection {
    pub(super) up: bool,
    /// Attempts that failed so far.
    pub(super) failures: u64,
    pub(super) last_error: Option<StreamUnavailable>,
}

/// Starts following `key`, publishing on `sender`, until the returned task is dropped.
pub(super) fn follow(
    key: StreamKey,
    sender: broadcast::Sender<Observation>,
) -> (OwnedTask<()>, watch::Receiver<Connection>) {
    let (state, connection) = watch::channel(Connection::default());
    let task = OwnedTask::spawn(async move {
        let url = key.ws_url();
        loop {
            match connect(&url).await {
                Ok(mut stream) => {
                    state.send_modify(|c| c.up = true);
                    while let Some(Ok(message)) = stream.next().await {
                        if let Message::Text(text) = message
                            && let Some(observation) = key.decode(text.as_str())
                        {
                            // No subscriber is no error: nobody is looking right now.
                            let _ = sender.send(observation);
                        }
                    }
                    state.send_modify(|c| c.up = false);
                }
                Err(source) => state.send_modify(|c| {
                    c.failures += 1;
                    c.last_error = Some(StreamUnavailable {
                        url: url.clone(),
                        source: Arc::new(source),
                    });
                }),
            }
            tokio::time::sleep(RECONNECT_AFTER).await;
        }
    });
    (task, connection)
}

/// Waits until the follower behind `connection` is up, or until an attempt that ends after this call fails
/// (its error).
pub(super) async fn connected(
    mut connection: watch::Receiver<Connection>,
) -> Result<(), StreamUnavailable> {
    let failures_before = connection.borrow().failures;
    loop {
        {
            let now = connection.borrow_and_update();
            if now.up {
                return Ok(());
            }
            if now.failures > failures_before
                && let Some(error) = &now.last_error
            {
                return Err(error.clone());
            }
        }
        if connection.changed().await.is_err() {
            // The follower is gone (nobody asks for it any more): say how it last failed, if it did.
            let last = connection.borrow().last_error.clone();
            return Err(last.unwrap_or_else(|| StreamUnavailable {
                url: String::new(),
                source: Arc::new(tungstenite::Error::ConnectionClosed),
            }));
        }
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn connect(url: &str) -> Result<Socket, tungstenite::Error> {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let attempt = tokio_tungstenite::connect_async_with_config(url, Some(config), false);
    match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok((stream, _))) => Ok(stream),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(tungstenite::Error::Io(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no connection within {CONNECT_TIMEOUT:?}"),
        ))),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn breakers(label: &str) -> StreamKey {
        StreamKey::Breakers {
            label: ServiceId::new(label).unwrap(),
            url: "http://127.0.0.1:1".into(),
        }
    }

    fn transition_of(key: &StreamKey, text: &str) -> Option<breaker::TransitionEvent> {
        match key.decode(text)? {
            Observation::Transition { event, .. } => Some(event),
            other => panic!("not a transition: {other:?}"),
        }
    }

    #[test]
    fn a_breaker_stream_message_is_the_breakers_own_event() {
        let event = transition_of(
            &breakers("frontend"),
            r#"{"service":"frontend","breaker":"frontend->checkout","from":"closed","to":"open",
                "reason":"consecutive_failures","detail":{"failures":5},"at_ms":1732896000123,"seq":42,"shadow":false}"#,
        )
        .unwrap();
        assert_eq!(event.breaker, "frontend->checkout");
        assert_eq!(
            (event.from, event.to),
            (breaker::State::Closed, breaker::State::Open)
        );
        assert_eq!(event.detail.failures, Some(5));
        assert_eq!((event.at_ms, event.seq), (1_732_896_000_123, 42));
        assert!(transition_of(&breakers("frontend"), "{\"service\":\"x\"}").is_none());
        assert!(transition_of(&breakers("frontend"), "not json").is_none());
    }

    /// A message that is not the breaker's shape (a state or reason it does not have) is not guessed at.
    #[test]
    fn a_message_not_of_the_breakers_shape_is_dropped() {
        let event = |from: &str, reason: &str| {
            format!(
                r#"{{"service":"frontend","breaker":"frontend->checkout","from":"{from}","to":"open",
                    "reason":"{reason}","detail":{{}},"at_ms":1,"seq":1,"shadow":false}}"#
            )
        };
        let key = breakers("frontend");
        assert!(transition_of(&key, &event("closed", "consecutive_failures")).is_some());
        assert!(transition_of(&key, &event("ajar", "consecutive_failures")).is_none());
        assert!(transition_of(&key, &event("closed", "bad_luck")).is_none());
    }

    #[test]
    fn a_replicas_stream_names_its_transitions_after_the_replica() {
        let text = r#"{"service":"checkout","breaker":"checkout->payment","from":"closed","to":"open",
            "reason":"forced","detail":{},"at_ms":1,"seq":1,"shadow":false}"#;
        let event = transition_of(&breakers("checkout#2"), text).unwrap();
        assert_eq!(
            (event.service.as_str(), event.breaker.as_str()),
            ("checkout#2", "checkout#2->payment")
        );
        let event = transition_of(&breakers("checkout"), text).unwrap();
        assert_eq!(
            (event.service.as_str(), event.breaker.as_str()),
            ("checkout", "checkout->payment")
        );
    }

    #[test]
    fn an_agent_stream_message_is_the_agents_own_event() {
        let key = StreamKey::Agent {
            url: "http://127.0.0.1:1".into(),
        };
        let Some(Observation::Agent(seen)) =
            key.decode(r#"{"event":"removed","id":"f1","reason":"deleted","at_ms":30,"seq":3}"#)
        else {
            panic!("an agent event");
        };
        assert_eq!(seen.event.fault_id(), Some("f1"));
        assert!(key.decode(r#"{"event":"applied","id":"f1"}"#).is_none());
        assert_eq!(key.ws_url(), "ws://127.0.0.1:1/_agent/stream");
        assert_eq!(
            breakers("cart").ws_url(),
            "ws://127.0.0.1:1/_breakers/stream"
        );
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
