//! Turns successive scrapes of a foreign breaker's metrics into transition events: each scrape is read into a
//! state per breaker (by a [`StateMapping`]), compared with the state seen before, and every change becomes a
//! [`TransitionEvent`] with reason `observed` and the source's name. Time is an argument: the caller says when
//! the scrape was taken.
//!
//! The first scrape that shows a breaker is its baseline: a breaker found closed makes no event, one found open
//! or half-open makes one `closed → <state>` event at that scrape's time (reason `observed`), so the timeline,
//! the opens and the time open are not blind to a breaker that was open before the run began. A change shorter
//! than the scrape interval is not seen (a gauge) or is seen late (event counters): only what a scrape shows is
//! counted.

use std::collections::BTreeMap;

use breaker::{Reason, State, TransitionDetail, TransitionEvent};

use super::foreign_state;
use crate::exposition::Sample;

/// At most this many breakers are followed per source (a label with an unbounded value set must not grow the
/// controller's memory): a baseline scrape showing more is an error naming the source, and the breakers a later
/// scrape adds beyond are counted ([`ScrapedBreakers::ignored`]) and reported as a failed scrape.
pub const MAX_BREAKERS_PER_SOURCE: usize = 1_000;

/// How a scrape names breakers and codes their states.
#[derive(Debug, Clone, PartialEq)]
pub enum StateMapping {
    /// One series per breaker and state, the current state's at 1 (Resilience4j through Micrometer:
    /// `resilience4j_circuitbreaker_state{name, state}`).
    StateLabel {
        metric: String,
        breaker_label: String,
        state_label: String,
    },
    /// One series per breaker whose value codes the state.
    Value {
        metric: String,
        breaker_label: String,
        values: Vec<(f64, State)>,
    },
    /// A counter per breaker and event, the state following the transitions counted (opossum-prometheus:
    /// `circuit{name, event}` with events `open`, `halfOpen`, `close`).
    EventCounters {
        metric: String,
        breaker_label: String,
        event_label: String,
    },
}

impl StateMapping {
    /// Resilience4j's Micrometer binding.
    pub fn resilience4j() -> Self {
        StateMapping::StateLabel {
            metric: "resilience4j_circuitbreaker_state".into(),
            breaker_label: "name".into(),
            state_label: "state".into(),
        }
    }

    /// opossum-prometheus, with the metric prefix it was given (empty by default).
    pub fn opossum(prefix: &str) -> Self {
        StateMapping::EventCounters {
            metric: format!("{prefix}circuit"),
            breaker_label: "name".into(),
            event_label: "event".into(),
        }
    }

    /// The default value coding of a generic gauge: 0 closed, 1 open, 2 half-open.
    pub fn default_values() -> Vec<(f64, State)> {
        vec![
            (0.0, State::Closed),
            (1.0, State::Open),
            (2.0, State::HalfOpen),
        ]
    }

    pub fn metric(&self) -> &str {
        match self {
            StateMapping::StateLabel { metric, .. }
            | StateMapping::Value { metric, .. }
            | StateMapping::EventCounters { metric, .. } => metric,
        }
    }
}

/// Counts of opossum's transition events.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct EventCounts {
    open: f64,
    half_open: f64,
    close: f64,
}

impl EventCounts {
    fn minus(self, before: EventCounts) -> Option<EventCounts> {
        let delta = EventCounts {
            open: self.open - before.open,
            half_open: self.half_open - before.half_open,
            close: self.close - before.close,
        };
        // A counter that went down was reset (the service restarted): start over from here.
        (delta.open >= 0.0 && delta.half_open >= 0.0 && delta.close >= 0.0).then_some(delta)
    }
}

/// The states a breaker went through, from `state`, to account for `counts` transition events; counts that fit
/// no transition from where the walk is are dropped. At half-open a failed probe (back to open) is taken while
/// more opens than closes are left, since every extra open needs a probe that failed. Counters do not say the
/// order of events within one scrape interval: when opens and closes are even (a close, then a new trip, or a
/// failed probe, then a close) the close is taken first.
fn walk(mut state: State, mut counts: EventCounts) -> Vec<State> {
    let mut states = Vec::new();
    loop {
        let next = match state {
            State::Closed if counts.open >= 1.0 => State::Open,
            State::Open if counts.half_open >= 1.0 => State::HalfOpen,
            State::Open if counts.close >= 1.0 => State::Closed,
            State::HalfOpen if counts.open >= 1.0 && counts.open > counts.close => State::Open,
            State::HalfOpen if counts.close >= 1.0 => State::Closed,
            State::HalfOpen if counts.open >= 1.0 => State::Open,
            _ => return states,
        };
        match next {
            State::Open => counts.open -= 1.0,
            State::HalfOpen => counts.half_open -= 1.0,
            State::Closed => counts.close -= 1.0,
        }
        states.push(next);
        state = next;
    }
}

#[derive(Debug, Clone)]
struct Known {
    state: State,
    seq: u64,
    counts: EventCounts,
}

/// Follows the breakers of one source from scrape to scrape.
#[derive(Debug, Clone)]
pub struct ScrapedBreakers {
    mapping: StateMapping,
    service: String,
    source: String,
    known: BTreeMap<String, Known>,
    /// Breakers of the last scrape left out past [`MAX_BREAKERS_PER_SOURCE`].
    ignored: usize,
}

impl ScrapedBreakers {
    /// `service` is what the events' `service` field says; `source` names the source (`prometheus:<url>`).
    pub fn new(
        mapping: StateMapping,
        service: impl Into<String>,
        source: impl Into<String>,
    ) -> Self {
        ScrapedBreakers {
            mapping,
            service: service.into(),
            source: source.into(),
            known: BTreeMap::new(),
            ignored: 0,
        }
    }

    /// Breakers the last scrape showed beyond [`MAX_BREAKERS_PER_SOURCE`], left out.
    pub fn ignored(&self) -> usize {
        self.ignored
    }

    /// Breakers seen so far and their latest state.
    pub fn states(&self) -> impl Iterator<Item = (&str, State)> {
        self.known
            .iter()
            .map(|(name, known)| (name.as_str(), known.state))
    }

    /// Reads one scrape taken at `at_ms` (Unix milliseconds) and returns the transitions it shows.
    pub fn observe(&mut self, samples: &[Sample], at_ms: u64) -> Vec<TransitionEvent> {
        let mut events = Vec::new();
        self.ignored = 0;
        match &self.mapping {
            StateMapping::EventCounters {
                metric,
                breaker_label,
                event_label,
            } => {
                let mut counts: BTreeMap<String, EventCounts> = BTreeMap::new();
                for sample in samples.iter().filter(|s| &s.name == metric) {
                    let (Some(breaker), Some(event)) =
                        (sample.label(breaker_label), sample.label(event_label))
                    else {
                        continue;
                    };
                    let entry = counts.entry(breaker.to_owned()).or_default();
                    match event {
                        "open" => entry.open = sample.value,
                        "halfOpen" => entry.half_open = sample.value,
                        "close" => entry.close = sample.value,
                        _ => {}
                    }
                }
                for (breaker, now) in counts {
                    let Some((known, new)) = follow(&mut self.known, &breaker, now) else {
                        self.ignored += 1;
                        continue;
                    };
                    let states = match now.minus(known.counts).filter(|_| !new) {
                        Some(delta) => walk(known.state, delta),
                        // New (its counters say where it is now), or a counter went down (the service
                        // restarted): the state the counters lead to from closed.
                        None => {
                            let state = walk(State::Closed, now)
                                .last()
                                .copied()
                                .unwrap_or(State::Closed);
                            if new && state != State::Closed {
                                vec![state]
                            } else {
                                known.state = state;
                                Vec::new()
                            }
                        }
                    };
                    known.counts = now;
                    for to in states {
                        events.push(event_of(
                            &self.service,
                            &self.source,
                            &breaker,
                            known,
                            to,
                            at_ms,
                        ));
                    }
                }
            }
            StateMapping::StateLabel {
                metric,
                breaker_label,
                state_label,
            } => {
                let mut current: BTreeMap<String, State> = BTreeMap::new();
                for sample in samples
                    .iter()
                    .filter(|s| &s.name == metric && s.value >= 0.5)
                {
                    if let (Some(breaker), Some(state)) = (
                        sample.label(breaker_label),
                        sample.label(state_label).and_then(foreign_state),
                    ) {
                        current.entry(breaker.to_owned()).or_insert(state);
                    }
                }
                self.compare(current, at_ms, &mut events);
            }
            StateMapping::Value {
                metric,
                breaker_label,
                values,
            } => {
                let mut current: BTreeMap<String, State> = BTreeMap::new();
                for sample in samples.iter().filter(|s| &s.name == metric) {
                    let state = values
                        .iter()
                        .find(|(value, _)| (value - sample.value).abs() < 1e-9)
                        .map(|(_, state)| *state);
                    if let (Some(breaker), Some(state)) = (sample.label(breaker_label), state) {
                        current.entry(breaker.to_owned()).or_insert(state);
                    }
                }
                self.compare(current, at_ms, &mut events);
            }
        }
        events
    }

    fn compare(
        &mut self,
        current: BTreeMap<String, State>,
        at_ms: u64,
        events: &mut Vec<TransitionEvent>,
    ) {
        for (breaker, state) in current {
            let Some((known, _)) = follow(&mut self.known, &breaker, EventCounts::default()) else {
                self.ignored += 1;
                continue;
            };
            if known.state != state {
                events.push(event_of(
                    &self.service,
                    &self.source,
                    &breaker,
                    known,
                    state,
                    at_ms,
                ));
            }
        }
    }
}

/// The memory of `breaker` and whether it is new (made now, closed, with `counts`); `None` for a breaker past the
/// bound.
fn follow<'a>(
    known: &'a mut BTreeMap<String, Known>,
    breaker: &str,
    counts: EventCounts,
) -> Option<(&'a mut Known, bool)> {
    let new = !known.contains_key(breaker);
    if new {
        if known.len() >= MAX_BREAKERS_PER_SOURCE {
            return None;
        }
        known.insert(
            breaker.to_owned(),
            Known {
                state: State::Closed,
                seq: 0,
                counts,
            },
        );
    }
    known.get_mut(breaker).map(|known| (known, new))
}

/// The event of `known` moving to `to` (updates `known`).
fn event_of(
    service: &str,
    source: &str,
    breaker: &str,
    known: &mut Known,
    to: State,
    at_ms: u64,
) -> TransitionEvent {
    let from = known.state;
    known.state = to;
    known.seq += 1;
    TransitionEvent {
        service: service.to_owned(),
        breaker: breaker.to_owned(),
        from,
        to,
        reason: Reason::Observed,
        detail: TransitionDetail::default(),
        at_ms,
        seq: known.seq,
        shadow: false,
        source: Some(source.to_owned()),
    }
}

#[cfg(test)]
mod tests;
