//! Scrape diffing: Resilience4j state series, gauges, opossum's counters replayed, a breaker first seen open,
//! the bound on breakers followed.

use super::*;
use crate::exposition::parse_exposition;

fn r4j(name: &str, state: &str) -> String {
    ["closed", "open", "half_open", "disabled", "forced_open"]
        .iter()
        .map(|s| {
            format!(
                "resilience4j_circuitbreaker_state{{name=\"{name}\",state=\"{s}\",}} {}\n",
                if *s == state { "1.0" } else { "0.0" }
            )
        })
        .collect()
}

fn transitions(events: &[TransitionEvent]) -> Vec<(String, State, State, u64, u64)> {
    events
        .iter()
        .map(|e| (e.breaker.clone(), e.from, e.to, e.at_ms, e.seq))
        .collect()
}

#[test]
fn resilience4j_state_series_become_transitions_after_a_baseline() {
    let mut observer = ScrapedBreakers::new(StateMapping::resilience4j(), "shop", "prometheus:x");
    let scrape = |a: &str, b: &str| parse_exposition(&(r4j("a", a) + &r4j("b", b)));
    // The baseline: a closed makes no event, b already open makes one.
    assert_eq!(
        transitions(&observer.observe(&scrape("closed", "open"), 1_000)),
        vec![("b".into(), State::Closed, State::Open, 1_000, 1)]
    );
    assert!(
        observer
            .observe(&scrape("closed", "open"), 1_250)
            .is_empty()
    );
    let events = observer.observe(&scrape("open", "half_open"), 1_500);
    assert_eq!(
        transitions(&events),
        vec![
            ("a".into(), State::Closed, State::Open, 1_500, 1),
            ("b".into(), State::Open, State::HalfOpen, 1_500, 2),
        ]
    );
    assert_eq!(events[0].reason, Reason::Observed);
    assert_eq!(events[0].service, "shop");
    assert_eq!(events[0].source.as_deref(), Some("prometheus:x"));
    // forced_open reads as open: no change for a; disabled reads as closed.
    let events = observer.observe(&scrape("forced_open", "disabled"), 1_750);
    assert_eq!(
        transitions(&events),
        vec![("b".into(), State::HalfOpen, State::Closed, 1_750, 3)]
    );
    let states: Vec<(&str, State)> = observer.states().collect();
    assert_eq!(states, vec![("a", State::Open), ("b", State::Closed)]);
}

/// An observer of the gauge `breaker_state{breaker=…}` with the default state values.
fn gauge_observer() -> ScrapedBreakers {
    let mapping = StateMapping::Value {
        metric: "breaker_state".into(),
        breaker_label: "breaker".into(),
        values: StateMapping::default_values(),
    };
    ScrapedBreakers::new(mapping, "svc", "prometheus:y")
}

#[test]
fn a_gauge_value_codes_the_state() {
    let mut observer = gauge_observer();
    let scrape = |v: &str| {
        parse_exposition(&format!(
            "breaker_state{{breaker=\"db\"}} {v}\nother_metric{{breaker=\"db\"}} 1\n"
        ))
    };
    assert!(observer.observe(&scrape("0"), 0).is_empty());
    let opened = observer.observe(&scrape("1"), 250);
    let unknown_value = observer.observe(&scrape("7"), 500);
    let half = observer.observe(&scrape("2"), 750);
    assert_eq!(
        transitions(&opened),
        vec![("db".into(), State::Closed, State::Open, 250, 1)]
    );
    assert!(unknown_value.is_empty());
    assert_eq!(
        transitions(&half),
        vec![("db".into(), State::Open, State::HalfOpen, 750, 2)]
    );
}

#[test]
fn opossum_counters_replay_the_transitions_between_scrapes() {
    let mut observer = ScrapedBreakers::new(StateMapping::opossum(""), "node", "prometheus:z");
    let scrape = |open: u32, half: u32, close: u32| {
        parse_exposition(&format!(
            "circuit{{name=\"pay\",event=\"fire\"}} 100\n\
             circuit{{name=\"pay\",event=\"open\"}} {open}\n\
             circuit{{name=\"pay\",event=\"halfOpen\"}} {half}\n\
             circuit{{name=\"pay\",event=\"close\"}} {close}\n"
        ))
    };
    // Baseline: one full cycle done, then opened again: the breaker is open now, and says so once.
    assert_eq!(
        transitions(&observer.observe(&scrape(2, 1, 1), 0)),
        vec![("pay".into(), State::Closed, State::Open, 0, 1)]
    );
    assert_eq!(observer.states().next(), Some(("pay", State::Open)));
    // Between two scrapes: half-open, a failed probe, half-open, another failed probe.
    let events = observer.observe(&scrape(4, 3, 1), 1_000);
    let path: Vec<(State, State)> = events.iter().map(|e| (e.from, e.to)).collect();
    assert_eq!(
        path,
        vec![
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Open),
        ]
    );
    // Then a probe that passed.
    let events = observer.observe(&scrape(4, 4, 2), 1_250);
    let path: Vec<(State, State, u64)> = events.iter().map(|e| (e.from, e.to, e.seq)).collect();
    assert_eq!(
        path,
        vec![
            (State::Open, State::HalfOpen, 6),
            (State::HalfOpen, State::Closed, 7)
        ]
    );
    // A counter reset (the service restarted) is a new baseline, not a transition.
    assert!(observer.observe(&scrape(0, 0, 0), 2_000).is_empty());
    let events = observer.observe(&scrape(1, 0, 0), 3_000);
    assert_eq!(
        transitions(&events),
        vec![("pay".into(), State::Closed, State::Open, 3_000, 8)]
    );
}

#[test]
fn a_breaker_first_seen_open_or_half_open_is_a_transition_at_that_scrape() {
    let mut observer = gauge_observer();
    let scrape = |lines: &[(&str, u8)]| {
        let text: String = lines
            .iter()
            .map(|(name, v)| format!("breaker_state{{breaker=\"{name}\"}} {v}\n"))
            .collect();
        parse_exposition(&text)
    };
    let first = observer.observe(&scrape(&[("db", 2), ("cache", 0)]), 5_000);
    assert_eq!(
        transitions(&first),
        vec![("db".into(), State::Closed, State::HalfOpen, 5_000, 1)]
    );
    assert_eq!(first[0].reason, Reason::Observed);
    // A breaker that shows up only in a later scrape, open: found open at that scrape.
    let later = observer.observe(&scrape(&[("db", 2), ("cache", 0), ("queue", 1)]), 5_250);
    assert_eq!(
        transitions(&later),
        vec![("queue".into(), State::Closed, State::Open, 5_250, 1)]
    );
    // Seen again in the same state: nothing more.
    assert!(
        observer
            .observe(&scrape(&[("db", 2), ("cache", 0), ("queue", 1)]), 5_500)
            .is_empty()
    );
}

#[test]
fn the_number_of_breakers_followed_is_bounded() {
    let mut observer = ScrapedBreakers::new(StateMapping::resilience4j(), "s", "p");
    let many: String = (0..MAX_BREAKERS_PER_SOURCE + 5)
        .map(|i| r4j(&format!("b{i}"), "closed"))
        .collect();
    observer.observe(&parse_exposition(&many), 0);
    assert_eq!(observer.states().count(), MAX_BREAKERS_PER_SOURCE);
    assert_eq!(observer.ignored(), 5, "the ones left out are counted");
    observer.observe(&parse_exposition(&r4j("b0", "open")), 1_000);
    assert_eq!(
        observer.ignored(),
        0,
        "a scrape within the cap leaves none out"
    );
}
