//! Transition events (the wire shape of docs/wire.md) and the sinks that receive them.
//!
//! Sinks are called in `seq` order per breaker; a [`NoopSink`] is a call to an empty function on a path that only
//! runs at a transition, so observing costs nothing on the call path.

use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::config::Mode;
use crate::state::State;

/// Why the breaker moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Closed → Open: `consecutive_failures` failures in a row.
    ConsecutiveFailures,
    /// Closed → Open: failure rate over the window reached the threshold.
    FailureRate,
    /// Closed → Open: failure rate over the last calls reached the threshold.
    LastCallsFailureRate,
    /// Closed → Open: slow-call rate over the window reached the threshold.
    SlowCallRate,
    /// Open → HalfOpen: the open window ended.
    CooldownElapsed,
    /// HalfOpen → Open: a probe failed.
    ProbeFailed,
    /// HalfOpen → Closed: enough probes succeeded.
    ProbesSucceeded,
    /// Operator action: forced-open mode, or a reset.
    Forced,
    /// A new config changed the mode.
    ConfigChanged,
    /// Seen from outside: a breaker this crate did not run (another library's, through its exporter or
    /// listener) was found in a new state; the cause is that breaker's own.
    Observed,
}

impl Reason {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ConsecutiveFailures => "consecutive_failures",
            Reason::FailureRate => "failure_rate",
            Reason::LastCallsFailureRate => "last_calls_failure_rate",
            Reason::SlowCallRate => "slow_call_rate",
            Reason::CooldownElapsed => "cooldown_elapsed",
            Reason::ProbeFailed => "probe_failed",
            Reason::ProbesSucceeded => "probes_succeeded",
            Reason::Forced => "forced",
            Reason::ConfigChanged => "config_changed",
            Reason::Observed => "observed",
        }
    }
}

/// The counts behind a transition; only the fields that matter for its reason are present in the JSON object.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransitionDetail {
    /// Consecutive failures, or failures in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<u64>,
    /// Slow calls in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow: Option<u64>,
    /// Calls (successes + failures) in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls: Option<u64>,
    /// The observed rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// The configured threshold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<f64>,
    /// The window length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_ms: Option<u64>,
    /// The window length in calls (a window of the last calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_calls: Option<u64>,
    /// Probe successes (half-open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successes: Option<u64>,
    /// Trips without a close so far (backoff exponent + 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trips: Option<u32>,
    /// Length of the open window just started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_ms: Option<u64>,
    /// The new mode (config changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<Mode>,
    /// Set when the transition is a reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset: Option<bool>,
}

/// One transition, as sent on `/_breakers/stream` and stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransitionEvent {
    /// The service the breaker lives in.
    pub service: String,
    /// The breaker's name, `caller->dependency`.
    pub breaker: String,
    /// State before.
    pub from: State,
    /// State after.
    pub to: State,
    /// Why.
    pub reason: Reason,
    /// The counts behind it.
    pub detail: TransitionDetail,
    /// Wall-clock milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// 1, 2, 3… per breaker, in transition order.
    pub seq: u64,
    /// Made in shadow mode: what the breaker would have done.
    pub shadow: bool,
    /// Where the event came from when it is not this crate's breaker (e.g. `prometheus:http://…/metrics`,
    /// `push`); absent for this crate's own events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Receives every transition. Called in `seq` order, by one thread at a time per breaker, outside the breaker's
/// locks (it may look at or act on the breaker). Keep it quick: the thread delivering is a caller of the breaker.
pub trait EventSink: Send + Sync + 'static {
    /// One transition.
    fn emit(&self, event: &TransitionEvent);
}

/// Drops events.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopSink;

impl EventSink for NoopSink {
    #[inline]
    fn emit(&self, _event: &TransitionEvent) {}
}

/// Keeps every event in memory (tests, simulations).
#[derive(Debug, Default)]
pub struct MemorySink {
    events: Mutex<Vec<TransitionEvent>>,
}

impl MemorySink {
    /// An empty sink.
    pub fn new() -> Arc<Self> {
        Arc::new(MemorySink::default())
    }

    /// A copy of the events so far.
    pub fn events(&self) -> Vec<TransitionEvent> {
        self.events.lock().clone()
    }

    /// Take the events so far.
    pub fn take(&self) -> Vec<TransitionEvent> {
        std::mem::take(&mut *self.events.lock())
    }
}

impl EventSink for MemorySink {
    fn emit(&self, event: &TransitionEvent) {
        self.events.lock().push(event.clone());
    }
}

/// Forwards events to a tokio broadcast channel (subscribers that lag lose the oldest events; no subscriber is fine).
#[cfg(feature = "tokio")]
#[derive(Debug, Clone)]
pub struct BroadcastSink {
    sender: tokio::sync::broadcast::Sender<TransitionEvent>,
}

#[cfg(feature = "tokio")]
impl BroadcastSink {
    /// A sink with a fresh channel holding up to `capacity` undelivered events per subscriber.
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = tokio::sync::broadcast::channel(capacity.max(1));
        BroadcastSink { sender }
    }

    /// A sink sending into an existing channel.
    pub fn from_sender(sender: tokio::sync::broadcast::Sender<TransitionEvent>) -> Self {
        BroadcastSink { sender }
    }

    /// A new receiver of every later event.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<TransitionEvent> {
        self.sender.subscribe()
    }

    /// The underlying sender.
    pub fn sender(&self) -> &tokio::sync::broadcast::Sender<TransitionEvent> {
        &self.sender
    }
}

#[cfg(feature = "tokio")]
impl EventSink for BroadcastSink {
    fn emit(&self, event: &TransitionEvent) {
        // An error only means nobody is subscribed right now.
        let _ = self.sender.send(event.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_json_has_the_design_shape() {
        let event = TransitionEvent {
            service: "frontend".into(),
            breaker: "frontend->checkout".into(),
            from: State::Closed,
            to: State::Open,
            reason: Reason::ConsecutiveFailures,
            detail: TransitionDetail {
                failures: Some(5),
                ..TransitionDetail::default()
            },
            at_ms: 1_732_896_000_123,
            seq: 42,
            shadow: false,
            source: None,
        };
        let json = serde_json::to_string(&event).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"service":"frontend","breaker":"frontend->checkout","from":"closed","to":"open","reason":"consecutive_failures","detail":{"failures":5},"at_ms":1732896000123,"seq":42,"shadow":false}"#
        );
        let back: TransitionEvent = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back, event);
        let half: State = serde_json::from_str("\"half_open\"").expect("state");
        assert_eq!(half, State::HalfOpen);
    }

    #[test]
    fn a_foreign_event_names_its_source() {
        let event = TransitionEvent {
            service: "shop".into(),
            breaker: "payments".into(),
            from: State::Closed,
            to: State::Open,
            reason: Reason::Observed,
            detail: TransitionDetail::default(),
            at_ms: 7,
            seq: 1,
            shadow: false,
            source: Some("push".into()),
        };
        let json = serde_json::to_string(&event).unwrap_or_default();
        assert!(
            json.ends_with(r#""reason":"observed","detail":{},"at_ms":7,"seq":1,"shadow":false,"source":"push"}"#),
            "{json}"
        );
        let back: TransitionEvent = serde_json::from_str(&json).expect("round trip");
        assert_eq!(back, event);
    }
}
