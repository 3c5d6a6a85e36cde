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
    BreakerConfig, Mode, Probes, RawBreakerConfig, RawFailureRateConfig, RawLastCallsConfig,
    RawSlowCallConfig, RawTripConfig,
};
use serde_json::{Map, Value};

use super::mapping::{OneDetector, carried, number_text, one_detector};
use super::model::{FieldNote, Imported, Library, LibraryError, NoteKind};
use super::text::{spring_duration, spring_duration_text};

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

/// Keys that do not change when the breaker trips or recovers: kept for export.
const KEPT: [&str; 6] = [
    "registerhealthindicator",
    "allowhealthindicatortofail",
    "eventconsumerbuffersize",
    "writablestacktraceenabled",
    "ignoreclassbindingexceptions",
    "baseconfig",
];
/// Keys of which outcomes count: Tolerant's classifier decides that.
const CLASSIFYING: [&str; 5] = [
    "recordexceptions",
    "ignoreexceptions",
    "recordfailurepredicate",
    "ignoreexceptionpredicate",
    "recordresultpredicate",
];

/// The spelling Resilience4j's docs use for a normalised key.
fn spelled(key: &str) -> &str {
    const NAMES: [&str; 26] = [
        "slidingWindowType",
        "slidingWindowSize",
        "minimumNumberOfCalls",
        "failureRateThreshold",
        "waitDurationInOpenState",
        "permittedNumberOfCallsInHalfOpenState",
        "slowCallRateThreshold",
        "slowCallDurationThreshold",
        "enableExponentialBackoff",
        "exponentialBackoffMultiplier",
        "exponentialMaxWaitDurationInOpenState",
        "enableRandomizedWait",
        "randomizedWaitFactor",
        "automaticTransitionFromOpenToHalfOpenEnabled",
        "maxWaitDurationInHalfOpenState",
        "initialState",
        "registerHealthIndicator",
        "allowHealthIndicatorToFail",
        "eventConsumerBufferSize",
        "writableStackTraceEnabled",
        "ignoreClassBindingExceptions",
        "baseConfig",
        "recordExceptions",
        "ignoreExceptions",
        "recordFailurePredicate",
        "ignoreExceptionPredicate",
    ];
    NAMES
        .iter()
        .find(|n| n.to_ascii_lowercase() == key)
        .copied()
        .unwrap_or(match key {
            "recordresultpredicate" => "recordResultPredicate",
            _ => key,
        })
}

fn normalise(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The value as text (numbers, booleans, strings; lists joined by commas).
fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// `resilience4j.circuitbreaker` of the document (as a dotted key or nested).
fn circuitbreaker(document: &Value) -> Option<&Map<String, Value>> {
    let top = document.as_object()?;
    if let Some(Value::Object(section)) = top.get("resilience4j.circuitbreaker") {
        return Some(section);
    }
    top.get("resilience4j")?
        .as_object()?
        .get("circuitbreaker")?
        .as_object()
}

type Properties = Vec<(String, Value)>;

fn properties(field: &str, value: &Value) -> Result<Properties, LibraryError> {
    let map = value
        .as_object()
        .ok_or_else(|| LibraryError::new(field, "must be a table of settings"))?;
    Ok(map.iter().map(|(k, v)| (normalise(k), v.clone())).collect())
}

/// The instance's properties merged as Resilience4j merges them, with its name and the path they came from.
fn resolve(
    section: &Map<String, Value>,
    instance: Option<&str>,
) -> Result<(String, String, Properties), LibraryError> {
    let prefix = "resilience4j.circuitbreaker";
    let instances = section
        .get("instances")
        .or_else(|| section.get("backends"))
        .and_then(Value::as_object);
    let configs = section.get("configs").and_then(Value::as_object);
    let (name, path, mut own) = match (instances, instance) {
        (Some(instances), Some(wanted)) => {
            let value = instances.get(wanted).ok_or_else(|| {
                LibraryError::new(
                    format!("{prefix}.instances"),
                    format!(
                        "no instance `{wanted}` (there are {})",
                        instances.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
            let path = format!("{prefix}.instances.{wanted}");
            (wanted.to_owned(), path.clone(), properties(&path, value)?)
        }
        (Some(instances), None) if instances.len() == 1 => {
            let (name, value) = instances.iter().next().expect("one instance");
            let path = format!("{prefix}.instances.{name}");
            (name.clone(), path.clone(), properties(&path, value)?)
        }
        (Some(instances), None) if !instances.is_empty() => {
            return Err(LibraryError::new(
                format!("{prefix}.instances"),
                format!(
                    "{} instances ({}): name one with --instance",
                    instances.len(),
                    instances.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        _ => match configs.and_then(|c| c.get("default")) {
            Some(default) => {
                let path = format!("{prefix}.configs.default");
                (
                    "default".to_owned(),
                    path.clone(),
                    properties(&path, default)?,
                )
            }
            None => {
                return Err(LibraryError::new(
                    prefix,
                    "has neither instances nor configs.default",
                ));
            }
        },
    };
    let base_name = own
        .iter()
        .find(|(k, _)| k == "baseconfig")
        .map(|(_, v)| scalar(v));
    let base = match &base_name {
        Some(base) => Some(configs.and_then(|c| c.get(base.as_str())).ok_or_else(|| {
            LibraryError::new(
                format!("{path}.baseConfig"),
                format!("no config `{base}` in configs"),
            )
        })?),
        None if path.ends_with(".configs.default") => None,
        None => configs.and_then(|c| c.get("default")),
    };
    if let Some(base) = base {
        for (key, value) in properties(&format!("{prefix}.configs"), base)? {
            if !own.iter().any(|(k, _)| *k == key) {
                own.push((key, value));
            }
        }
    }
    Ok((name, path, own))
}

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

pub(super) fn expresses(config: &BreakerConfig) -> Result<(), LibraryError> {
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

pub(super) fn export(
    config: &BreakerConfig,
    name: &str,
    kept: &[(String, String)],
) -> Result<super::model::Exported, LibraryError> {
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
    Ok(super::model::Exported { text, notes })
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

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}
