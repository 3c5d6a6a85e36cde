//! The simulator over HTTP: `GET /api/simulate?<settings>` runs `breaker::sim` on the query's settings (the
//! `tolerant simulate` flag names, snake_case) and answers its JSON; `GET /api/simulate/spec?<settings>` turns
//! the same settings into an experiment spec, checked by the spec parser before it is sent. Both read nothing
//! from the controller and change nothing, so like the other GETs they need no login. A bad setting is a 400
//! naming it. Simulations run on the bounded pool of `simulation_pool` (a 429 beyond its queue).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use axum::extract::{Query, RawQuery, State};
use axum::response::{IntoResponse, Response};
use breaker::sim::{self, HalfOpen, Schedule, Settings};
use controller::spec::ExperimentSpec;
use http::header::CONTENT_TYPE;

use crate::error::AppError;
use crate::state::AppState;

/// Most requests one API simulation may make (rate × window): the page's sliders stay well below, and an
/// anonymous GET cannot ask for minutes of CPU.
pub const MAX_API_REQUESTS: f64 = 2_000_000.0;

/// Longest window one API simulation may cover (the page's slider stops at 5 minutes; `tolerant simulate` takes
/// a day): with [`MAX_API_REQUESTS`] it bounds what one simulation holds.
pub const MAX_API_WINDOW: std::time::Duration = std::time::Duration::from_secs(3_600);

/// Deserialises `query` (still percent-encoded) as `T`; the error is serde's message.
fn query_as<T: serde::de::DeserializeOwned>(query: &str) -> Result<T, String> {
    let uri: http::Uri = format!("/?{query}")
        .parse()
        .map_err(|error| format!("not a query string ({error})"))?;
    Query::<T>::try_from_uri(&uri)
        .map(|Query(value)| value)
        .map_err(|rejection| {
            let text = rejection.body_text();
            text.strip_prefix("Failed to deserialize query string: ")
                .unwrap_or(&text)
                .to_owned()
        })
}

/// The settings of a query string, each pair checked alone first so that an error names its setting.
pub fn settings_of(query: Option<&str>) -> Result<Settings, AppError> {
    let query = query.unwrap_or("");
    let mut seen = BTreeSet::new();
    for segment in query.split('&').filter(|segment| !segment.is_empty()) {
        let pair: Vec<(String, String)> =
            query_as(segment).map_err(|error| AppError::BadRequest(format!("query: {error}")))?;
        let Some((name, _)) = pair.into_iter().next() else {
            continue;
        };
        if !seen.insert(name.clone()) {
            return Err(AppError::BadRequest(format!("{name}: given twice")));
        }
        query_as::<Settings>(segment).map_err(|message| {
            if message.contains("unknown field") {
                AppError::BadRequest(format!("{name}: not a setting"))
            } else {
                let message = message
                    .strip_prefix(&format!("{name}: "))
                    .unwrap_or(&message);
                AppError::BadRequest(format!("{name}: {message}"))
            }
        })?;
    }
    query_as::<Settings>(query).map_err(|error| AppError::BadRequest(format!("query: {error}")))
}

/// The scenario of `settings`, bounded for the API.
fn checked(settings: &Settings) -> Result<sim::Scenario, AppError> {
    let scenario = settings
        .scenario()
        .map_err(|error| AppError::BadRequest(error.to_string()))?;
    if scenario.window() > MAX_API_WINDOW {
        return Err(AppError::BadRequest(format!(
            "window: at most {} s on this page (use tolerant simulate for longer)",
            MAX_API_WINDOW.as_secs()
        )));
    }
    let requests = scenario.workload().mean_rate() * scenario.window().as_secs_f64();
    if requests > MAX_API_REQUESTS {
        let field = if settings.users > 0 { "users" } else { "rate" };
        return Err(AppError::BadRequest(format!(
            "{field}: {requests:.0} requests over the window is more than the {MAX_API_REQUESTS} this page simulates (use tolerant simulate)"
        )));
    }
    Ok(scenario)
}

/// `GET /api/simulate?<settings>`: the simulation's totals, closed-form figures and per-second rows.
pub async fn simulate(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
) -> Result<Response, AppError> {
    let settings = settings_of(query.as_deref())?;
    let scenario = checked(&settings)?;
    // Serialized inside the pool too: the answer's bytes are part of what a place may hold.
    let body = state
        .simulations
        .run(move || serde_json::to_vec(&sim::simulate(&scenario)))
        .await?
        .map_err(|error| {
            AppError::Internal(format!("the simulation did not serialize: {error}"))
        })?;
    Ok(([(CONTENT_TYPE, "application/json")], body).into_response())
}

/// `GET /api/simulate/spec?<settings>`: the settings as an experiment spec (TOML), breaker off vs on.
pub async fn spec(RawQuery(query): RawQuery) -> Result<Response, AppError> {
    let settings = settings_of(query.as_deref())?;
    checked(&settings)?;
    let text = spec_text(&settings);
    ExperimentSpec::parse(&text).map_err(|error| {
        AppError::BadRequest(format!("these settings make no runnable spec: {error}"))
    })?;
    Ok(([(CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
}

/// A duration as the spec writes it (`"1m 30s"`), to the millisecond.
fn seconds(duration: std::time::Duration) -> String {
    let millis =
        std::time::Duration::from_millis(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
    humantime::format_duration(millis).to_string()
}

/// The experiment a simulation describes: the window as the measured duration, the outage as the fault's
/// schedule, the breaker as configured, the workload as the load. What a spec cannot say (instances, the
/// call timeout, which is the testbed's) is written as a comment.
pub fn spec_text(settings: &Settings) -> String {
    let window = settings.window;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "# From the simulator page. Not expressed here: {} instance(s), a {} call timeout (the testbed's own), the share of tasks calling the dependency ({}).",
        settings.instances,
        seconds(settings.timeout),
        settings.share
    );
    let _ = writeln!(text, "name = \"simulated\"");
    let _ = writeln!(text, "rounds = 3");
    let _ = writeln!(text, "duration = \"{}\"", seconds(window));
    let _ = writeln!(text, "seed = {}", settings.seed);
    let _ = writeln!(text, "\n[load]");
    if settings.users > 0 {
        let _ = writeln!(text, "users = {}", settings.users);
        let _ = writeln!(
            text,
            "think_time = [\"{}\", \"{}\"]",
            seconds(settings.think_min),
            seconds(settings.think_max)
        );
    } else {
        // Enough users that hanging calls do not hold back the pace.
        let users = (settings.rate * (settings.timeout.as_secs_f64() + 1.0))
            .ceil()
            .clamp(1.0, 100_000.0);
        let _ = writeln!(text, "users = {users}");
        let _ = writeln!(text, "rate = {:?}", settings.rate.max(0.01));
    }
    let schedule = Schedule::Once {
        start: settings.outage_start,
        length: settings.outage,
    };
    let window_ns = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
    let outage = schedule.outages(window_ns).first().copied();
    let _ = writeln!(text, "\n[fault]\ntarget = \"payment\"");
    let kind = match settings.fault {
        sim::CallFailure::Hang => "hang",
        sim::CallFailure::Error => "error",
    };
    let _ = writeln!(text, "kind = \"{kind}\"");
    match outage {
        Some((start, end)) if settings.failure_rate > 0.0 => {
            let _ = writeln!(text, "rates = [{:?}]", settings.failure_rate);
            let length = seconds(std::time::Duration::from_nanos(end - start));
            let start = seconds(std::time::Duration::from_nanos(start));
            if settings.healthy.is_zero() {
                let _ = writeln!(
                    text,
                    "schedule = {{ start = \"{start}\", length = \"{length}\" }}"
                );
            } else {
                let _ = writeln!(
                    text,
                    "schedule = {{ start = \"{start}\", on = \"{}\", off = \"{}\" }}",
                    seconds(settings.outage),
                    seconds(settings.healthy)
                );
            }
        }
        _ => {
            let _ = writeln!(text, "rates = [0.0]");
        }
    }
    let _ = writeln!(text, "\n[breaker]\nmodes = [\"disabled\", \"enforce\"]");
    let _ = writeln!(
        text,
        "\n[breaker.trip]\nconsecutive_failures = {}",
        settings.threshold
    );
    let config = settings.breaker_config();
    let _ = writeln!(
        text,
        "\n[breaker.open]\nbase = \"{}\"\nbackoff = {:?}\nmax = \"{}\"\njitter = {:?}",
        seconds(config.open.base),
        config.open.backoff,
        seconds(config.open.max),
        config.open.jitter
    );
    let probes = match settings.half_open {
        HalfOpen::EveryArrival => "\"all\"".to_owned(),
        HalfOpen::Probes(n) => n.to_string(),
    };
    let _ = writeln!(
        text,
        "\n[breaker.half_open]\nprobes = {probes}\nsuccesses_to_close = {}",
        settings.successes_to_close
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(query: &str) -> Result<Settings, String> {
        settings_of(Some(query)).map_err(|error| match error {
            AppError::BadRequest(message) => message,
            other => panic!("{other:?}"),
        })
    }

    #[test]
    fn query_errors_name_the_setting() {
        for (query, field) in [
            ("threshold=abc", "threshold:"),
            ("open_window=soon", "open_window:"),
            ("half_open=some", "half_open:"),
            ("colour=red", "colour: not a setting"),
            ("rate=1&rate=2", "rate: given twice"),
        ] {
            let message = parse(query).expect_err(query);
            assert!(message.starts_with(field), "{query}: {message}");
        }
        let settings = parse("threshold=0").expect("parses; bounds come next");
        let message = match checked(&settings) {
            Err(AppError::BadRequest(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(message.starts_with("threshold:"), "{message}");
        let settings = parse("rate=50000&window=3600").unwrap();
        let message = match checked(&settings) {
            Err(AppError::BadRequest(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(message.starts_with("rate:"), "{message}");
        let settings = parse("rate=1&window=3601").unwrap();
        let message = match checked(&settings) {
            Err(AppError::BadRequest(message)) => message,
            other => panic!("{other:?}"),
        };
        assert!(message.starts_with("window: at most 3600 s"), "{message}");
    }

    #[test]
    fn every_spec_the_page_makes_parses_and_says_what_the_settings_say() {
        let queries = [
            "",
            "outage_start=0&outage=60",
            "outage_start=50&outage=30",
            "outage=10&healthy=20&outage_start=5&half_open=probes:3&jitter=0.3",
            "users=50&think_min=0.5&think_max=2&fault=error&failure_rate=0.5",
            "outage=0",
            "failure_rate=0",
            "rate=0.5&window=3600&open_window=600&backoff=2",
        ];
        for query in queries {
            let settings = parse(query).expect(query);
            let text = spec_text(&settings);
            let spec =
                ExperimentSpec::parse(&text).unwrap_or_else(|e| panic!("{query}: {e}\n{text}"));
            assert_eq!(spec.duration, settings.window, "{query}");
            assert_eq!(
                spec.breaker.config.trip().consecutive_failures(),
                Some(settings.threshold),
                "{query}"
            );
            assert_eq!(
                spec.breaker.config.open().base(),
                settings.open_window,
                "{query}"
            );
        }
        let spec = controller::test_support::spec(&spec_text(&Settings::default()));
        assert_eq!(
            spec.fault.schedule,
            Some(Schedule::Once {
                start: std::time::Duration::from_secs(10),
                length: std::time::Duration::from_secs(30)
            })
        );
        assert_eq!(spec.load.rate, Some(5.0));
    }
}
