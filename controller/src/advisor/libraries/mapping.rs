//! The checks and conversions several libraries share: the one detector a single-rule library needs, a fixed
//! open window, one probe, a config built from a library's settings, carried settings, whole milliseconds.

use std::time::Duration;

use breaker::BreakerConfig;

use super::model::LibraryError;

/// The one detector a library with a single trip rule needs, or an error naming the config's other detectors.
pub(crate) enum OneDetector<'a> {
    Consecutive(u32),
    FailureRate(&'a breaker::FailureRateConfig),
    LastCalls(&'a breaker::LastCallsConfig),
}

pub(crate) fn one_detector(config: &BreakerConfig) -> Result<OneDetector<'_>, LibraryError> {
    let trip = config.trip();
    let mut found = Vec::new();
    if let Some(k) = trip.consecutive_failures() {
        found.push(("trip.consecutive_failures", OneDetector::Consecutive(k)));
    }
    if let Some(rate) = trip.failure_rate() {
        found.push(("trip.failure_rate", OneDetector::FailureRate(rate)));
    }
    if let Some(last) = trip.last_calls() {
        found.push(("trip.last_calls", OneDetector::LastCalls(last)));
    }
    if trip.slow_call().is_some() && found.is_empty() {
        return Err(LibraryError::new(
            "trip.slow_call",
            "this library has no slow-call detector of its own",
        ));
    }
    if found.len() > 1 {
        return Err(LibraryError::new(
            found[1].0,
            format!(
                "this library has one trip rule; {} is already it",
                found[0].0
            ),
        ));
    }
    found
        .pop()
        .map(|(_, detector)| detector)
        .ok_or_else(|| LibraryError::new("trip", "no detector"))
}

/// A fixed open window (no backoff, no jitter) in enforce mode, or an error naming what the library lacks.
pub(crate) fn fixed_open_enforcing(config: &BreakerConfig) -> Result<Duration, LibraryError> {
    if config.mode() != breaker::Mode::Enforce {
        return Err(LibraryError::new(
            "mode",
            format!(
                "`{}` has no counterpart in this library's config",
                config.mode().as_str()
            ),
        ));
    }
    if config.open().backoff() > 1.0 {
        return Err(LibraryError::new(
            "open.backoff",
            "this library's open window is fixed",
        ));
    }
    if config.open().jitter() > 0.0 {
        return Err(LibraryError::new(
            "open.jitter",
            "this library's open window has no jitter",
        ));
    }
    Ok(config.open().base())
}

/// One probe that closes on its success, or an error naming what the library lacks.
pub(crate) fn single_probe(config: &BreakerConfig) -> Result<(), LibraryError> {
    if config.half_open().probes() != breaker::Probes::limited(1).unwrap_or_default() {
        return Err(LibraryError::new(
            "half_open.probes",
            "this library lets one call through when half-open",
        ));
    }
    Ok(())
}

/// One probe whose success closes (Polly's, opossum's half-open), or an error naming what the library lacks.
pub(crate) fn one_probe_closing(config: &BreakerConfig, library: &str) -> Result<(), LibraryError> {
    single_probe(config)?;
    if config.half_open().successes_to_close() != 1 {
        return Err(LibraryError::new(
            "half_open.successes_to_close",
            format!("{library} closes on one successful probe"),
        ));
    }
    Ok(())
}

/// The config's one detector when it is a failure rate over a time window (what a ratio-only library has), or
/// an error naming `trip` with `what` the library trips on.
pub(crate) fn only_failure_rate<'c>(
    config: &'c BreakerConfig,
    what: &str,
) -> Result<&'c breaker::FailureRateConfig, LibraryError> {
    match one_detector(config)? {
        OneDetector::FailureRate(rate) => Ok(rate),
        _ => Err(LibraryError::new(
            "trip",
            format!("{what} only (trip.failure_rate)"),
        )),
    }
}

/// The config's failure-rate detector (what an export of a ratio-only library writes).
pub(crate) fn failure_rate(
    config: &BreakerConfig,
) -> Result<&breaker::FailureRateConfig, LibraryError> {
    config
        .trip()
        .failure_rate()
        .ok_or_else(|| LibraryError::new("trip", "no failure rate"))
}

/// The checked config of an import: `trip`, a fixed open window of `base`, `probes` at once and `successes`
/// to close, in `mode`; an error names the config's field.
pub(crate) fn built(
    mode: breaker::Mode,
    trip: breaker::RawTripConfig,
    base: Duration,
    probes: u32,
    successes: u32,
) -> Result<BreakerConfig, LibraryError> {
    let mut raw = breaker::RawBreakerConfig {
        mode,
        trip,
        ..breaker::RawBreakerConfig::default()
    };
    raw.open.base = base;
    raw.open.max = base;
    raw.half_open.probes = breaker::Probes::limited(probes).unwrap_or_default();
    raw.half_open.successes_to_close = successes;
    raw.build()
        .map_err(|e| LibraryError::new(e.field, e.message))
}

/// The carried setting `key`, if any.
pub(crate) fn carried<'a>(carried: &'a [(String, String)], key: &str) -> Option<&'a str> {
    carried
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// A duration in whole milliseconds, or an error naming `field`.
pub(crate) fn whole_ms(field: &str, duration: Duration) -> Result<u64, LibraryError> {
    if duration.subsec_nanos() % 1_000_000 != 0 {
        return Err(LibraryError::new(
            field,
            "this library counts whole milliseconds",
        ));
    }
    u64::try_from(duration.as_millis()).map_err(|_| LibraryError::new(field, "too long"))
}

/// A percentage as the text a config would hold (`50`, `12.5`).
pub(crate) fn number_text(value: f64) -> String {
    if (value - value.round()).abs() < 1e-9 {
        format!("{}", value.round() as i64)
    } else {
        let text = format!("{value:.6}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}
