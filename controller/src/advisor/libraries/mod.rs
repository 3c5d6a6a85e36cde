//! Breaker configs in the vocabulary of the libraries teams use — Resilience4j (Spring Boot's
//! `resilience4j.circuitbreaker` YAML), Polly v8 (`CircuitBreakerStrategyOptions` as JSON), gobreaker (`Settings`
//! in Go), pybreaker (`CircuitBreaker(...)` in Python) and opossum (its options object) — read into Tolerant's
//! [`BreakerConfig`] with a note per field saying how the library's semantics map onto Tolerant's model and where
//! they differ, and written back from one. A field that cannot be modelled is an error naming it; one that can
//! only be approximated says so in its note; none is dropped silently.
//!
//! Each library's module parses its text into the library's own settings (defaults filled in), maps them onto a
//! config, and renders a config (with the settings it carried, such as a name or a call timeout) back as text;
//! `settings` lists the effective settings, so a round trip can be checked field by field.

mod gobreaker;
mod opossum;
mod polly;
mod pybreaker;
mod resilience4j;
mod text;

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use breaker::BreakerConfig;
use serde::Serialize;

/// A library whose breaker configs Tolerant reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Library {
    Resilience4j,
    Polly,
    Gobreaker,
    Pybreaker,
    Opossum,
}

/// How a library's field maps onto Tolerant's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// The same semantics.
    Same,
    /// Modelled, with a stated difference.
    Approximation,
    /// Not about when the breaker trips or recovers (names, health indicators, listeners): kept for export.
    Kept,
}

impl NoteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Same => "same",
            NoteKind::Approximation => "approximation",
            NoteKind::Kept => "kept",
        }
    }
}

/// One field of a library's config and how it maps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldNote {
    pub field: String,
    pub kind: NoteKind,
    pub note: String,
}

impl FieldNote {
    pub fn new(field: impl Into<String>, kind: NoteKind, note: impl Into<String>) -> Self {
        FieldNote {
            field: field.into(),
            kind,
            note: note.into(),
        }
    }
}

/// A library config that cannot be read or written; `Display` names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct LibraryError {
    pub field: String,
    pub message: String,
}

impl LibraryError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        LibraryError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A library config read into Tolerant's model.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub library: Library,
    pub config: BreakerConfig,
    /// Field by field, how it maps.
    pub notes: Vec<FieldNote>,
    /// The library's effective settings (defaults filled in), by field, as text: what a round trip compares.
    pub settings: Vec<(String, String)>,
    /// Settings the config does not hold but an export writes back (a name, a call timeout, health flags).
    pub carried: Vec<(String, String)>,
}

/// A config written in a library's vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub text: String,
    /// How the config's fields map onto the library's.
    pub notes: Vec<FieldNote>,
}

impl Library {
    pub const ALL: [Library; 5] = [
        Library::Resilience4j,
        Library::Polly,
        Library::Gobreaker,
        Library::Pybreaker,
        Library::Opossum,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Library::Resilience4j => "resilience4j",
            Library::Polly => "polly",
            Library::Gobreaker => "gobreaker",
            Library::Pybreaker => "pybreaker",
            Library::Opossum => "opossum",
        }
    }

    /// The file extension an export is written with.
    pub fn extension(self) -> &'static str {
        match self {
            Library::Resilience4j => "yml",
            Library::Polly => "json",
            Library::Gobreaker => "go",
            Library::Pybreaker => "py",
            Library::Opossum => "js",
        }
    }

    /// The library a config file is written for, from its extension and, failing that, its text.
    pub fn recognise(file_name: &str, text: &str) -> Option<Library> {
        let lower = file_name.to_ascii_lowercase();
        let by_extension = [
            (".yml", Library::Resilience4j),
            (".yaml", Library::Resilience4j),
            (".go", Library::Gobreaker),
            (".py", Library::Pybreaker),
            (".js", Library::Opossum),
            (".mjs", Library::Opossum),
            (".ts", Library::Opossum),
        ];
        if let Some((_, library)) = by_extension.iter().find(|(ext, _)| lower.ends_with(ext)) {
            return Some(*library);
        }
        if text.contains("resilience4j") {
            Some(Library::Resilience4j)
        } else if text.contains("gobreaker") {
            Some(Library::Gobreaker)
        } else if text.contains("pybreaker") || text.contains("fail_max") {
            Some(Library::Pybreaker)
        } else if text.contains("errorThresholdPercentage") || text.contains("resetTimeout") {
            Some(Library::Opossum)
        } else if text.contains("FailureRatio") || text.contains("BreakDuration") {
            Some(Library::Polly)
        } else {
            None
        }
    }

    /// Read a config of this library (`instance`: which Resilience4j instance, when the file has several).
    pub fn import(self, text: &str, instance: Option<&str>) -> Result<Imported, LibraryError> {
        match self {
            Library::Resilience4j => resilience4j::import(text, instance),
            Library::Polly => polly::import(text),
            Library::Gobreaker => gobreaker::import(text),
            Library::Pybreaker => pybreaker::import(text),
            Library::Opossum => opossum::import(text),
        }
    }

    /// Whether this library can express `config`; the error names the config's field it cannot.
    pub fn expresses(self, config: &BreakerConfig) -> Result<(), LibraryError> {
        match self {
            Library::Resilience4j => resilience4j::expresses(config),
            Library::Polly => polly::expresses(config),
            Library::Gobreaker => gobreaker::expresses(config),
            Library::Pybreaker => pybreaker::expresses(config),
            Library::Opossum => opossum::expresses(config),
        }
    }

    /// Write `config` in this library's vocabulary, as the breaker named `name`, with the settings `carried`
    /// from an import (a call timeout, health flags); the error names the config's field the library cannot
    /// express.
    pub fn export(
        self,
        config: &BreakerConfig,
        name: &str,
        carried: &[(String, String)],
    ) -> Result<Exported, LibraryError> {
        self.expresses(config)?;
        match self {
            Library::Resilience4j => resilience4j::export(config, name, carried),
            Library::Polly => polly::export(config, name, carried),
            Library::Gobreaker => gobreaker::export(config, name, carried),
            Library::Pybreaker => pybreaker::export(config, name, carried),
            Library::Opossum => opossum::export(config, name, carried),
        }
    }
}

impl fmt::Display for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A library name that is not one of [`Library::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not one of resilience4j, polly, gobreaker, pybreaker, opossum")]
pub struct UnknownLibrary(pub String);

impl FromStr for Library {
    type Err = UnknownLibrary;
    fn from_str(text: &str) -> Result<Self, UnknownLibrary> {
        Library::ALL
            .into_iter()
            .find(|l| l.as_str() == text.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownLibrary(text.to_owned()))
    }
}

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

#[cfg(test)]
mod tests;
