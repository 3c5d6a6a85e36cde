//! Writing a breaker config as Resilience4j's Spring properties, and what of a config Resilience4j can express.

use breaker::{BreakerConfig, Mode, Probes};

use super::super::mapping::{OneDetector, carried, number_text, one_detector};
use super::super::model::{Exported, FieldNote, LibraryError, NoteKind};
use super::super::text::spring_duration_text;

pub(crate) fn expresses(config: &BreakerConfig) -> Result<(), LibraryError> {
    let detector = one_detector(config).or_else(|error| {
        // A slow-call detector rides on a time window's failure rate of the same window.
        match (config.trip().failure_rate(), config.trip().slow_call()) {
            (Some(rate), Some(slow)) if config.trip().consecutive_failures().is_none() && config.trip().last_calls().is_none() => {
                if slow.window() != rate.window() || slow.min_calls() != rate.min_calls() {
                    return Err(LibraryError::new(
                        "trip.slow_call.window",
                        "Resilience4j counts slow calls in the failure rate's own window: same window and min_calls",
                    ));
                }
                Ok(OneDetector::FailureRate(rate))
            }
            _ => Err(error),
        }
    })?;
    if config.trip().slow_call().is_some() && config.trip().failure_rate().is_none() {
        return Err(LibraryError::new(
            "trip.slow_call",
            "Resilience4j counts slow calls only beside a TIME_BASED failure rate here",
        ));
    }
    let min_calls = match detector {
        OneDetector::Consecutive(k) => u64::from(k),
        OneDetector::LastCalls(last) => u64::from(last.min_calls()),
        OneDetector::FailureRate(rate) => {
            if rate.window().subsec_nanos() != 0 {
                return Err(LibraryError::new(
                    "trip.failure_rate.window",
                    "a TIME_BASED window is a whole number of seconds",
                ));
            }
            u64::from(rate.min_calls())
        }
    };
    if config.open().backoff() > 1.0 && config.open().jitter() > 0.0 {
        return Err(LibraryError::new(
            "open.jitter",
            "Resilience4j refuses exponential backoff and a randomized wait together",
        ));
    }
    if config.mode() != Mode::Enforce {
        return Err(LibraryError::new(
            "mode",
            "only enforce is written (initialState: CLOSED)",
        ));
    }
    let Probes::Limited(probes) = config.half_open().probes() else {
        return Err(LibraryError::new(
            "half_open.probes",
            "Resilience4j permits a number of calls in half-open, not every caller",
        ));
    };
    let expected = min_calls.min(u64::from(probes.get())).max(1);
    if u64::from(config.half_open().successes_to_close()) != expected {
        return Err(LibraryError::new(
            "half_open.successes_to_close",
            format!(
                "Resilience4j decides after min(minimumNumberOfCalls, permitted calls) = {expected} half-open calls"
            ),
        ));
    }
    Ok(())
}

pub(crate) fn export(
    config: &BreakerConfig,
    name: &str,
    kept: &[(String, String)],
) -> Result<Exported, LibraryError> {
    let mut lines: Vec<(String, String)> = Vec::new();
    let mut notes = Vec::new();
    let trip = config.trip();
    let (min_calls, count_based) = if let Some(k) = trip.consecutive_failures() {
        lines.push(("slidingWindowType".into(), "COUNT_BASED".into()));
        lines.push(("slidingWindowSize".into(), k.to_string()));
        lines.push(("minimumNumberOfCalls".into(), k.to_string()));
        lines.push(("failureRateThreshold".into(), "100".into()));
        notes.push(FieldNote::new(
            "trip.consecutive_failures",
            NoteKind::Same,
            format!("a COUNT_BASED window of {k} calls that trips at 100 %: the last {k} calls all failed"),
        ));
        (u64::from(k), true)
    } else if let Some(last) = trip.last_calls() {
        lines.push(("slidingWindowType".into(), "COUNT_BASED".into()));
        lines.push(("slidingWindowSize".into(), last.calls().to_string()));
        lines.push(("minimumNumberOfCalls".into(), last.min_calls().to_string()));
        lines.push((
            "failureRateThreshold".into(),
            number_text(last.threshold() * 100.0),
        ));
        (u64::from(last.min_calls()), true)
    } else if let Some(rate) = trip.failure_rate() {
        lines.push(("slidingWindowType".into(), "TIME_BASED".into()));
        lines.push((
            "slidingWindowSize".into(),
            rate.window().as_secs().to_string(),
        ));
        lines.push(("minimumNumberOfCalls".into(), rate.min_calls().to_string()));
        lines.push((
            "failureRateThreshold".into(),
            number_text(rate.threshold() * 100.0),
        ));
        if let Some(slow) = trip.slow_call() {
            lines.push((
                "slowCallRateThreshold".into(),
                number_text(slow.rate() * 100.0),
            ));
            lines.push((
                "slowCallDurationThreshold".into(),
                spring_duration_text(slow.duration()),
            ));
        }
        (u64::from(rate.min_calls()), false)
    } else {
        return Err(LibraryError::new(
            "trip",
            "no detector Resilience4j can write",
        ));
    };
    let _ = count_based;
    let open = config.open();
    lines.push((
        "waitDurationInOpenState".into(),
        spring_duration_text(open.base()),
    ));
    if open.backoff() > 1.0 {
        lines.push(("enableExponentialBackoff".into(), "true".into()));
        lines.push((
            "exponentialBackoffMultiplier".into(),
            number_text(open.backoff()),
        ));
        lines.push((
            "exponentialMaxWaitDurationInOpenState".into(),
            spring_duration_text(open.max()),
        ));
    }
    if open.jitter() > 0.0 {
        lines.push(("enableRandomizedWait".into(), "true".into()));
        lines.push(("randomizedWaitFactor".into(), number_text(open.jitter())));
    }
    let probes = match config.half_open().probes() {
        Probes::Limited(n) => n.get(),
        Probes::All => 1,
    };
    lines.push((
        "permittedNumberOfCallsInHalfOpenState".into(),
        probes.to_string(),
    ));
    notes.push(FieldNote::new(
        "half_open",
        NoteKind::Approximation,
        format!(
            "Resilience4j closes when the failure rate of min({min_calls}, {probes}) half-open calls is below its threshold; Tolerant reopens on the first failed probe"
        ),
    ));
    let instance = carried(kept, "name").unwrap_or(name);
    let mut text = format!("resilience4j.circuitbreaker:\n  instances:\n    {instance}:\n");
    for (key, value) in lines.iter().chain(kept.iter().filter(|(k, _)| k != "name")) {
        text.push_str(&format!("      {key}: {}\n", yaml_scalar(value)));
    }
    Ok(Exported { text, notes })
}

/// A value as a YAML scalar (a list for comma-joined exception classes).
fn yaml_scalar(value: &str) -> String {
    if value.contains(',') {
        let items: Vec<String> = value
            .split(',')
            .map(|v| format!("\n        - {v}"))
            .collect();
        return items.concat();
    }
    value.to_owned()
}
