//! Config parsing and validation tests: every error names its field.

use super::*;

fn error_of(toml: &str) -> ConfigError {
    match BreakerConfig::from_toml_str(toml) {
        Ok(config) => panic!("expected an error, parsed {config:?}"),
        Err(error) => error,
    }
}

#[test]
fn empty_document_is_the_study_breaker() {
    let config = BreakerConfig::from_toml_str("").expect("empty is valid");
    assert_eq!(config, BreakerConfig::default());
    assert_eq!(config.trip().consecutive_failures(), Some(5));
    assert_eq!(config.open().base(), Duration::from_secs(30));
    assert_eq!(config.open().max(), Duration::from_secs(300));
    assert_eq!(config.half_open().probes(), Probes::limited(1).expect("1"));
    assert_eq!(config.half_open().successes_to_close(), 2);
}

#[test]
fn full_document_parses() {
    let config = BreakerConfig::from_toml_str(
        r#"
mode = "shadow"
[trip]
consecutive_failures = 3
failure_rate = { threshold = 0.5, window = "2s", min_calls = 20 }
slow_call = { duration = "1s", rate = 0.5, window = "2s", min_calls = 20 }
[open]
base = "250ms"
backoff = 2.0
max = "1m"
jitter = 0.1
seed = 42
[half_open]
probes = "all"
successes_to_close = 3
"#,
    )
    .expect("valid");
    assert_eq!(config.mode(), Mode::Shadow);
    assert_eq!(config.trip().consecutive_failures(), Some(3));
    let rate = config.trip().failure_rate().expect("failure rate");
    assert_eq!(
        (rate.threshold(), rate.window(), rate.min_calls()),
        (0.5, Duration::from_secs(2), 20)
    );
    let slow = config.trip().slow_call().expect("slow call");
    assert_eq!(slow.duration(), Duration::from_secs(1));
    assert_eq!(config.open().base(), Duration::from_millis(250));
    assert_eq!(config.open().seed(), Some(42));
    assert_eq!(config.half_open().probes(), Probes::All);
    let again = BreakerConfig::from_toml_str(&config.to_toml_string()).expect("round trip");
    assert_eq!(again, config);
}

#[test]
fn trip_table_lists_only_the_detectors_it_names() {
    let config = BreakerConfig::from_toml_str(
        "[trip]\nfailure_rate = { threshold = 0.5, window = \"2s\", min_calls = 10 }\n",
    )
    .expect("valid");
    assert_eq!(config.trip().consecutive_failures(), None);
    assert!(config.trip().failure_rate().is_some());
}

#[test]
fn modes_parse() {
    for (text, mode) in [
        ("enforce", Mode::Enforce),
        ("shadow", Mode::Shadow),
        ("forced-open", Mode::ForcedOpen),
        ("disabled", Mode::Disabled),
    ] {
        let config = BreakerConfig::from_toml_str(&format!("mode = \"{text}\"")).expect("valid");
        assert_eq!(config.mode(), mode);
        assert_eq!(mode.as_str(), text);
    }
}

#[test]
fn parse_errors_name_the_field() {
    let cases = [
        ("mode = \"sometimes\"", "mode"),
        ("[half_open]\nprobes = 0", "half_open.probes"),
        ("[half_open]\nprobes = \"some\"", "half_open.probes"),
        ("[half_open]\nprobes = -3", "half_open.probes"),
        ("[open]\nbase = \"thirty\"", "open.base"),
        ("[open]\nbase = 30", "open.base"),
        (
            "[trip]\nfailure_rate = { threshold = 0.5, window = \"2 fortnights\", min_calls = 1 }",
            "trip.failure_rate.window",
        ),
        (
            "[trip]\nfailure_rate = { threshold = 0.5, window = \"2s\" }",
            "trip.failure_rate",
        ),
        ("[open]\nbsae = \"30s\"", "open.bsae"),
        ("colour = \"red\"", "colour"),
        (
            "[trip]\nconsecutive_failures = \"five\"",
            "trip.consecutive_failures",
        ),
    ];
    for (toml, field) in cases {
        let error = error_of(toml);
        assert_eq!(error.field, field, "{toml:?} gave {error}");
        assert!(
            error.to_string().starts_with(&format!("{field}: ")),
            "{error}"
        );
    }
    assert!(error_of("[open]\nbsae = \"30s\"").message.contains("bsae"));
}

#[test]
fn validation_errors_name_the_field() {
    let cases = [
        ("[trip]\n", "trip"),
        (
            "[trip]\nconsecutive_failures = 0",
            "trip.consecutive_failures",
        ),
        (
            "[trip]\nfailure_rate = { threshold = 1.5, window = \"2s\", min_calls = 1 }",
            "trip.failure_rate.threshold",
        ),
        (
            "[trip]\nfailure_rate = { threshold = 0.0, window = \"2s\", min_calls = 1 }",
            "trip.failure_rate.threshold",
        ),
        (
            "[trip]\nfailure_rate = { threshold = 0.5, window = \"5ms\", min_calls = 1 }",
            "trip.failure_rate.window",
        ),
        (
            "[trip]\nfailure_rate = { threshold = 0.5, window = \"2s\", min_calls = 0 }",
            "trip.failure_rate.min_calls",
        ),
        (
            "[trip]\nslow_call = { duration = \"0s\", rate = 0.5, window = \"2s\", min_calls = 1 }",
            "trip.slow_call.duration",
        ),
        (
            "[trip]\nslow_call = { duration = \"1s\", rate = 2.0, window = \"2s\", min_calls = 1 }",
            "trip.slow_call.rate",
        ),
        ("[open]\nbase = \"0s\"", "open.base"),
        ("[open]\nbackoff = 0.5", "open.backoff"),
        ("[open]\nbase = \"10m\"\nmax = \"5m\"", "open.max"),
        ("[open]\njitter = 1.0", "open.jitter"),
        ("[open]\njitter = -0.1", "open.jitter"),
        (
            "[half_open]\nsuccesses_to_close = 0",
            "half_open.successes_to_close",
        ),
        ("[half_open]\nprobes = 2000000", "half_open.probes"),
    ];
    for (toml, field) in cases {
        let error = error_of(toml);
        assert_eq!(error.field, field, "{toml:?} gave {error}");
    }
    assert_eq!(
        error_of("[half_open]\nsuccesses_to_close = 0").to_string(),
        "half_open.successes_to_close: must be at least 1"
    );
}

#[test]
fn probes_display_and_serialise() {
    assert_eq!(Probes::All.to_string(), "all");
    assert_eq!(Probes::limited(3).expect("3").to_string(), "3");
    assert_eq!(Probes::limited(0), None);
    let json = serde_json::to_string(&RawHalfOpenConfig {
        probes: Probes::All,
        successes_to_close: 1,
    })
    .expect("json");
    assert_eq!(json, r#"{"probes":"all","successes_to_close":1}"#);
}

#[test]
fn an_invalid_config_cannot_be_deserialised_and_the_error_names_the_field() {
    let json = r#"{"mode":"enforce","trip":{"consecutive_failures":0}}"#;
    let error = serde_json::from_str::<BreakerConfig>(json).expect_err("invalid");
    assert!(
        error
            .to_string()
            .starts_with("trip.consecutive_failures: must be at least 1"),
        "{error}"
    );
    // Nested in another document (a spec, a settings file) the path of the outer field comes first.
    #[derive(Debug, serde::Deserialize)]
    struct Outer {
        #[allow(dead_code)]
        breaker: BreakerConfig,
    }
    let nested = "[breaker.open]\nbase = \"10m\"\nmax = \"5m\"\n";
    let error = toml::from_str::<Outer>(nested).expect_err("invalid");
    assert!(
        error
            .to_string()
            .contains("open.max: must be at least open.base"),
        "{error}"
    );
    // The same values written raw are accepted as raw, refused as a config.
    let raw: RawBreakerConfig = serde_json::from_str(json).expect("raw is unchecked");
    assert_eq!(raw.trip.consecutive_failures, Some(0));
    let error = BreakerConfig::try_from(raw).expect_err("invalid");
    assert_eq!(error.field, "trip.consecutive_failures");
}

#[test]
fn each_part_is_built_only_valid_and_serialises_as_its_raw_table() {
    let raw_open = RawOpenConfig {
        base: Duration::ZERO,
        ..RawOpenConfig::default()
    };
    let error = OpenConfig::try_from(raw_open).expect_err("a zero base");
    assert_eq!(error.to_string(), "open.base: must be at least 1ms");
    let no_detector = RawTripConfig {
        consecutive_failures: None,
        failure_rate: None,
        last_calls: None,
        slow_call: None,
    };
    assert_eq!(
        TripConfig::try_from(no_detector).expect_err("none").field,
        "trip"
    );
    let slow = RawSlowCallConfig {
        duration: Duration::from_secs(1),
        rate: 0.5,
        window: Duration::from_secs(10),
        min_calls: 0,
    };
    assert_eq!(
        SlowCallConfig::try_from(slow).expect_err("no calls").field,
        "trip.slow_call.min_calls"
    );
    let error = serde_json::from_str::<HalfOpenConfig>(r#"{"successes_to_close":0}"#)
        .expect_err("checked when deserialised");
    assert!(
        error
            .to_string()
            .starts_with("half_open.successes_to_close: must be at least 1"),
        "{error}"
    );
    let rate = RawFailureRateConfig {
        threshold: 0.5,
        window: Duration::from_secs(2),
        min_calls: 3,
    };
    let checked = FailureRateConfig::try_from(rate.clone()).expect("valid");
    assert_eq!(
        serde_json::to_string(&checked).expect("json"),
        serde_json::to_string(&rate).expect("json")
    );
    assert_eq!(RawFailureRateConfig::from(checked), rate);
}

#[test]
fn a_config_serialises_as_its_raw_values_and_reads_back() {
    let mut raw = RawBreakerConfig::default();
    raw.open.jitter = 0.25;
    raw.half_open.probes = Probes::All;
    let config = raw.clone().build().expect("valid");
    let json = serde_json::to_string(&config).expect("json");
    assert_eq!(json, serde_json::to_string(&raw).expect("json"));
    assert_eq!(
        serde_json::from_str::<BreakerConfig>(&json).expect("valid"),
        config
    );
    assert_eq!(config.clone().into_raw(), raw);
    assert_eq!(config.with_mode(Mode::Shadow).mode(), Mode::Shadow);
}

#[test]
fn time_scaling_divides_the_windows_and_checks_the_result() {
    let config = BreakerConfig::from_toml_str(
        "[trip]\nfailure_rate = { threshold = 0.5, window = \"20s\", min_calls = 5 }\nslow_call = { duration = \"1s\", rate = 0.5, window = \"20s\", min_calls = 5 }\n[open]\nbase = \"30s\"\nmax = \"5m\"\n",
    )
    .expect("valid");
    let scaled = config.time_scaled(10.0).expect("valid");
    assert_eq!(
        (scaled.open().base(), scaled.open().max()),
        (Duration::from_secs(3), Duration::from_secs(30))
    );
    let trip = scaled.trip();
    assert_eq!(
        trip.failure_rate().map(|r| r.window()),
        Some(Duration::from_secs(2))
    );
    let slow = trip.slow_call().expect("slow call");
    assert_eq!(
        (slow.window(), slow.duration()),
        (Duration::from_secs(2), Duration::from_secs(1))
    );
    let error = config.time_scaled(10_000.0).expect_err("a 2ms window");
    assert_eq!(error.field, "trip.failure_rate.window");
    assert_eq!(
        config.time_scaled(0.0).expect_err("saturated").field,
        "trip.failure_rate.window"
    );
}

#[test]
fn last_calls_is_checked_field_by_field_and_round_trips() {
    let config = BreakerConfig::from_toml_str(
        "[trip]\nlast_calls = { threshold = 0.5, calls = 100, min_calls = 20 }\n",
    )
    .expect("valid");
    assert_eq!(config.trip().consecutive_failures(), None);
    let last = config.trip().last_calls().expect("last_calls");
    assert_eq!(
        (last.threshold(), last.calls(), last.min_calls()),
        (0.5, 100, 20)
    );
    assert_eq!(
        BreakerConfig::from_toml_str(&config.to_toml_string()).expect("round trip"),
        config
    );
    for (table, field, message) in [
        (
            "{ threshold = 0.0, calls = 10, min_calls = 1 }",
            "trip.last_calls.threshold",
            "must be in (0, 1], got 0",
        ),
        (
            "{ threshold = 0.5, calls = 0, min_calls = 1 }",
            "trip.last_calls.calls",
            "must be between 1 and 1000000, got 0",
        ),
        (
            "{ threshold = 0.5, calls = 2000000, min_calls = 1 }",
            "trip.last_calls.calls",
            "must be between 1 and 1000000, got 2000000",
        ),
        (
            "{ threshold = 0.5, calls = 10, min_calls = 11 }",
            "trip.last_calls.min_calls",
            "must be at least 1 and at most calls (10), got 11",
        ),
        (
            "{ threshold = 0.5, calls = 10, min_calls = 0 }",
            "trip.last_calls.min_calls",
            "must be at least 1 and at most calls (10), got 0",
        ),
    ] {
        let error = error_of(&format!("[trip]\nlast_calls = {table}\n"));
        assert_eq!(
            (error.field.as_str(), error.message.as_str()),
            (field, message)
        );
    }
    let unknown = error_of(
        "[trip]\nlast_calls = { threshold = 0.5, calls = 10, min_calls = 1, window = \"1s\" }\n",
    );
    assert_eq!(unknown.field, "trip.last_calls.window");
}

#[test]
fn a_config_without_a_window_of_calls_serialises_as_before() {
    // Byte-stable wire shape: the new detector adds no key to a config that does not use it.
    let text = BreakerConfig::default().to_toml_string();
    assert!(!text.contains("last_calls"), "{text}");
    let json = serde_json::to_string(&BreakerConfig::default()).expect("json");
    assert_eq!(
        json,
        r#"{"mode":"enforce","trip":{"consecutive_failures":5},"open":{"base":"30s","backoff":1.0,"max":"5m","jitter":0.0},"half_open":{"probes":1,"successes_to_close":2}}"#
    );
}
