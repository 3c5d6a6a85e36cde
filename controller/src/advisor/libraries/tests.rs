//! Each library's documented example: read, mapped with a note per field, written back and read again to the
//! same effective settings; and the semantics the mapping claims, field by field.

use std::time::Duration;

use super::*;

const RESILIENCE4J: &str = include_str!("examples/resilience4j.yml");
const RESILIENCE4J_1443: &str = include_str!("examples/resilience4j-1443.yml");
const POLLY: &str = include_str!("examples/polly.json");
const GOBREAKER: &str = include_str!("examples/gobreaker.go");
const PYBREAKER: &str = include_str!("examples/pybreaker.py");
const OPOSSUM: &str = include_str!("examples/opossum.js");

/// Import, export with what the import carried, import again: the same effective settings and config.
fn round_trip(library: Library, text: &str, instance: Option<&str>) -> (Imported, String) {
    let first = library
        .import(text, instance)
        .unwrap_or_else(|e| panic!("{library}: {e}"));
    assert!(!first.notes.is_empty(), "{library}: every field is noted");
    let exported = library
        .export(&first.config, "payment", &first.carried)
        .unwrap_or_else(|e| panic!("{library} export: {e}"));
    let again = library
        .import(&exported.text, None)
        .unwrap_or_else(|e| panic!("{library} re-import of\n{}\n{e}", exported.text));
    assert_eq!(
        again.settings, first.settings,
        "{library}:\n{}",
        exported.text
    );
    assert_eq!(again.config, first.config, "{library}");
    (first, exported.text)
}

fn setting<'a>(imported: &'a Imported, key: &str) -> &'a str {
    imported
        .settings
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no setting {key}"))
}

#[test]
fn resilience4j_example_round_trips_each_instance_with_its_base_config_merged() {
    let (a, text) = round_trip(Library::Resilience4j, RESILIENCE4J, Some("backendA"));
    // backendA is the default config: a COUNT_BASED window of 10 calls, 5 of them needed, 50 %.
    let last = a.config.trip().last_calls().expect("count window");
    assert_eq!(
        (last.calls(), last.min_calls(), last.threshold()),
        (10, 5, 0.5)
    );
    assert_eq!(a.config.open().base(), Duration::from_secs(5));
    assert_eq!(
        a.config.half_open().probes(),
        breaker::Probes::limited(3).expect("3")
    );
    assert_eq!(a.config.half_open().successes_to_close(), 3);
    assert!(text.contains("backendA:"), "{text}");
    assert!(
        text.contains("- java.io.IOException"),
        "the exception lists are written back:\n{text}"
    );
    let (b, _) = round_trip(Library::Resilience4j, RESILIENCE4J, Some("backendB"));
    let rate = b.config.trip().failure_rate().expect("time window");
    assert_eq!(
        (rate.window(), rate.min_calls()),
        (Duration::from_secs(10), 10)
    );
    assert_eq!(b.config.open().base(), Duration::from_secs(50));
    assert!(
        b.notes
            .iter()
            .any(|n| n.field.ends_with("recordFailurePredicate")
                && n.kind == NoteKind::Approximation)
    );
    let both = Library::Resilience4j
        .import(RESILIENCE4J, None)
        .expect_err("two instances");
    assert_eq!(both.field, "resilience4j.circuitbreaker.instances");
    assert!(
        both.message.contains("backendA, backendB"),
        "{}",
        both.message
    );
}

#[test]
fn resilience4j_caps_min_calls_for_a_count_window_but_not_for_a_time_window() {
    let count = "resilience4j.circuitbreaker:\n  instances:\n    p:\n      slidingWindowSize: 20\n      minimumNumberOfCalls: 100\n";
    let imported = Library::Resilience4j.import(count, None).expect("valid");
    assert_eq!(
        imported
            .config
            .trip()
            .last_calls()
            .expect("count")
            .min_calls(),
        20
    );
    let (time, _) = round_trip(Library::Resilience4j, RESILIENCE4J_1443, None);
    let rate = time.config.trip().failure_rate().expect("time window");
    assert_eq!(
        (rate.window(), rate.min_calls()),
        (Duration::from_secs(10), 100)
    );
    assert_eq!(setting(&time, "minimumNumberOfCalls"), "100");
}

#[test]
fn resilience4j_refuses_what_it_cannot_model_naming_the_field() {
    let cases = [
        (
            "resilience4j.circuitbreaker:\n  instances:\n    p:\n      slowCallRateThreshold: 50\n",
            "resilience4j.circuitbreaker.instances.p.slowCallRateThreshold",
        ),
        (
            "resilience4j.circuitbreaker:\n  instances:\n    p:\n      enableExponentialBackoff: true\n      enableRandomizedWait: true\n",
            "resilience4j.circuitbreaker.instances.p.enableRandomizedWait",
        ),
        (
            "resilience4j.circuitbreaker:\n  instances:\n    p:\n      failureRateTreshold: 50\n",
            "resilience4j.circuitbreaker.instances.p.failureratetreshold",
        ),
        (
            "resilience4j.circuitbreaker:\n  instances:\n    p:\n      waitDurationInOpenState: soon\n",
            "resilience4j.circuitbreaker.instances.p.waitDurationInOpenState",
        ),
    ];
    for (text, field) in cases {
        let error = Library::Resilience4j.import(text, None).expect_err(field);
        assert_eq!(error.field, field, "{error}");
    }
}

#[test]
fn polly_example_round_trips_and_a_generated_break_is_an_error() {
    let (imported, text) = round_trip(Library::Polly, POLLY, None);
    let rate = imported.config.trip().failure_rate().expect("ratio");
    assert_eq!(
        (rate.threshold(), rate.window(), rate.min_calls()),
        (0.5, Duration::from_secs(10), 8)
    );
    assert_eq!(imported.config.open().base(), Duration::from_secs(30));
    assert!(
        text.contains("\"SamplingDuration\": \"00:00:10\""),
        "{text}"
    );
    let generated = Library::Polly
        .import("{\"BreakDurationGenerator\": \"x\"}", None)
        .expect_err("code");
    assert_eq!(generated.field, "BreakDurationGenerator");
    let low = Library::Polly
        .import("{\"MinimumThroughput\": 1}", None)
        .expect_err("bounds");
    assert_eq!(low.field, "MinimumThroughput");
}

#[test]
fn gobreaker_example_round_trips_and_its_default_is_more_than_five_failures() {
    let (imported, text) = round_trip(Library::Gobreaker, GOBREAKER, None);
    let rate = imported.config.trip().failure_rate().expect("ratio");
    assert_eq!((rate.threshold(), rate.min_calls()), (0.6, 3));
    assert_eq!(
        rate.window(),
        Duration::from_secs(24 * 3600),
        "Interval 0 never clears"
    );
    assert_eq!(
        imported.config.open().base(),
        Duration::from_secs(60),
        "Timeout 0 is 60 s"
    );
    assert_eq!(
        imported.config.half_open().successes_to_close(),
        1,
        "MaxRequests 0 is 1"
    );
    assert!(text.contains("Name:        \"HTTP GET\""), "{text}");
    let default = Library::Gobreaker
        .import(
            "st := gobreaker.Settings{\n\tName: \"x\",\n\tTimeout: 30 * time.Second,\n}",
            None,
        )
        .expect("valid");
    assert_eq!(default.config.trip().consecutive_failures(), Some(6));
    let consecutive = "st := gobreaker.Settings{\n\tMaxRequests: 2,\n\tReadyToTrip: func(counts gobreaker.Counts) bool {\n\t\treturn counts.ConsecutiveFailures > 4\n\t},\n}";
    let (imported, _) = round_trip(Library::Gobreaker, consecutive, None);
    assert_eq!(imported.config.trip().consecutive_failures(), Some(5));
    let custom = "st := gobreaker.Settings{\n\tReadyToTrip: func(counts gobreaker.Counts) bool {\n\t\treturn counts.TotalFailures > 3 || isFriday()\n\t},\n}";
    let error = Library::Gobreaker
        .import(custom, None)
        .expect_err("unmodellable");
    assert_eq!(error.field, "ReadyToTrip");
}

#[test]
fn pybreaker_example_round_trips_with_its_single_probe() {
    let (imported, text) = round_trip(Library::Pybreaker, PYBREAKER, None);
    assert_eq!(imported.config.trip().consecutive_failures(), Some(5));
    assert_eq!(imported.config.open().base(), Duration::from_secs(60));
    assert_eq!(
        imported.config.half_open().probes(),
        breaker::Probes::limited(1).expect("1")
    );
    assert!(text.contains("fail_max=5, reset_timeout=60"), "{text}");
    let threshold = Library::Pybreaker
        .import(
            "CircuitBreaker(fail_max=3, reset_timeout=0.5, success_threshold=2)",
            None,
        )
        .expect("valid");
    assert_eq!(threshold.config.half_open().successes_to_close(), 2);
    let positional = Library::Pybreaker
        .import("CircuitBreaker(5, 60)", None)
        .expect_err("positional");
    assert_eq!(positional.field, "CircuitBreaker");
}

#[test]
fn opossum_example_round_trips_keeping_its_call_timeout() {
    let (imported, text) = round_trip(Library::Opossum, OPOSSUM, None);
    let rate = imported.config.trip().failure_rate().expect("percentage");
    assert_eq!(
        (rate.threshold(), rate.window(), rate.min_calls()),
        (0.5, Duration::from_secs(10), 1)
    );
    assert_eq!(imported.config.open().base(), Duration::from_secs(30));
    assert!(
        text.contains("timeout: 3000"),
        "the call timeout is kept:\n{text}"
    );
    let cached = Library::Opossum
        .import("const options = { cache: true };", None)
        .expect_err("cache");
    assert_eq!(cached.field, "cache");
}

#[test]
fn each_library_says_which_field_of_a_config_it_cannot_express() {
    let mut raw = breaker::RawBreakerConfig::default();
    raw.open.backoff = 2.0;
    raw.open.max = Duration::from_secs(240);
    let doubling = raw.build().expect("valid");
    for library in [
        Library::Polly,
        Library::Gobreaker,
        Library::Pybreaker,
        Library::Opossum,
    ] {
        let error = library
            .expresses(&doubling)
            .expect_err("a fixed open window");
        assert!(
            error.field == "open.backoff" || error.field == "trip",
            "{library}: {error}"
        );
    }
    assert_eq!(
        Library::Pybreaker.expresses(&breaker::BreakerConfig::default()),
        Ok(())
    );
    assert!(
        Library::Resilience4j
            .expresses(&breaker::BreakerConfig::default())
            .is_err(),
        "two successes to close after one permitted call"
    );
    assert_eq!(
        Library::recognise("current.yml", ""),
        Some(Library::Resilience4j)
    );
    assert_eq!(Library::recognise("x.txt", POLLY), Some(Library::Polly));
    assert_eq!("Opossum".parse::<Library>(), Ok(Library::Opossum));
}
