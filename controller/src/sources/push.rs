//! Push ingest: a service whose breaker has a listener hook (pybreaker's `CircuitBreakerListener`, Polly's
//! `OnOpened`/`OnClosed`, …) posts its state changes; the [`PushInbox`] checks them, turns them into transition
//! events (reason `observed`, source `push` or `push:<library>`) and hands them to whoever listens (the live
//! hub, the run being recorded).
//!
//! A body is one event object or an array of at most [`MAX_EVENTS_PER_BODY`]:
//! `{"breaker": "payments", "to": "open", "service"?: "shop", "from"?: "closed", "at_ms"?: 1732896000123,
//!   "reason"?: "consecutive_failures", "source"?: "pybreaker"}`.
//! The whole body is checked before anything is taken (an error names the field, `events[2].to`), and the rate
//! is bounded by a token bucket ([`RateLimit`]); time is an argument everywhere.

use std::collections::BTreeMap;
use std::sync::Arc;

use breaker::{Reason, State, TransitionDetail, TransitionEvent};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::broadcast;

use super::foreign_state;
use crate::target::ServiceId;

/// Events one body may carry.
pub const MAX_EVENTS_PER_BODY: usize = 100;
/// Bytes one body may have.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Sustained events per second the inbox takes, and the burst above it.
pub const EVENTS_PER_SECOND: f64 = 100.0;
pub const EVENT_BURST: f64 = 200.0;
/// Breakers the inbox remembers the state of; a body naming more new ones is refused.
pub const MAX_BREAKERS: usize = 10_000;
/// Longest breaker, service or source name.
pub const MAX_NAME_CHARS: usize = 200;
/// How far back an event's `at_ms` may lie, and how far ahead (clock skew).
pub const MAX_AGE_MS: u64 = 60 * 60 * 1000;
pub const MAX_AHEAD_MS: u64 = 60 * 1000;
/// `service` when a pushed event names none.
pub const DEFAULT_SERVICE: &str = "external";

/// Why a body was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PushError {
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error(
        "more than {EVENTS_PER_SECOND} breaker events per second (burst {EVENT_BURST}); slow down"
    )]
    RateLimited,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> PushError {
    PushError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// A token bucket: `per_second` tokens a second, at most `burst` saved up.
#[derive(Debug, Clone)]
pub struct RateLimit {
    per_second: f64,
    burst: f64,
    tokens: f64,
    last_ms: Option<u64>,
}

impl RateLimit {
    pub fn new(per_second: f64, burst: f64) -> Self {
        RateLimit {
            per_second,
            burst,
            tokens: burst,
            last_ms: None,
        }
    }

    /// Takes `count` tokens at `now_ms` if there are that many; all or nothing.
    pub fn admit(&mut self, count: usize, now_ms: u64) -> bool {
        if let Some(last) = self.last_ms {
            let elapsed_s = now_ms.saturating_sub(last) as f64 / 1000.0;
            self.tokens = (self.tokens + elapsed_s * self.per_second).min(self.burst);
        }
        self.last_ms = Some(self.last_ms.map_or(now_ms, |last| last.max(now_ms)));
        if self.tokens >= count as f64 {
            self.tokens -= count as f64;
            true
        } else {
            false
        }
    }
}

/// One pushed event, checked.
#[derive(Debug, Clone, PartialEq)]
struct Pushed {
    service: String,
    breaker: String,
    from: Option<State>,
    to: State,
    at_ms: u64,
    reason: Reason,
    source: String,
}

fn name_field(
    object: &serde_json::Map<String, Value>,
    field: &str,
    prefix: &str,
) -> Result<Option<String>, PushError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => {
            let text = text.trim();
            if text.is_empty() || text.chars().count() > MAX_NAME_CHARS {
                return Err(invalid(
                    format!("{prefix}{field}"),
                    format!("must be 1 to {MAX_NAME_CHARS} characters"),
                ));
            }
            Ok(Some(text.to_owned()))
        }
        Some(other) => Err(invalid(
            format!("{prefix}{field}"),
            format!("expected a string, got {other}"),
        )),
    }
}

fn state_field(
    object: &serde_json::Map<String, Value>,
    field: &str,
    prefix: &str,
) -> Result<Option<State>, PushError> {
    match name_field(object, field, prefix)? {
        None => Ok(None),
        Some(name) => foreign_state(&name).map(Some).ok_or_else(|| {
            invalid(
                format!("{prefix}{field}"),
                format!("`{name}` is not a breaker state (closed, open, half_open)"),
            )
        }),
    }
}

const KNOWN_FIELDS: [&str; 7] = [
    "service", "breaker", "from", "to", "at_ms", "reason", "source",
];

fn parse_event(value: &Value, prefix: &str, now_ms: u64) -> Result<Pushed, PushError> {
    let Value::Object(object) = value else {
        return Err(invalid(
            prefix.trim_end_matches('.').to_owned().max("body".into()),
            "expected an object like {\"breaker\": \"payments\", \"to\": \"open\"}",
        ));
    };
    if let Some(unknown) = object
        .keys()
        .find(|key| !KNOWN_FIELDS.contains(&key.as_str()))
    {
        return Err(invalid(
            format!("{prefix}{unknown}"),
            format!("unknown field; known: {}", KNOWN_FIELDS.join(", ")),
        ));
    }
    let breaker = name_field(object, "breaker", prefix)?
        .ok_or_else(|| invalid(format!("{prefix}breaker"), "missing"))?;
    let to = state_field(object, "to", prefix)?
        .ok_or_else(|| invalid(format!("{prefix}to"), "missing"))?;
    let from = state_field(object, "from", prefix)?;
    let at_ms = match object.get("at_ms") {
        None | Some(Value::Null) => now_ms,
        Some(value) => {
            let at = value.as_u64().ok_or_else(|| {
                invalid(
                    format!("{prefix}at_ms"),
                    "expected Unix milliseconds (a whole number)",
                )
            })?;
            if at + MAX_AGE_MS < now_ms || at > now_ms + MAX_AHEAD_MS {
                return Err(invalid(
                    format!("{prefix}at_ms"),
                    format!(
                        "{at} is more than an hour before or a minute after the controller's clock ({now_ms})"
                    ),
                ));
            }
            at
        }
    };
    let reason = match name_field(object, "reason", prefix)? {
        None => Reason::Observed,
        Some(name) => serde_json::from_value(Value::String(name.clone())).map_err(|_| {
            invalid(
                format!("{prefix}reason"),
                format!("`{name}` is not a transition reason of the contract (e.g. consecutive_failures, observed)"),
            )
        })?,
    };
    let source = match name_field(object, "source", prefix)? {
        Some(library) => format!("push:{library}"),
        None => "push".to_owned(),
    };
    // The one service-name rule (a replica's label included: a pushed event may come from one replica).
    let service = match name_field(object, "service", prefix)? {
        Some(name) => ServiceId::new(name)
            .map_err(|error| invalid(format!("{prefix}service"), error.to_string()))?
            .into_string(),
        None => DEFAULT_SERVICE.into(),
    };
    Ok(Pushed {
        service,
        breaker,
        from,
        to,
        at_ms,
        reason,
        source,
    })
}

/// Checks a whole body; the events in it, in order.
fn parse_body(body: &str, now_ms: u64) -> Result<Vec<Pushed>, PushError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(invalid(
            "body",
            format!("larger than {MAX_BODY_BYTES} bytes"),
        ));
    }
    let value: Value = serde_json::from_str(body)
        .map_err(|error| invalid("body", format!("malformed JSON: {error}")))?;
    match &value {
        Value::Array(events) => {
            if events.is_empty() || events.len() > MAX_EVENTS_PER_BODY {
                return Err(invalid(
                    "body",
                    format!(
                        "an array of 1 to {MAX_EVENTS_PER_BODY} events, got {}",
                        events.len()
                    ),
                ));
            }
            events
                .iter()
                .enumerate()
                .map(|(i, event)| parse_event(event, &format!("events[{i}]."), now_ms))
                .collect()
        }
        single => Ok(vec![parse_event(single, "", now_ms)?]),
    }
}

/// What one body did.
#[derive(Debug, Clone, PartialEq)]
pub struct Ingested {
    /// Transitions taken, in the body's order.
    pub events: Vec<TransitionEvent>,
    /// Events that named the state the breaker was already in (no transition).
    pub unchanged: usize,
}

struct InboxState {
    limit: RateLimit,
    /// Latest state and seq per (service, breaker).
    known: BTreeMap<(String, String), (State, u64)>,
}

/// Takes pushed events and fans them out to subscribers. Cheap to clone.
#[derive(Clone)]
pub struct PushInbox {
    state: Arc<Mutex<InboxState>>,
    sender: broadcast::Sender<TransitionEvent>,
}

impl std::fmt::Debug for PushInbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushInbox").finish_non_exhaustive()
    }
}

impl Default for PushInbox {
    fn default() -> Self {
        PushInbox::new(RateLimit::new(EVENTS_PER_SECOND, EVENT_BURST))
    }
}

impl PushInbox {
    pub fn new(limit: RateLimit) -> Self {
        PushInbox {
            state: Arc::new(Mutex::new(InboxState {
                limit,
                known: BTreeMap::new(),
            })),
            sender: broadcast::channel(4_096).0,
        }
    }

    /// Every event taken from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<TransitionEvent> {
        self.sender.subscribe()
    }

    /// Checks `body` as received at `now_ms`, takes its events and sends every transition to the subscribers.
    /// A refused body changes nothing.
    pub fn ingest(&self, body: &str, now_ms: u64) -> Result<Ingested, PushError> {
        let pushed = parse_body(body, now_ms)?;
        let mut state = self.state.lock();
        let new_breakers = pushed
            .iter()
            .filter(|p| {
                !state
                    .known
                    .contains_key(&(p.service.clone(), p.breaker.clone()))
            })
            .count();
        if state.known.len() + new_breakers > MAX_BREAKERS {
            return Err(invalid(
                "breaker",
                format!("more than {MAX_BREAKERS} distinct breakers pushed"),
            ));
        }
        if !state.limit.admit(pushed.len(), now_ms) {
            return Err(PushError::RateLimited);
        }
        let mut ingested = Ingested {
            events: Vec::new(),
            unchanged: 0,
        };
        for event in pushed {
            let key = (event.service.clone(), event.breaker.clone());
            let (last, seq) = state.known.get(&key).copied().unwrap_or((State::Closed, 0));
            let from = event.from.unwrap_or(last);
            if from == event.to {
                ingested.unchanged += 1;
                continue;
            }
            state.known.insert(key, (event.to, seq + 1));
            ingested.events.push(TransitionEvent {
                service: event.service,
                breaker: event.breaker,
                from,
                to: event.to,
                reason: event.reason,
                detail: TransitionDetail::default(),
                at_ms: event.at_ms,
                seq: seq + 1,
                shadow: false,
                source: Some(event.source),
            });
        }
        drop(state);
        for event in &ingested.events {
            // An error only means nobody listens right now.
            let _ = self.sender.send(event.clone());
        }
        Ok(ingested)
    }
}

#[cfg(test)]
mod tests;
