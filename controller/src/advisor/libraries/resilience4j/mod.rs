//! Resilience4j through Spring Boot: `resilience4j.circuitbreaker.instances.NAME.*` (or the legacy `backends`),
//! merged over `baseConfig` or `configs.default` as Resilience4j merges them, keys in camelCase or kebab-case,
//! durations as Spring writes them.
//!
//! Mapping: a `COUNT_BASED` window of `slidingWindowSize` calls is Tolerant's `trip.last_calls` (Resilience4j
//! caps `minimumNumberOfCalls` at the window's size for a count window, and so does the import); a `TIME_BASED`
//! one of `slidingWindowSize` seconds is `trip.failure_rate` with `min_calls = minimumNumberOfCalls`, uncapped —
//! so a time window that never holds `minimumNumberOfCalls` calls never trips, in both (resilience4j#1443).
//! `waitDurationInOpenState` is `open.base`, exponential backoff is `open.backoff`/`open.max`, a randomized
//! wait is `open.jitter`; `permittedNumberOfCallsInHalfOpenState` is `half_open.probes`.

use std::time::Duration;

use breaker::{
    Mode, Probes, RawBreakerConfig, RawFailureRateConfig, RawLastCallsConfig, RawSlowCallConfig,
    RawTripConfig,
};
use properties::{CLASSIFYING, KEPT, circuitbreaker, resolve, scalar, spelled};
use serde_json::Value;

use super::mapping::number_text;
use super::model::{FieldNote, Imported, Library, LibraryError, NoteKind};
use super::text::{spring_duration, spring_duration_text};

mod export;
mod properties;

pub(super) use export::{export, expresses};

/// Defaults of `CircuitBreakerConfig`.
const DEFAULT_WINDOW_SIZE: u64 = 100;
const DEFAULT_MIN_CALLS: u64 = 100;
const DEFAULT_FAILURE_RATE: f64 = 50.0;
const DEFAULT_WAIT: Duration = Duration::from_secs(60);
const DEFAULT_PERMITTED: u64 = 10;
const DEFAULT_SLOW_RATE: f64 = 100.0;
const DEFAULT_SLOW_DURATION: Duration = Duration::from_secs(60);
const DEFAULT_BACKOFF_MULTIPLIER: f64 = 1.5;
const DEFAULT_RANDOMIZED_FACTOR: f64 = 0.5;

/// The effective settings of one instance, defaults filled in.
struct Settings {
    count_based: bool,
    window_size: u64,
    min_calls: u64,
    failure_rate: f64,
    wait: Duration,
    permitted: u64,
    slow: Option<(f64, Duration)>,
    exponential: Option<(f64, Option<Duration>)>,
    randomized: Option<f64>,
    initial_state: Mode,
}

pub(super) fn import(text: &str, instance: Option<&str>) -> Result<Imported, LibraryError> {
    let document: Value = serde_saphyr::from_str(text).map_err(|e| {
        LibraryError::new(
            "resilience4j",
            format!("not YAML: {}", first_line(&e.to_string())),
        )
    })?;
    let section = circuitbreaker(&document).ok_or_else(|| {
        LibraryError::new("resilience4j.circuitbreaker", "not found in the document")
    })?;
    let (name, path, props) = resolve(section, instance)?;
    let get = |key: &str| props.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let field = |key: &str| format!("{path}.{}", spelled(key));
    let mut notes = Vec::new();
    let mut carried = vec![("name".to_owned(), name.clone())];
    for (key, value) in &props {
        let known = [
            "slidingwindowtype",
            "slidingwindowsize",
            "minimumnumberofcalls",
            "failureratethreshold",
            "waitdurationinopenstate",
            "permittednumberofcallsinhalfopenstate",
            "slowcallratethreshold",
            "slowcalldurationthreshold",
            "enableexponentialbackoff",
            "exponentialbackoffmultiplier",
            "exponentialmaxwaitdurationinopenstate",
            "enablerandomizedwait",
            "randomizedwaitfactor",
            "automatictransitionfromopentohalfopenenabled",
            "maxwaitdurationinhalfopenstate",
            "initialstate",
        ];
        if KEPT.contains(&key.as_str()) {
            if key != "baseconfig" {
                carried.push((spelled(key).to_owned(), scalar(value)));
            }
            notes.push(FieldNote::new(
                field(key),
                NoteKind::Kept,
                "not about when the breaker trips or recovers",
            ));
        } else if CLASSIFYING.contains(&key.as_str()) {
            carried.push((spelled(key).to_owned(), scalar(value)));
            notes.push(FieldNote::new(
                field(key),
                NoteKind::Approximation,
                "which outcomes count as failures is the caller's classifier in Tolerant (5xx and timeouts); kept for export",
            ));
        } else if !known.contains(&key.as_str()) {
            return Err(LibraryError::new(
                field(key),
                "not a circuit breaker setting Tolerant knows",
            ));
        }
    }
    let number = |key: &str| -> Result<Option<f64>, LibraryError> {
        get(key)
            .map(|v| super::text::number(&field(key), &scalar(v)))
            .transpose()
    };
    let whole = |key: &str, min: u64, max: u64| -> Result<Option<u64>, LibraryError> {
        get(key)
            .map(|v| super::text::whole(&field(key), &scalar(v), min, max))
            .transpose()
    };
    let duration = |key: &str| -> Result<Option<Duration>, LibraryError> {
        get(key)
            .map(|v| spring_duration(&field(key), &scalar(v)))
            .transpose()
    };
    let flag = |key: &str| -> Result<bool, LibraryError> {
        match get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => match scalar(v).as_str() {
                "true" => Ok(true),
                "false" => Ok(false),
                other => Err(LibraryError::new(
                    field(key),
                    format!("`{other}` is not true or false"),
                )),
            },
        }
    };
    let count_based = match get("slidingwindowtype").map(scalar) {
        None => true,
        Some(t) if t.eq_ignore_ascii_case("COUNT_BASED") => true,
        Some(t) if t.eq_ignore_ascii_case("TIME_BASED") => false,
        Some(t) => {
            return Err(LibraryError::new(
                field("slidingwindowtype"),
                format!("`{t}` is not COUNT_BASED or TIME_BASED"),
            ));
        }
    };
    let percent = |key: &str, default: f64| -> Result<f64, LibraryError> {
        let v = number(key)?.unwrap_or(default);
        if !(v > 0.0 && v <= 100.0) {
            return Err(LibraryError::new(
                field(key),
                format!("{v} is not a percentage in (0, 100]"),
            ));
        }
        Ok(v)
    };
    let slow_written =
        get("slowcallratethreshold").is_some() || get("slowcalldurationthreshold").is_some();
    let exponential = flag("enableexponentialbackoff")?;
    let randomized = flag("enablerandomizedwait")?;
    if exponential && randomized {
        return Err(LibraryError::new(
            field("enablerandomizedwait"),
            "Resilience4j refuses exponential backoff and a randomized wait together",
        ));
    }
    let settings = Settings {
        count_based,
        window_size: whole("slidingwindowsize", 1, u64::from(breaker::MAX_LAST_CALLS))?
            .unwrap_or(DEFAULT_WINDOW_SIZE),
        min_calls: whole("minimumnumberofcalls", 1, u64::from(u32::MAX))?
            .unwrap_or(DEFAULT_MIN_CALLS),
        failure_rate: percent("failureratethreshold", DEFAULT_FAILURE_RATE)?,
        wait: duration("waitdurationinopenstate")?.unwrap_or(DEFAULT_WAIT),
        permitted: whole(
            "permittednumberofcallsinhalfopenstate",
            1,
            u64::from(breaker::MAX_PROBES),
        )?
        .unwrap_or(DEFAULT_PERMITTED),
        slow: if slow_written {
            Some((
                percent("slowcallratethreshold", DEFAULT_SLOW_RATE)?,
                duration("slowcalldurationthreshold")?.unwrap_or(DEFAULT_SLOW_DURATION),
            ))
        } else {
            None
        },
        exponential: exponential
            .then(|| -> Result<_, LibraryError> {
                Ok((
                    number("exponentialbackoffmultiplier")?.unwrap_or(DEFAULT_BACKOFF_MULTIPLIER),
                    duration("exponentialmaxwaitdurationinopenstate")?,
                ))
            })
            .transpose()?,
        randomized: randomized
            .then(|| number("randomizedwaitfactor").map(|f| f.unwrap_or(DEFAULT_RANDOMIZED_FACTOR)))
            .transpose()?,
        initial_state: match get("initialstate").map(scalar).as_deref() {
            None | Some("CLOSED") => Mode::Enforce,
            Some("METRICS_ONLY") => Mode::Shadow,
            Some("FORCED_OPEN") => Mode::ForcedOpen,
            Some("DISABLED") => Mode::Disabled,
            Some(other) => {
                return Err(LibraryError::new(
                    field("initialstate"),
                    format!("`{other}` is not CLOSED, METRICS_ONLY, FORCED_OPEN or DISABLED"),
                ));
            }
        },
    };
    if !settings.wait.is_zero() && settings.wait < Duration::from_millis(1) {
        return Err(LibraryError::new(
            field("waitdurationinopenstate"),
            "must be at least 1ms",
        ));
    }
    let threshold = settings.failure_rate / 100.0;
    let mut trip = RawTripConfig {
        consecutive_failures: None,
        failure_rate: None,
        last_calls: None,
        slow_call: None,
    };
    let window_s = Duration::from_secs(settings.window_size);
    if settings.count_based {
        let capped = settings.min_calls.min(settings.window_size);
        trip.last_calls = Some(RawLastCallsConfig {
            threshold,
            calls: settings.window_size as u32,
            min_calls: capped as u32,
        });
        notes.push(FieldNote::new(
            field("slidingwindowsize"),
            NoteKind::Approximation,
            format!(
                "COUNT_BASED over the last {} calls: trip.last_calls.calls; Resilience4j keeps an exact ring of calls, Tolerant ten buckets of ⌈{}/10⌉ calls (the window slides a bucket at a time)",
                settings.window_size, settings.window_size
            ),
        ));
        notes.push(FieldNote::new(
            field("minimumnumberofcalls"),
            NoteKind::Same,
            format!(
                "trip.last_calls.min_calls = {capped}: Resilience4j caps it at the count window's size, so does the import"
            ),
        ));
        if settings.slow.is_some() {
            return Err(LibraryError::new(
                field("slowcallratethreshold"),
                "a slow-call rate over a COUNT_BASED window cannot be modelled (Tolerant's slow_call counts over a time window); use TIME_BASED or leave the slow-call settings out",
            ));
        }
    } else {
        trip.failure_rate = Some(RawFailureRateConfig {
            threshold,
            window: window_s,
            min_calls: settings.min_calls.min(u64::from(u32::MAX)) as u32,
        });
        notes.push(FieldNote::new(
            field("slidingwindowsize"),
            NoteKind::Approximation,
            format!(
                "TIME_BASED over {} s: trip.failure_rate.window; Resilience4j aggregates one-second buckets, Tolerant ten buckets of a tenth of the window",
                settings.window_size
            ),
        ));
        notes.push(FieldNote::new(
            field("minimumnumberofcalls"),
            NoteKind::Same,
            format!(
                "trip.failure_rate.min_calls = {}: not capped for a time window, in both — a window that never holds this many calls never trips",
                settings.min_calls
            ),
        ));
        if let Some((rate, duration)) = settings.slow {
            trip.slow_call = Some(RawSlowCallConfig {
                duration,
                rate: rate / 100.0,
                window: window_s,
                min_calls: settings.min_calls.min(u64::from(u32::MAX)) as u32,
            });
            notes.push(FieldNote::new(
                field("slowcalldurationthreshold"),
                NoteKind::Approximation,
                "trip.slow_call.duration: Resilience4j counts calls longer than it, Tolerant calls at least as long",
            ));
        }
    }
    notes.push(FieldNote::new(
        field("failureratethreshold"),
        NoteKind::Same,
        format!(
            "{}%: the detector's threshold {}, tripping at or above it in both",
            number_text(settings.failure_rate),
            number_text(threshold)
        ),
    ));
    let mut raw = RawBreakerConfig {
        mode: settings.initial_state,
        trip,
        ..RawBreakerConfig::default()
    };
    raw.open.base = settings.wait.max(Duration::from_millis(1));
    raw.open.max = raw.open.base;
    notes.push(FieldNote::new(
        field("waitdurationinopenstate"),
        NoteKind::Same,
        "open.base",
    ));
    if let Some((multiplier, max)) = settings.exponential {
        raw.open.backoff = multiplier;
        raw.open.max = max
            .unwrap_or(Duration::from_secs(365 * 24 * 3600))
            .max(raw.open.base);
        notes.push(FieldNote::new(
            field("exponentialbackoffmultiplier"),
            NoteKind::Same,
            "open.backoff (and exponentialMaxWaitDurationInOpenState open.max; without one Tolerant caps at a year)",
        ));
    }
    if let Some(factor) = settings.randomized {
        if !(0.0..1.0).contains(&factor) {
            return Err(LibraryError::new(
                field("randomizedwaitfactor"),
                "must be in [0, 1)",
            ));
        }
        raw.open.jitter = factor;
        notes.push(FieldNote::new(
            field("randomizedwaitfactor"),
            NoteKind::Same,
            "open.jitter: the wait drawn uniformly within ±factor of it",
        ));
    }
    raw.half_open.probes = Probes::limited(settings.permitted as u32).unwrap_or_default();
    raw.half_open.successes_to_close = settings.min_calls.min(settings.permitted).max(1) as u32;
    notes.push(FieldNote::new(
        field("permittednumberofcallsinhalfopenstate"),
        NoteKind::Approximation,
        format!(
            "half_open.probes = {p}, successes_to_close = {s}: Resilience4j admits {p} calls and closes when the failure rate of the first {s} is below the threshold; Tolerant closes after {s} successes and reopens on the first failed probe",
            p = settings.permitted,
            s = raw.half_open.successes_to_close
        ),
    ));
    if get("automatictransitionfromopentohalfopenenabled").is_some() {
        carried.push((
            "automaticTransitionFromOpenToHalfOpenEnabled".into(),
            scalar(get("automatictransitionfromopentohalfopenenabled").unwrap_or(&Value::Null)),
        ));
        notes.push(FieldNote::new(
            field("automatictransitionfromopentohalfopenenabled"),
            NoteKind::Same,
            "Tolerant's breaker goes half-open when the window ends, whoever looks; kept for export",
        ));
    }
    if let Some(wait) = duration("maxwaitdurationinhalfopenstate")? {
        carried.push((
            "maxWaitDurationInHalfOpenState".into(),
            spring_duration_text(wait),
        ));
        notes.push(FieldNote::new(
            field("maxwaitdurationinhalfopenstate"),
            NoteKind::Approximation,
            "Tolerant waits for its probes however long they take (a probe ends at the caller's timeout at most); kept for export",
        ));
    }
    let config = raw
        .build()
        .map_err(|e| LibraryError::new(format!("{path} ({})", e.field), e.message))?;
    Ok(Imported {
        library: Library::Resilience4j,
        config,
        notes,
        settings: entries(&settings),
        carried,
    })
}

fn entries(s: &Settings) -> Vec<(String, String)> {
    let mut out = vec![
        (
            "slidingWindowType".to_owned(),
            if s.count_based {
                "COUNT_BASED"
            } else {
                "TIME_BASED"
            }
            .to_owned(),
        ),
        ("slidingWindowSize".to_owned(), s.window_size.to_string()),
        (
            "minimumNumberOfCalls".to_owned(),
            // Resilience4j itself caps a count window's minimum at its size.
            if s.count_based {
                s.min_calls.min(s.window_size)
            } else {
                s.min_calls
            }
            .to_string(),
        ),
        (
            "failureRateThreshold".to_owned(),
            number_text(s.failure_rate),
        ),
        (
            "waitDurationInOpenState".to_owned(),
            spring_duration_text(s.wait),
        ),
        (
            "permittedNumberOfCallsInHalfOpenState".to_owned(),
            s.permitted.to_string(),
        ),
    ];
    if let Some((rate, duration)) = s.slow {
        out.push(("slowCallRateThreshold".into(), number_text(rate)));
        out.push((
            "slowCallDurationThreshold".into(),
            spring_duration_text(duration),
        ));
    }
    if let Some((multiplier, max)) = s.exponential {
        out.push((
            "exponentialBackoffMultiplier".into(),
            number_text(multiplier),
        ));
        if let Some(max) = max {
            out.push((
                "exponentialMaxWaitDurationInOpenState".into(),
                spring_duration_text(max),
            ));
        }
    }
    if let Some(factor) = s.randomized {
        out.push(("randomizedWaitFactor".into(), number_text(factor)));
    }
    out
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
