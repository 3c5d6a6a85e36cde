//! Breakers Tolerant did not write: their state, read from a Prometheus exposition ([`scraped`]; the observer
//! scrapes it, [`crate::observe`]) or pushed by a
//! listener hook ([`push`]), becomes Tolerant's transition events (the contract's JSON, reason `observed` unless
//! the pusher names one, and a `source` field), so they land on the same timeline and count in opens and time
//! open like the testbed's own. How well each scraped source was seen during a run is its [`health`].

pub mod health;
pub mod push;
pub mod scraped;

use breaker::State;

pub use health::{BlindPeriod, MAX_BLIND_PERIODS, ScrapeTally, SourceHealth};
pub use push::{Ingested, PushError, PushInbox, RateLimit};
pub use scraped::{MAX_BREAKERS_PER_SOURCE, ScrapedBreakers, StateMapping};

/// A state as other breaker libraries spell it, case and `-`/`_`/space insensitive: `closed`, `open`,
/// `half_open`/`half-open`/`HalfOpen`; Resilience4j's `forced_open` and Polly's `Isolated` read as open, its
/// `disabled` and `metrics_only` (calls pass, nothing is rejected) as closed.
pub fn foreign_state(name: &str) -> Option<State> {
    let folded: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    Some(match folded.as_str() {
        "closed" | "disabled" | "metricsonly" => State::Closed,
        "open" | "forcedopen" | "isolated" => State::Open,
        "halfopen" => State::HalfOpen,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_libraries_state_names_are_read() {
        for (name, state) in [
            ("closed", State::Closed),
            ("CLOSED", State::Closed),
            ("open", State::Open),
            ("half-open", State::HalfOpen),
            ("half_open", State::HalfOpen),
            ("HalfOpen", State::HalfOpen),
            ("FORCED_OPEN", State::Open),
            ("Isolated", State::Open),
            ("disabled", State::Closed),
            ("METRICS_ONLY", State::Closed),
        ] {
            assert_eq!(foreign_state(name), Some(state), "{name}");
        }
        assert_eq!(foreign_state("opened"), None);
        assert_eq!(foreign_state(""), None);
    }
}
