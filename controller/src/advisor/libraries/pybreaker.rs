//! pybreaker's `CircuitBreaker(...)` call in Python (keyword arguments).
//!
//! Mapping: `fail_max` consecutive failures (a success resets pybreaker's counter) is
//! `trip.consecutive_failures`; `reset_timeout` seconds is `open.base`; pybreaker holds its lock across a call,
//! so half-open lets one call through at a time (its single probe): `half_open.probes = 1`, and
//! `success_threshold` (default 1) successes close it, as `half_open.successes_to_close`.

use std::time::Duration;

use breaker::{BreakerConfig, RawTripConfig};

use super::mapping::{
    OneDetector, built, carried, fixed_open_enforcing, number_text, one_detector, single_probe,
};
use super::model::{Exported, FieldNote, Imported, Library, LibraryError, NoteKind};
use super::text::{enclosed, split_top_level, strip_comments, unquote};

const DEFAULT_FAIL_MAX: u64 = 5;
const DEFAULT_RESET_TIMEOUT_S: f64 = 60.0;
const DEFAULT_SUCCESS_THRESHOLD: u64 = 1;

pub(super) fn import(text: &str) -> Result<Imported, LibraryError> {
    let source = strip_comments(text, true);
    let at = source.find("CircuitBreaker(").ok_or_else(|| {
        LibraryError::new("CircuitBreaker", "no `CircuitBreaker(...)` call found")
    })?;
    let args = enclosed(&source, at + "CircuitBreaker".len())
        .ok_or_else(|| LibraryError::new("CircuitBreaker", "the call's `(` is not closed"))?;
    let (mut fail_max, mut reset_timeout, mut success_threshold) = (
        DEFAULT_FAIL_MAX,
        DEFAULT_RESET_TIMEOUT_S,
        DEFAULT_SUCCESS_THRESHOLD,
    );
    let mut notes = Vec::new();
    let mut carried = Vec::new();
    for arg in split_top_level(args, ',') {
        let (key, value) = arg.split_once('=').ok_or_else(|| {
            LibraryError::new(
                "CircuitBreaker",
                format!("`{arg}`: write settings as keyword arguments"),
            )
        })?;
        let (key, value) = (key.trim(), value.trim());
        match key {
            "fail_max" => fail_max = super::text::whole(key, value, 1, 1_000_000)?,
            "reset_timeout" => {
                reset_timeout = super::text::number(key, value)?;
                if !(0.001..=365.0 * 86_400.0).contains(&reset_timeout) {
                    return Err(LibraryError::new(
                        key,
                        "must be between 0.001 and a year of seconds",
                    ));
                }
            }
            "success_threshold" => {
                success_threshold = super::text::whole(key, value, 1, 1_000_000)?
            }
            "name" => {
                let name = unquote(value).unwrap_or_else(|| value.to_owned());
                carried.push(("name".to_owned(), name));
                notes.push(FieldNote::new(key, NoteKind::Kept, "the breaker's name"));
            }
            "exclude" => {
                carried.push(("exclude".to_owned(), value.to_owned()));
                notes.push(FieldNote::new(
                    key,
                    NoteKind::Approximation,
                    "exceptions that are not failures: the caller's classifier in Tolerant (5xx and timeouts)",
                ));
            }
            "listeners" | "throw_new_error_on_trip" => {
                carried.push((key.to_owned(), value.to_owned()));
                notes.push(FieldNote::new(
                    key,
                    NoteKind::Kept,
                    "not about when the breaker trips or recovers",
                ));
            }
            "state_storage" => {
                carried.push((key.to_owned(), value.to_owned()));
                notes.push(FieldNote::new(
                    key,
                    NoteKind::Approximation,
                    "a shared (Redis) state makes one breaker of every process; the model has one per instance",
                ));
            }
            other => {
                return Err(LibraryError::new(
                    other,
                    "not a pybreaker.CircuitBreaker argument",
                ));
            }
        }
    }
    notes.push(FieldNote::new(
        "fail_max",
        NoteKind::Same,
        format!("trip.consecutive_failures = {fail_max}: a success resets the count, in both"),
    ));
    notes.push(FieldNote::new("reset_timeout", NoteKind::Same, "open.base"));
    notes.push(FieldNote::new(
        "success_threshold",
        NoteKind::Same,
        format!(
            "half_open.successes_to_close = {success_threshold}; pybreaker's lock lets one call through at a time when half-open: half_open.probes = 1"
        ),
    ));
    let trip = RawTripConfig {
        consecutive_failures: Some(fail_max as u32),
        failure_rate: None,
        last_calls: None,
        slow_call: None,
    };
    let config = built(
        breaker::Mode::Enforce,
        trip,
        Duration::from_secs_f64(reset_timeout),
        1,
        success_threshold as u32,
    )?;
    Ok(Imported {
        library: Library::Pybreaker,
        config,
        notes,
        settings: vec![
            ("fail_max".into(), fail_max.to_string()),
            ("reset_timeout".into(), number_text(reset_timeout)),
            ("success_threshold".into(), success_threshold.to_string()),
        ],
        carried,
    })
}

pub(super) fn expresses(config: &BreakerConfig) -> Result<(), LibraryError> {
    let OneDetector::Consecutive(_) = one_detector(config)? else {
        return Err(LibraryError::new(
            "trip",
            "pybreaker trips on consecutive failures only (fail_max)",
        ));
    };
    fixed_open_enforcing(config)?;
    single_probe(config)
}

pub(super) fn export(
    config: &BreakerConfig,
    name: &str,
    kept: &[(String, String)],
) -> Result<Exported, LibraryError> {
    let k = config.trip().consecutive_failures().unwrap_or(1);
    let mut args = vec![
        format!("fail_max={k}"),
        format!(
            "reset_timeout={}",
            number_text(config.open().base().as_secs_f64())
        ),
        format!(
            "success_threshold={}",
            config.half_open().successes_to_close()
        ),
    ];
    for (key, value) in kept {
        if key == "name" {
            continue;
        }
        args.push(format!("{key}={value}"));
    }
    args.push(format!("name={:?}", carried(kept, "name").unwrap_or(name)));
    Ok(Exported {
        text: format!(
            "import pybreaker\n\nbreaker = pybreaker.CircuitBreaker({})\n",
            args.join(", ")
        ),
        notes: Vec::new(),
    })
}
