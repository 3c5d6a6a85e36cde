//! Unit tests of the HDR and outcome accounting.

use std::time::Duration;

use super::*;

const MS: Duration = Duration::from_millis(1);

#[test]
fn outcome_classes_follow_status_and_rejection_header() {
    assert_eq!(RequestOutcome::of_response(200, false), RequestOutcome::Ok);
    assert_eq!(RequestOutcome::of_response(302, false), RequestOutcome::Ok);
    assert_eq!(
        RequestOutcome::of_response(404, false),
        RequestOutcome::ClientError
    );
    assert_eq!(
        RequestOutcome::of_response(422, false),
        RequestOutcome::ClientError
    );
    assert_eq!(
        RequestOutcome::of_response(500, false),
        RequestOutcome::Failed
    );
    assert_eq!(
        RequestOutcome::of_response(503, false),
        RequestOutcome::Failed
    );
    // The header wins over the status: a breaker rejection is not an upstream failure.
    assert_eq!(
        RequestOutcome::of_response(503, true),
        RequestOutcome::Rejected
    );
    assert_eq!(
        RequestOutcome::of_response(200, true),
        RequestOutcome::Rejected
    );
}

#[test]
fn outcome_counts_add_merge_and_availability() {
    let mut counts = OutcomeCounts::default();
    assert_eq!(counts.availability(), None);
    for outcome in RequestOutcome::ALL {
        counts.add(outcome);
    }
    counts.add(RequestOutcome::Ok);
    assert_eq!(counts.total(), 7);
    assert_eq!(counts.ok, 2);
    assert_eq!(counts.availability(), Some(2.0 / 7.0));
    let mut merged = counts;
    merged.merge(&counts);
    for outcome in RequestOutcome::ALL {
        assert_eq!(merged.get(outcome), 2 * counts.get(outcome), "{outcome:?}");
    }
}

#[test]
fn endpoint_stats_record_all_and_ok_latencies() {
    let mut stats = EndpointStats::default();
    stats.record(RequestOutcome::Ok, 1_000, 0);
    stats.record(RequestOutcome::Ok, 3_000, 0);
    stats.record(RequestOutcome::Failed, 50_000, 0);
    assert_eq!(stats.latency.len(), 3);
    assert_eq!(stats.latency_ok.len(), 2);
    assert_eq!(
        stats.latency_ok.max(),
        stats.latency_ok.highest_equivalent(3_000)
    );
    assert_eq!(stats.outcomes.failed, 1);
    let summary = LatencySummary::of(&stats.latency);
    assert_eq!(summary.count, 3);
    assert_eq!(summary.p50_us, stats.latency.highest_equivalent(3_000));
    assert_eq!(summary.max_us, stats.latency.highest_equivalent(50_000));
}

/// A fast rejection must not pull the successes' p95 down: each second keeps the two apart.
#[test]
fn a_second_keeps_ok_and_failed_latency_apart() {
    const MS: Duration = Duration::from_millis(1);
    let mut recorder = Recorder::new(1, Duration::ZERO, None);
    for index in 0..20 {
        recorder.record(0, index * MS, RequestOutcome::Ok, 800 * MS, Duration::ZERO);
        recorder.record(0, index * MS, RequestOutcome::Rejected, MS, Duration::ZERO);
    }
    let (seconds, _) = recorder.finish(1);
    let endpoint = &seconds[0].endpoints[0];
    assert_eq!(endpoint.latency_ok.count, 20);
    assert_eq!(endpoint.latency_failed.count, 20);
    assert!(
        (790_000..=810_000).contains(&endpoint.latency_ok.p95_us),
        "{:?}",
        endpoint.latency_ok
    );
    assert!(
        endpoint.latency_failed.p95_us <= 1_001,
        "{:?}",
        endpoint.latency_failed
    );
    // All outcomes together: half the requests are fast rejections.
    assert_eq!(endpoint.latency.count, 40);
}

#[test]
fn percentiles_of_a_known_distribution() {
    let mut stats = EndpointStats::default();
    for us in 1..=10_000u64 {
        stats.record(RequestOutcome::Ok, us, 0);
    }
    let summary = LatencySummary::of(&stats.latency);
    // Three significant digits: within 0.1 %.
    for (got, want) in [
        (summary.p50_us, 5_000.0),
        (summary.p95_us, 9_500.0),
        (summary.p99_us, 9_900.0),
    ] {
        assert!((got as f64 - want).abs() / want < 0.002, "{got} vs {want}");
    }
}

#[test]
fn record_correct_backfills_a_stall() {
    let mut stats = EndpointStats::default();
    // Paced at 10 ms, one request stalled for 100 ms: the 9 requests it held back are back-filled.
    stats.record(RequestOutcome::Ok, 100_000, 10_000);
    assert_eq!(stats.latency.len(), 10);
    assert_eq!(
        stats.outcomes.total(),
        1,
        "outcomes count real requests only"
    );
    let mut uncorrected = EndpointStats::default();
    uncorrected.record(RequestOutcome::Ok, 100_000, 0);
    assert_eq!(uncorrected.latency.len(), 1);
}

#[test]
fn latencies_above_the_range_are_clamped() {
    assert_eq!(latency_us(Duration::from_secs(10 * 3600)), MAX_LATENCY_US);
    let mut stats = EndpointStats::default();
    stats.record(RequestOutcome::Timeout, u64::MAX, 0);
    assert_eq!(stats.latency.len(), 1);
}

#[test]
fn recorder_splits_seconds_and_cuts_the_warmup_from_totals() {
    let mut recorder = Recorder::new(2, Duration::from_secs(1), None);
    recorder.record(0, 100 * MS, RequestOutcome::Ok, 5 * MS, Duration::ZERO);
    recorder.record(1, 900 * MS, RequestOutcome::Failed, 7 * MS, Duration::ZERO);
    recorder.record(0, 1_200 * MS, RequestOutcome::Ok, 9 * MS, Duration::ZERO);
    recorder.record(0, 3_500 * MS, RequestOutcome::Rejected, MS, Duration::ZERO);
    let (seconds, totals) = recorder.finish(4);

    assert_eq!(seconds.len(), 4);
    assert!(seconds[0].warmup);
    assert!(!seconds[1].warmup);
    assert_eq!(seconds[0].endpoints.len(), 2);
    assert_eq!(seconds[0].outcomes().total(), 2);
    assert_eq!(seconds[1].outcomes().ok, 1);
    assert!(
        seconds[2].endpoints.is_empty(),
        "an idle second is still a second"
    );
    assert_eq!(seconds[3].outcomes().rejected, 1);

    // Totals: the measured part only.
    assert_eq!(totals[0].outcomes.total(), 2);
    assert_eq!(totals[0].outcomes.ok, 1);
    assert_eq!(totals[1].outcomes.total(), 0);

    // Per-second histograms survive serialisation.
    let histogram = deserialize_histogram(&seconds[1].endpoints[0].histogram_v2).unwrap();
    assert_eq!(histogram.len(), 1);
    assert_eq!(
        histogram.max(),
        histogram.highest_equivalent(9_000),
        "latency in microseconds"
    );
    assert_eq!(seconds[1].endpoints[0].latency.count, 1);
}

#[test]
fn recorder_sends_closed_seconds_to_a_sink() {
    let (sink, mut closed) = tokio::sync::mpsc::unbounded_channel();
    let mut recorder = Recorder::new(1, Duration::ZERO, Some(sink));
    recorder.record(0, 10 * MS, RequestOutcome::Ok, MS, Duration::ZERO);
    recorder.advance_to(2);
    assert_eq!(closed.try_recv().unwrap().second, 0);
    assert_eq!(closed.try_recv().unwrap().second, 1);
    assert!(closed.try_recv().is_err(), "second 2 is still open");
    let (kept, totals) = recorder.finish(3);
    assert!(kept.is_empty());
    assert_eq!(totals[0].outcomes.ok, 1);
    assert_eq!(closed.try_recv().unwrap().second, 2);
}

#[test]
fn histogram_round_trips_through_v2() {
    let mut histogram = new_histogram();
    for value in [1u64, 10, 100, 1_000, 10_000, 1_000_000] {
        histogram.record_n(value, value).unwrap();
    }
    let bytes = serialize_histogram(&histogram);
    let back = deserialize_histogram(&bytes).unwrap();
    assert_eq!(back.len(), histogram.len());
    assert_eq!(
        back.value_at_quantile(0.99),
        histogram.value_at_quantile(0.99)
    );
    assert!(
        bytes.len() < 200,
        "sparse histograms stay small: {}",
        bytes.len()
    );
}

/// A config is checked when it is made, before the driver can be handed it: every refusal names its field.
#[test]
fn config_errors_name_the_field() {
    let valid = LoadSettings {
        target: "127.0.0.1:9".parse().unwrap(),
        workload: Workload::OnlineBoutique,
        users: 1,
        think_time: (Duration::ZERO, Duration::ZERO),
        rate: None,
        timeout: Duration::from_secs(1),
        warmup: Duration::ZERO,
        duration: Duration::from_secs(1),
        seed: 0,
    };
    let error_of = |settings: LoadSettings| {
        LoadConfig::try_from(settings)
            .expect_err("refused")
            .to_string()
    };
    let year = Duration::from_secs(366 * 24 * 3600);
    for (settings, field) in [
        (
            LoadSettings {
                users: 0,
                ..valid.clone()
            },
            "load.users",
        ),
        (
            LoadSettings {
                users: 100_001,
                ..valid.clone()
            },
            "load.users",
        ),
        (
            LoadSettings {
                rate: Some(0.0),
                ..valid.clone()
            },
            "load.rate",
        ),
        (
            LoadSettings {
                rate: Some(f64::NAN),
                ..valid.clone()
            },
            "load.rate",
        ),
        (
            LoadSettings {
                rate: Some(1e-300),
                ..valid.clone()
            },
            "load.rate",
        ),
        (
            LoadSettings {
                rate: Some(1e9),
                ..valid.clone()
            },
            "load.rate",
        ),
        (
            LoadSettings {
                think_time: (MS, Duration::ZERO),
                ..valid.clone()
            },
            "load.think_time",
        ),
        (
            LoadSettings {
                think_time: (Duration::ZERO, year + MS),
                ..valid.clone()
            },
            "load.think_time",
        ),
        (
            LoadSettings {
                timeout: Duration::ZERO,
                ..valid.clone()
            },
            "load.timeout",
        ),
        (
            LoadSettings {
                timeout: Duration::from_secs(601),
                ..valid.clone()
            },
            "load.timeout",
        ),
        (
            LoadSettings {
                workload: Workload::Fixed {
                    path: "no slash".into(),
                },
                ..valid.clone()
            },
            "load.path",
        ),
    ] {
        let message = error_of(settings);
        assert!(message.starts_with(field), "{field}: {message}");
    }
    // At the bounds: made.
    for settings in [
        LoadSettings {
            users: 100_000,
            ..valid.clone()
        },
        LoadSettings {
            rate: Some(1e6),
            think_time: (year, year),
            ..valid.clone()
        },
        LoadSettings {
            timeout: Duration::from_secs(600),
            ..valid.clone()
        },
    ] {
        let config = LoadConfig::try_from(settings.clone()).expect("valid");
        assert_eq!(config.settings().users, settings.users);
    }
}

fn valid(settings: LoadSettings) -> LoadConfig {
    settings.try_into().expect("valid load config")
}

fn fixed(target: std::net::SocketAddr, path: &str, users: u32) -> LoadSettings {
    LoadSettings {
        target,
        workload: Workload::Fixed { path: path.into() },
        users,
        think_time: (Duration::ZERO, 10 * MS),
        rate: None,
        timeout: Duration::from_secs(2),
        warmup: Duration::ZERO,
        duration: Duration::from_millis(300),
        seed: 1,
    }
}

/// A request whose task panics is the driver's failure: counted with its reason, in no outcome (it
/// was not a served request). (How many are counted depends on how fast the panic hook prints.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicked_request_is_a_driver_failure_not_an_outcome() {
    // The panic comes before any connect: the address is never dialled.
    let addr = "127.0.0.1:9".parse().unwrap();
    let report = run(valid(fixed(addr, PANICKING_PATH, 3)), None).await;
    assert_eq!(report.outcomes().total(), 0, "{:?}", report.outcomes());
    let failures = &report.driver_failures;
    assert!(failures.count >= 1, "{failures:?}");
    let first = failures.first.as_deref().unwrap_or("");
    assert!(
        first.starts_with("a request panicked: a request to /__panics panics"),
        "{first}"
    );
}

/// Requests the target refuses are the target's connection errors, not the driver's failures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_target_is_not_a_driver_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let report = run(valid(fixed(addr, "/", 2)), None).await;
    assert!(report.outcomes().connection_error > 0);
    assert_eq!(report.driver_failures, DriverFailures::default());
}
