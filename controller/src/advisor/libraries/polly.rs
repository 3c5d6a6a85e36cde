//! Polly v8's `CircuitBreakerStrategyOptions` as JSON (as `IConfiguration` binds it: keys in any case,
//! `TimeSpan`s as `"00:00:30"`).
//!
//! Mapping: `FailureRatio` over `SamplingDuration` once `MinimumThroughput` calls were made is
//! `trip.failure_rate` (threshold, window, min_calls) — both trip at or above the ratio, both divide the window
//! into buckets and both start it afresh at a close; `BreakDuration` is `open.base`; Polly lets one probe through
//! when half-open and closes on its success: `half_open.probes = 1`, `successes_to_close = 1`.

use std::time::Duration;

use breaker::{BreakerConfig, RawFailureRateConfig, RawTripConfig};
use serde_json::{Map, Value};

use super::mapping::{
    built, carried, failure_rate, fixed_open_enforcing, number_text, one_probe_closing,
    only_failure_rate,
};
use super::model::{Exported, FieldNote, Imported, Library, LibraryError, NoteKind};
use super::text::{timespan, timespan_text};

const DEFAULT_RATIO: f64 = 0.1;
const DEFAULT_THROUGHPUT: u64 = 100;
const DEFAULT_SAMPLING: Duration = Duration::from_secs(30);
const DEFAULT_BREAK: Duration = Duration::from_secs(5);
/// Polly's bounds (its `[Range]` attributes).
const MIN_DURATION: Duration = Duration::from_millis(500);
const MAX_BREAK: Duration = Duration::from_secs(24 * 3600);

pub(super) fn import(text: &str) -> Result<Imported, LibraryError> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        LibraryError::new("CircuitBreakerStrategyOptions", format!("not JSON: {e}"))
    })?;
    let options: &Map<String, Value> = value.as_object().ok_or_else(|| {
        LibraryError::new("CircuitBreakerStrategyOptions", "must be a JSON object")
    })?;
    let mut notes = Vec::new();
    let mut carried = Vec::new();
    let (mut ratio, mut throughput, mut sampling, mut brk) = (None, None, None, None);
    for (key, value) in options {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        match key.to_ascii_lowercase().as_str() {
            "failureratio" => {
                let v = super::text::number(key, &text)?;
                if !(v > 0.0 && v <= 1.0) {
                    return Err(LibraryError::new(
                        key,
                        format!("{v} is not a ratio in (0, 1]"),
                    ));
                }
                ratio = Some(v);
            }
            "minimumthroughput" => {
                throughput = Some(super::text::whole(key, &text, 2, u64::from(u32::MAX))?)
            }
            "samplingduration" => {
                let d = timespan(key, &text)?;
                if d < MIN_DURATION || d > MAX_BREAK {
                    return Err(LibraryError::new(
                        key,
                        "must be between 00:00:00.5 and 1.00:00:00",
                    ));
                }
                sampling = Some(d);
            }
            "breakduration" => {
                let d = timespan(key, &text)?;
                if d < MIN_DURATION || d > MAX_BREAK {
                    return Err(LibraryError::new(
                        key,
                        "must be between 00:00:00.5 and 1.00:00:00",
                    ));
                }
                brk = Some(d);
            }
            "breakdurationgenerator" => {
                return Err(LibraryError::new(
                    key,
                    "a generated break duration is code Tolerant cannot model; give BreakDuration instead",
                ));
            }
            "name" => {
                carried.push(("Name".to_owned(), text));
                notes.push(FieldNote::new(key, NoteKind::Kept, "the strategy's name"));
            }
            "shouldhandle" => {
                carried.push(("ShouldHandle".to_owned(), text));
                notes.push(FieldNote::new(
                    key,
                    NoteKind::Approximation,
                    "which outcomes count as failures is the caller's classifier in Tolerant (5xx and timeouts)",
                ));
            }
            "manualcontrol" | "stateprovider" | "onopened" | "onclosed" | "onhalfopened" => {
                notes.push(FieldNote::new(
                    key,
                    NoteKind::Kept,
                    "not about when the breaker trips or recovers (set in code, not written back)",
                ));
            }
            _ => {
                return Err(LibraryError::new(
                    key,
                    "not a CircuitBreakerStrategyOptions property",
                ));
            }
        }
    }
    let ratio = ratio.unwrap_or(DEFAULT_RATIO);
    let throughput = throughput.unwrap_or(DEFAULT_THROUGHPUT);
    let sampling = sampling.unwrap_or(DEFAULT_SAMPLING);
    let brk = brk.unwrap_or(DEFAULT_BREAK);
    notes.push(FieldNote::new(
        "FailureRatio",
        NoteKind::Same,
        format!(
            "trip.failure_rate.threshold {}: trips at or above it, in both",
            number_text(ratio)
        ),
    ));
    notes.push(FieldNote::new(
        "SamplingDuration",
        NoteKind::Approximation,
        format!(
            "trip.failure_rate.window {}: Polly rolls ten windows when the duration is long enough, Tolerant always ten buckets",
            humantime::format_duration(sampling)
        ),
    ));
    notes.push(FieldNote::new(
        "MinimumThroughput",
        NoteKind::Same,
        format!("trip.failure_rate.min_calls {throughput}: calls in the sampling window before the ratio counts"),
    ));
    notes.push(FieldNote::new(
        "BreakDuration",
        NoteKind::Same,
        "open.base (fixed)",
    ));
    notes.push(FieldNote::new(
        "half-open",
        NoteKind::Same,
        "one probe; its success closes: half_open.probes = 1, successes_to_close = 1",
    ));
    let trip = RawTripConfig {
        consecutive_failures: None,
        failure_rate: Some(RawFailureRateConfig {
            threshold: ratio,
            window: sampling,
            min_calls: throughput as u32,
        }),
        last_calls: None,
        slow_call: None,
    };
    let config = built(breaker::Mode::Enforce, trip, brk, 1, 1)?;
    Ok(Imported {
        library: Library::Polly,
        config,
        notes,
        settings: vec![
            ("FailureRatio".into(), number_text(ratio)),
            ("MinimumThroughput".into(), throughput.to_string()),
            ("SamplingDuration".into(), timespan_text(sampling)),
            ("BreakDuration".into(), timespan_text(brk)),
        ],
        carried,
    })
}

pub(super) fn export(
    config: &BreakerConfig,
    name: &str,
    kept: &[(String, String)],
) -> Result<Exported, LibraryError> {
    let rate = failure_rate(config)?;
    let mut options = Map::new();
    options.insert(
        "Name".into(),
        Value::String(carried(kept, "Name").unwrap_or(name).to_owned()),
    );
    options.insert("FailureRatio".into(), serde_json::json!(rate.threshold()));
    options.insert(
        "MinimumThroughput".into(),
        serde_json::json!(rate.min_calls()),
    );
    options.insert(
        "SamplingDuration".into(),
        Value::String(timespan_text(rate.window())),
    );
    options.insert(
        "BreakDuration".into(),
        Value::String(timespan_text(config.open().base())),
    );
    let text = serde_json::to_string_pretty(&Value::Object(options)).unwrap_or_default() + "\n";
    Ok(Exported {
        text,
        notes: vec![FieldNote::new(
            "ShouldHandle",
            NoteKind::Kept,
            "set in code: which results and exceptions count (Tolerant's model counts 5xx and timeouts)",
        )],
    })
}

pub(super) fn expresses(config: &BreakerConfig) -> Result<(), LibraryError> {
    let rate = only_failure_rate(
        config,
        "Polly v8 trips on a failure ratio over a sampling duration",
    )?;
    if rate.min_calls() < 2 {
        return Err(LibraryError::new(
            "trip.failure_rate.min_calls",
            "Polly's MinimumThroughput is at least 2",
        ));
    }
    if rate.window() < MIN_DURATION {
        return Err(LibraryError::new(
            "trip.failure_rate.window",
            "Polly's SamplingDuration is at least 0.5 s",
        ));
    }
    let base = fixed_open_enforcing(config)?;
    if base < MIN_DURATION || base > MAX_BREAK {
        return Err(LibraryError::new(
            "open.base",
            "Polly's BreakDuration is between 0.5 s and a day",
        ));
    }
    one_probe_closing(config, "Polly")
}
