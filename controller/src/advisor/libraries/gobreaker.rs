//! gobreaker's `Settings` as Go source: a `gobreaker.Settings{...}` literal or `st.Field = value` assignments,
//! with `ReadyToTrip` read when it is one of the two shapes its README shows — consecutive failures
//! (`counts.ConsecutiveFailures > N`) or a ratio (`counts.Requests >= N && failureRatio >= R`, the ratio being
//! `TotalFailures / Requests`). Any other function body is an error naming `ReadyToTrip`.
//!
//! Mapping: consecutive failures `> N` is `trip.consecutive_failures = N + 1` (gobreaker's default, `> 5`, is 6);
//! the ratio is `trip.failure_rate` with `min_calls = N` over a window of `Interval` — gobreaker clears its
//! counts every `Interval` while closed (a tumbling window; `0` never clears them: modelled as a day), Tolerant
//! slides ten buckets; `Timeout` (default 60 s) is `open.base`; `MaxRequests` (0 means 1) is both
//! `half_open.probes` and `successes_to_close`: gobreaker admits that many requests in half-open and closes after
//! that many consecutive successes.

use std::time::Duration;

use breaker::{BreakerConfig, Probes, RawFailureRateConfig, RawTripConfig};

use super::mapping::{
    OneDetector, built, carried, fixed_open_enforcing, number_text, one_detector,
};
use super::model::{Exported, FieldNote, Imported, Library, LibraryError, NoteKind};
use super::text::{
    enclosed, go_duration, go_duration_text, split_top_level, strip_comments, unquote,
};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// gobreaker's default ReadyToTrip: more than 5 consecutive failures.
const DEFAULT_CONSECUTIVE_OVER: u32 = 5;
/// A ratio with `Interval` 0 counts from the last state change: modelled as a window this long.
const NEVER_CLEARED: Duration = Duration::from_secs(24 * 3600);

#[derive(Debug, Clone, Copy, PartialEq)]
enum ReadyToTrip {
    /// `ConsecutiveFailures > over`.
    Consecutive { over: u32 },
    /// `Requests >= min_requests && failureRatio >= ratio`.
    Ratio { min_requests: u32, ratio: f64 },
}

/// `Field: value` pairs of a literal, or `x.Field = value` assignments.
fn fields(source: &str) -> Result<Vec<(String, String)>, LibraryError> {
    let source = strip_comments(source, false);
    if let Some(at) = source.find("Settings{") {
        let body = enclosed(&source, at + "Settings".len())
            .ok_or_else(|| LibraryError::new("Settings", "the literal's `{` is not closed"))?;
        return split_top_level(body, ',')
            .into_iter()
            .map(|entry| {
                let (key, value) = entry.split_once(':').ok_or_else(|| {
                    LibraryError::new("Settings", format!("`{entry}` is not `Field: value`"))
                })?;
                Ok((key.trim().to_owned(), value.trim().to_owned()))
            })
            .collect();
    }
    // Assignments: `st.Name = "x"`; a function value runs to its closing brace.
    let mut out = Vec::new();
    let mut rest = source.as_str();
    while let Some(eq) = rest.find(" = ") {
        let before = &rest[..eq];
        let target = before
            .rsplit(|c: char| c.is_whitespace())
            .next()
            .unwrap_or("");
        // Only `st.Field = …` sets a field; `cb = gobreaker.NewCircuitBreaker(st)` and the like are not settings.
        let key = target
            .split_once('.')
            .map(|(_, field)| field.to_owned())
            .unwrap_or_default();
        let after = &rest[eq + 3..];
        let value_end = if after.trim_start().starts_with("func") {
            let open = after.find('{').unwrap_or(after.len());
            enclosed(after, open).map_or(after.len(), |body| open + body.len() + 2)
        } else {
            after.find('\n').unwrap_or(after.len())
        };
        if !key.is_empty() {
            out.push((key, after[..value_end].trim().to_owned()));
        }
        rest = &after[value_end..];
    }
    if out.is_empty() {
        return Err(LibraryError::new(
            "Settings",
            "neither a gobreaker.Settings{...} literal nor st.Field = value assignments",
        ));
    }
    Ok(out)
}

fn ready_to_trip(value: &str) -> Result<ReadyToTrip, LibraryError> {
    let unmodelled = || {
        LibraryError::new(
            "ReadyToTrip",
            "only `return counts.ConsecutiveFailures > N` or `return counts.Requests >= N && failureRatio >= R` \
             (failureRatio := float64(counts.TotalFailures) / float64(counts.Requests)) can be modelled",
        )
    };
    let open = value.find('{').ok_or_else(unmodelled)?;
    let body = enclosed(value, open).ok_or_else(unmodelled)?;
    let compact: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let ret = compact
        .split("return ")
        .nth(1)
        .ok_or_else(unmodelled)?
        .trim()
        .trim_end_matches(';');
    for (op, bump) in [(">=", 0u32), (">", 1)] {
        if let Some(n) = ret.strip_prefix(&format!("counts.ConsecutiveFailures {op} ")) {
            let n = super::text::whole("ReadyToTrip", n, 0, u64::from(u32::MAX - 1))? as u32;
            // `> n` is `>= n + 1`; keep the written `over`.
            return Ok(ReadyToTrip::Consecutive {
                over: (n + bump).saturating_sub(1),
            });
        }
    }
    let ratio_defined =
        compact.contains("float64(counts.TotalFailures) / float64(counts.Requests)");
    let parts: Vec<&str> = ret.split("&&").map(str::trim).collect();
    if let [requests, ratio] = parts.as_slice() {
        let min_requests = requests
            .strip_prefix("counts.Requests >= ")
            .ok_or_else(unmodelled)?;
        let ratio = ratio
            .strip_prefix("failureRatio >= ")
            .filter(|_| ratio_defined)
            .or_else(|| {
                ratio.strip_prefix("float64(counts.TotalFailures)/float64(counts.Requests) >= ")
            })
            .ok_or_else(unmodelled)?;
        let min_requests =
            super::text::whole("ReadyToTrip", min_requests, 1, u64::from(u32::MAX))? as u32;
        let ratio = super::text::number("ReadyToTrip", ratio)?;
        if !(ratio > 0.0 && ratio <= 1.0) {
            return Err(LibraryError::new(
                "ReadyToTrip",
                format!("the ratio {ratio} is not in (0, 1]"),
            ));
        }
        return Ok(ReadyToTrip::Ratio {
            min_requests,
            ratio,
        });
    }
    Err(unmodelled())
}

pub(super) fn import(text: &str) -> Result<Imported, LibraryError> {
    let mut notes = Vec::new();
    let mut carried = Vec::new();
    let (mut max_requests, mut interval, mut timeout, mut trip) =
        (0u64, Duration::ZERO, Duration::ZERO, None);
    for (key, value) in fields(text)? {
        match key.as_str() {
            "Name" => {
                let name = unquote(&value).ok_or_else(|| LibraryError::new("Name", "must be a string"))?;
                carried.push(("Name".to_owned(), name));
                notes.push(FieldNote::new("Name", NoteKind::Kept, "the breaker's name"));
            }
            "MaxRequests" => max_requests = super::text::whole("MaxRequests", &value, 0, u64::from(breaker::MAX_PROBES))?,
            "Interval" => interval = go_duration("Interval", &value)?,
            "Timeout" => timeout = go_duration("Timeout", &value)?,
            "BucketPeriod" => {
                return Err(LibraryError::new(
                    "BucketPeriod",
                    "gobreaker v2's rolling buckets are not modelled; leave BucketPeriod out (a fixed Interval)",
                ));
            }
            "ReadyToTrip" => trip = Some(ready_to_trip(&value)?),
            "OnStateChange" => notes.push(FieldNote::new(key, NoteKind::Kept, "a listener: not about tripping")),
            "IsSuccessful" => notes.push(FieldNote::new(
                key,
                NoteKind::Approximation,
                "which errors count as failures is the caller's classifier in Tolerant (5xx and timeouts)",
            )),
            other => return Err(LibraryError::new(other, "not a gobreaker Settings field")),
        }
    }
    let trip = trip.unwrap_or(ReadyToTrip::Consecutive {
        over: DEFAULT_CONSECUTIVE_OVER,
    });
    let max_requests = max_requests.max(1) as u32;
    let timeout = if timeout.is_zero() {
        DEFAULT_TIMEOUT
    } else {
        timeout
    };
    let mut trip_config = RawTripConfig {
        consecutive_failures: None,
        failure_rate: None,
        last_calls: None,
        slow_call: None,
    };
    match trip {
        ReadyToTrip::Consecutive { over } => {
            trip_config.consecutive_failures = Some(over + 1);
            notes.push(FieldNote::new(
                "ReadyToTrip",
                NoteKind::Same,
                format!(
                    "counts.ConsecutiveFailures > {over}: trip.consecutive_failures = {}",
                    over + 1
                ),
            ));
            notes.push(FieldNote::new(
                "Interval",
                NoteKind::Approximation,
                "gobreaker also clears the consecutive count every Interval while closed (0: never); Tolerant's count runs until a success",
            ));
        }
        ReadyToTrip::Ratio {
            min_requests,
            ratio,
        } => {
            let window = if interval.is_zero() {
                carried.push(("Interval".to_owned(), "0".to_owned()));
                NEVER_CLEARED
            } else {
                interval
            };
            trip_config.failure_rate = Some(RawFailureRateConfig {
                threshold: ratio,
                window: window.max(Duration::from_millis(10)),
                min_calls: min_requests,
            });
            notes.push(FieldNote::new(
                "ReadyToTrip",
                NoteKind::Same,
                format!(
                    "counts.Requests >= {min_requests} && failureRatio >= {}: trip.failure_rate",
                    number_text(ratio)
                ),
            ));
            notes.push(FieldNote::new(
                "Interval",
                NoteKind::Approximation,
                if interval.is_zero() {
                    "0: gobreaker counts from the last state change, never clearing while closed; modelled as a window of a day".to_owned()
                } else {
                    format!(
                        "{}: gobreaker clears its counts every Interval (a tumbling window, and Requests counts calls still in flight); Tolerant's window slides in ten buckets",
                        humantime::format_duration(interval)
                    )
                },
            ));
        }
    }
    notes.push(FieldNote::new(
        "Timeout",
        NoteKind::Same,
        "open.base (0 means 60 s, as in gobreaker)",
    ));
    notes.push(FieldNote::new(
        "MaxRequests",
        NoteKind::Approximation,
        format!(
            "{max_requests}: half_open.probes and successes_to_close; gobreaker admits {max_requests} requests in all while half-open, Tolerant {max_requests} at a time"
        ),
    ));
    let config = built(
        breaker::Mode::Enforce,
        trip_config,
        timeout,
        max_requests,
        max_requests,
    )?;
    let mut settings = vec![
        ("MaxRequests".into(), max_requests.to_string()),
        ("Timeout".into(), go_duration_text(timeout)),
    ];
    match trip {
        ReadyToTrip::Consecutive { over } => {
            settings.push((
                "ReadyToTrip".into(),
                format!("ConsecutiveFailures > {over}"),
            ));
        }
        ReadyToTrip::Ratio {
            min_requests,
            ratio,
        } => {
            settings.push(("Interval".into(), go_duration_text(interval)));
            settings.push((
                "ReadyToTrip".into(),
                format!(
                    "Requests >= {min_requests} && failureRatio >= {}",
                    number_text(ratio)
                ),
            ));
        }
    }
    Ok(Imported {
        library: Library::Gobreaker,
        config,
        notes,
        settings,
        carried,
    })
}

pub(super) fn expresses(config: &BreakerConfig) -> Result<(), LibraryError> {
    match one_detector(config)? {
        OneDetector::Consecutive(_) | OneDetector::FailureRate(_) => {}
        OneDetector::LastCalls(_) => {
            return Err(LibraryError::new(
                "trip.last_calls",
                "gobreaker counts since the last clear (Interval), not over the last N calls",
            ));
        }
    }
    fixed_open_enforcing(config)?;
    let Probes::Limited(probes) = config.half_open().probes() else {
        return Err(LibraryError::new(
            "half_open.probes",
            "gobreaker admits MaxRequests requests in half-open",
        ));
    };
    if config.half_open().successes_to_close() != probes.get() {
        return Err(LibraryError::new(
            "half_open.successes_to_close",
            "gobreaker closes after MaxRequests consecutive successes: successes_to_close = probes",
        ));
    }
    Ok(())
}

pub(super) fn export(
    config: &BreakerConfig,
    name: &str,
    kept: &[(String, String)],
) -> Result<Exported, LibraryError> {
    let probes = config.half_open().successes_to_close();
    let mut text = format!(
        "st := gobreaker.Settings{{\n\tName:        {:?},\n\tMaxRequests: {probes},\n",
        carried(kept, "Name").unwrap_or(name)
    );
    let mut notes = Vec::new();
    if let Some(k) = config.trip().consecutive_failures() {
        text.push_str(&format!(
            "\tTimeout:     {},\n",
            go_duration_text(config.open().base())
        ));
        text.push_str(&format!(
            "\tReadyToTrip: func(counts gobreaker.Counts) bool {{\n\t\treturn counts.ConsecutiveFailures > {}\n\t}},\n",
            k - 1
        ));
    } else if let Some(rate) = config.trip().failure_rate() {
        // A window of a day read from `Interval: 0` (never cleared) is written back as it was.
        let never_cleared =
            rate.window() == NEVER_CLEARED && carried(kept, "Interval") == Some("0");
        let interval = if never_cleared {
            Duration::ZERO
        } else {
            rate.window()
        };
        text.push_str(&format!("\tInterval:    {},\n", go_duration_text(interval)));
        text.push_str(&format!(
            "\tTimeout:     {},\n",
            go_duration_text(config.open().base())
        ));
        text.push_str(&format!(
            "\tReadyToTrip: func(counts gobreaker.Counts) bool {{\n\t\tfailureRatio := float64(counts.TotalFailures) / float64(counts.Requests)\n\t\treturn counts.Requests >= {} && failureRatio >= {}\n\t}},\n",
            rate.min_calls(),
            number_text(rate.threshold())
        ));
        notes.push(FieldNote::new(
            "trip.failure_rate.window",
            NoteKind::Approximation,
            "written as Interval: gobreaker clears its counts every Interval instead of sliding",
        ));
    }
    text.push_str("}\n");
    Ok(Exported { text, notes })
}
