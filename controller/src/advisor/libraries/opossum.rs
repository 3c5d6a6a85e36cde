//! opossum's options object (`new CircuitBreaker(action, options)`) in JavaScript.
//!
//! Mapping: `errorThresholdPercentage` of the calls over `rollingCountTimeout` ms, once `volumeThreshold` calls
//! were made, is `trip.failure_rate` (opossum trips above the percentage, Tolerant at it: one failure sooner at
//! most); `resetTimeout` ms is `open.base`; opossum lets one trial call through when half-open and closes on its
//! success: `half_open.probes = 1`, `successes_to_close = 1`. `timeout` is the call's timeout, which the
//! advisor's input holds as `traffic.timeout` (a timed-out call is a failure in both); it is kept for export.

use std::time::Duration;

use breaker::{BreakerConfig, Mode, RawFailureRateConfig, RawTripConfig};

use super::mapping::{
    built, carried, failure_rate, number_text, one_probe_closing, only_failure_rate,
};
use super::model::{Exported, FieldNote, Imported, Library, LibraryError, NoteKind};
use super::text::{enclosed, split_top_level, strip_comments, unquote};

const DEFAULT_PERCENTAGE: f64 = 50.0;
const DEFAULT_RESET_MS: u64 = 30_000;
const DEFAULT_ROLLING_MS: u64 = 10_000;
const DEFAULT_BUCKETS: u64 = 10;
const MAX_MS: u64 = 365 * 86_400_000;

pub(super) fn import(text: &str) -> Result<Imported, LibraryError> {
    let source = strip_comments(text, false);
    // The options object: the one assigned to `options` when there is one, else the first object literal.
    let at = source
        .find("options = {")
        .map(|i| i + "options = ".len())
        .or_else(|| source.find('{'))
        .ok_or_else(|| LibraryError::new("options", "no `{ ... }` options object found"))?;
    let body = enclosed(&source, at)
        .ok_or_else(|| LibraryError::new("options", "the object's `{` is not closed"))?;
    let (mut percentage, mut reset_ms, mut rolling_ms, mut buckets, mut volume) = (
        DEFAULT_PERCENTAGE,
        DEFAULT_RESET_MS,
        DEFAULT_ROLLING_MS,
        DEFAULT_BUCKETS,
        0u64,
    );
    let mut mode = Mode::Enforce;
    let mut notes = Vec::new();
    let mut carried = Vec::new();
    for entry in split_top_level(body, ',') {
        let (key, value) = entry.split_once(':').ok_or_else(|| {
            LibraryError::new("options", format!("`{entry}` is not `key: value`"))
        })?;
        let key = unquote(key).unwrap_or_else(|| key.trim().to_owned());
        let value = value.trim();
        let is_code = value.starts_with("function") || value.contains("=>");
        match key.as_str() {
            "errorThresholdPercentage" => {
                percentage = super::text::number(&key, value)?;
                if !(percentage > 0.0 && percentage <= 100.0) {
                    return Err(LibraryError::new(&key, "must be a percentage in (0, 100]"));
                }
            }
            "resetTimeout" => reset_ms = super::text::whole(&key, value, 1, MAX_MS)?,
            "rollingCountTimeout" => rolling_ms = super::text::whole(&key, value, 10, 86_400_000)?,
            "rollingCountBuckets" => buckets = super::text::whole(&key, value, 1, 1_000)?,
            "volumeThreshold" => volume = super::text::whole(&key, value, 0, u64::from(u32::MAX))?,
            "timeout" => {
                carried.push(("timeout".to_owned(), value.to_owned()));
                notes.push(FieldNote::new(
                    &key,
                    NoteKind::Kept,
                    "the call's timeout: the advisor's input holds it as traffic.timeout (a timed-out call fails, in both); kept for export",
                ));
            }
            "enabled" => {
                if value == "false" {
                    mode = Mode::Disabled;
                }
                notes.push(FieldNote::new(
                    &key,
                    NoteKind::Same,
                    "false is mode = \"disabled\"",
                ));
            }
            "name"
            | "group"
            | "rollingPercentilesEnabled"
            | "enableSnapshots"
            | "abortController"
            | "autoRenewAbortController" => {
                carried.push((key.clone(), value.to_owned()));
                notes.push(FieldNote::new(
                    &key,
                    NoteKind::Kept,
                    "not about when the breaker trips or recovers",
                ));
            }
            "errorFilter" if is_code => {
                carried.push((key.clone(), value.to_owned()));
                notes.push(FieldNote::new(
                    &key,
                    NoteKind::Approximation,
                    "errors that are not failures: the caller's classifier in Tolerant (5xx and timeouts)",
                ));
            }
            "capacity" => {
                carried.push((key.clone(), value.to_owned()));
                notes.push(FieldNote::new(
                    &key,
                    NoteKind::Approximation,
                    "a limit on calls in flight whose rejections opossum counts as failures; the model's pool is traffic.workers",
                ));
            }
            "allowWarmUp" => {
                carried.push((key.clone(), value.to_owned()));
                notes.push(FieldNote::new(
                    &key,
                    NoteKind::Approximation,
                    "opossum does not open during its first rolling window; Tolerant's breaker may",
                ));
            }
            "cache" | "coalesce" if value == "true" => {
                return Err(LibraryError::new(
                    &key,
                    "a cached or coalesced call may never reach the dependency; the model cannot say which",
                ));
            }
            "cache" | "coalesce" => carried.push((key.clone(), value.to_owned())),
            "maxFailures" => {
                return Err(LibraryError::new(
                    &key,
                    "deprecated by opossum; use errorThresholdPercentage",
                ));
            }
            other => {
                return Err(LibraryError::new(
                    other,
                    "not an opossum option Tolerant knows",
                ));
            }
        }
    }
    if buckets != DEFAULT_BUCKETS {
        notes.push(FieldNote::new(
            "rollingCountBuckets",
            NoteKind::Approximation,
            format!("{buckets}: Tolerant's window always has ten buckets"),
        ));
        carried.push(("rollingCountBuckets".to_owned(), buckets.to_string()));
    }
    notes.push(FieldNote::new(
        "errorThresholdPercentage",
        NoteKind::Approximation,
        format!(
            "trip.failure_rate.threshold {}: opossum trips above it, Tolerant at it",
            number_text(percentage / 100.0)
        ),
    ));
    notes.push(FieldNote::new(
        "rollingCountTimeout",
        NoteKind::Approximation,
        "trip.failure_rate.window; opossum keeps its rolling window across a close, Tolerant starts it afresh",
    ));
    notes.push(FieldNote::new(
        "volumeThreshold",
        NoteKind::Same,
        format!(
            "trip.failure_rate.min_calls {} (0 counts as 1)",
            volume.max(1)
        ),
    ));
    notes.push(FieldNote::new("resetTimeout", NoteKind::Same, "open.base"));
    let trip = RawTripConfig {
        consecutive_failures: None,
        failure_rate: Some(RawFailureRateConfig {
            threshold: percentage / 100.0,
            window: Duration::from_millis(rolling_ms),
            min_calls: volume.clamp(1, u64::from(u32::MAX)) as u32,
        }),
        last_calls: None,
        slow_call: None,
    };
    let config = built(mode, trip, Duration::from_millis(reset_ms), 1, 1)?;
    Ok(Imported {
        library: Library::Opossum,
        config,
        notes,
        settings: vec![
            ("errorThresholdPercentage".into(), number_text(percentage)),
            ("resetTimeout".into(), reset_ms.to_string()),
            ("rollingCountTimeout".into(), rolling_ms.to_string()),
            ("volumeThreshold".into(), volume.max(1).to_string()),
            ("enabled".into(), (mode != Mode::Disabled).to_string()),
        ],
        carried,
    })
}

pub(super) fn expresses(config: &BreakerConfig) -> Result<(), LibraryError> {
    let rate = only_failure_rate(
        config,
        "opossum trips on an error percentage over its rolling window",
    )?;
    super::mapping::whole_ms("trip.failure_rate.window", rate.window())?;
    if !matches!(config.mode(), Mode::Enforce | Mode::Disabled) {
        return Err(LibraryError::new(
            "mode",
            "opossum is enabled (enforce) or not (disabled)",
        ));
    }
    if config.open().backoff() > 1.0 {
        return Err(LibraryError::new(
            "open.backoff",
            "opossum's resetTimeout is fixed",
        ));
    }
    if config.open().jitter() > 0.0 {
        return Err(LibraryError::new(
            "open.jitter",
            "opossum's resetTimeout has no jitter",
        ));
    }
    super::mapping::whole_ms("open.base", config.open().base())?;
    one_probe_closing(config, "opossum")
}

pub(super) fn export(
    config: &BreakerConfig,
    name: &str,
    kept: &[(String, String)],
) -> Result<Exported, LibraryError> {
    let rate = failure_rate(config)?;
    let mut entries = vec![
        (
            "name".to_owned(),
            carried(kept, "name").map_or_else(|| format!("{name:?}"), str::to_owned),
        ),
        (
            "errorThresholdPercentage".to_owned(),
            number_text(rate.threshold() * 100.0),
        ),
        (
            "rollingCountTimeout".to_owned(),
            rate.window().as_millis().to_string(),
        ),
        ("volumeThreshold".to_owned(), rate.min_calls().to_string()),
        (
            "resetTimeout".to_owned(),
            config.open().base().as_millis().to_string(),
        ),
    ];
    if config.mode() == Mode::Disabled {
        entries.push(("enabled".to_owned(), "false".to_owned()));
    }
    for (key, value) in kept {
        if key != "name" {
            entries.push((key.clone(), value.clone()));
        }
    }
    let body: Vec<String> = entries.iter().map(|(k, v)| format!("  {k}: {v}")).collect();
    Ok(Exported {
        text: format!("const options = {{\n{}\n}};\n", body.join(",\n")),
        notes: Vec::new(),
    })
}
