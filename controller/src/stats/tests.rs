//! Unit tests: t critical values, summaries and Welch against hand-computed numbers, per-run metrics
//! from synthetic rows, per-condition grouping, interval coverage; criteria in `criteria.rs`.

use crate::test_support;
use breaker::State;
use std::collections::BTreeMap;

use super::*;
use crate::load::{OutcomeCounts, new_histogram, serialize_histogram};
use crate::metric::{MetricKey, MetricName, cart_view_endpoint, checkout_endpoint};
use crate::store::{
    CollectorSample, EndpointHistogramRow, EndpointSecondRow, EnergySource, ExperimentId, RunId,
    RunRow, SampleRow, Status, StoredLatency, TransitionRecord,
};

mod at_rate;
mod criteria;
mod probe_buckets;

fn close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not within {tolerance} of {expected}"
    );
}

// ---- Student t ----

/// t(0.975, df) as published (R's `qt(0.975, df)`, 7 decimals).
const T975: [(f64, f64); 34] = [
    (1.0, 12.7062047),
    (2.0, 4.3026527),
    (3.0, 3.1824463),
    (4.0, 2.7764451),
    (5.0, 2.5705818),
    (6.0, 2.4469119),
    (7.0, 2.3646243),
    (8.0, 2.3060041),
    (9.0, 2.2621572),
    (10.0, 2.2281389),
    (11.0, 2.2009852),
    (12.0, 2.1788128),
    (13.0, 2.1603687),
    (14.0, 2.1447867),
    (15.0, 2.1314495),
    (16.0, 2.1199053),
    (17.0, 2.1098156),
    (18.0, 2.1009220),
    (19.0, 2.0930241),
    (20.0, 2.0859634),
    (21.0, 2.0796138),
    (22.0, 2.0738731),
    (23.0, 2.0686576),
    (24.0, 2.0638986),
    (25.0, 2.0595386),
    (26.0, 2.0555294),
    (27.0, 2.0518305),
    (28.0, 2.0484071),
    (29.0, 2.0452296),
    (30.0, 2.0422725),
    (40.0, 2.0210754),
    (60.0, 2.0002978),
    (120.0, 1.9799304),
    (1000.0, 1.9623391),
];

#[test]
fn t_critical_values_match_the_published_table() {
    for (df, expected) in T975 {
        let t = t_critical_95(df).unwrap();
        close(t, expected, 1e-6);
    }
}

#[test]
fn t_for_fifteen_rounds_is_2_1448() {
    // n = 15 rounds → df = 14, the figure docs/peers.md quotes.
    let t = t_critical_95(14.0).unwrap();
    assert_eq!(format!("{t:.4}"), "2.1448");
}

#[test]
fn t_has_closed_forms_at_one_and_two_degrees_of_freedom() {
    // df = 1 is the Cauchy distribution: t = tan(π (0.975 − 0.5)).
    close(
        t_critical_95(1.0).unwrap(),
        (std::f64::consts::PI * 0.475).tan(),
        1e-9,
    );
    // df = 2: t = (2p − 1) / √(2 p (1 − p)) with p = 0.975.
    close(
        t_critical_95(2.0).unwrap(),
        0.95 / (2.0f64 * 0.975 * 0.025).sqrt(),
        1e-9,
    );
}

#[test]
fn t_at_fractional_df_matches_numerical_integration() {
    // References from Simpson integration of the t density (20 000 steps) and bisection.
    close(t_critical_95(2.5).unwrap(), 3.574_654_8, 1e-6);
    close(
        t_critical_95(4.075_471_698_113_208).unwrap(),
        2.756_284_9,
        1e-6,
    );
}

#[test]
fn t_falls_with_df_towards_the_normal_quantile_and_is_continuous_at_the_switch() {
    let mut previous = f64::INFINITY;
    for df in [
        0.5, 1.0, 1.5, 3.0, 10.0, 100.0, 5000.0, 9999.0, 10_001.0, 1e6, 1e12,
    ] {
        let t = t_critical_95(df).unwrap();
        assert!(t < previous, "t({df}) = {t} is not below {previous}");
        assert!(t > Z_975);
        previous = t;
    }
    let below = t_critical_95(LARGE_DF).unwrap();
    let above = t_critical_95(LARGE_DF * (1.0 + 1e-12)).unwrap();
    close(below, above, 1e-10);
    close(t_critical_95(1e12).unwrap(), Z_975, 1e-9);
}

#[test]
fn t_rejects_meaningless_df() {
    for df in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(t_critical_95(df), None, "df = {df}");
    }
}

// ---- Summary and Welch ----

#[test]
fn summary_of_a_hand_computed_example() {
    // values 2 4 4 4 5 5 7 9: n = 8, mean = 40 / 8 = 5,
    // squared deviations 9 1 1 1 0 0 4 16 → 32, s² = 32 / 7 = 4.571429, s = 2.138090,
    // t(0.975, 7) = 2.364624, h = 2.364624 · 2.138090 / √8 = 1.787488,
    // CI = [3.212512, 6.787488].
    let summary = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
    assert_eq!(summary.n, 8);
    close(summary.mean, 5.0, 1e-12);
    close(summary.sd.unwrap(), 2.138_090, 1e-6);
    close(summary.half_width.unwrap(), 1.787_488, 1e-6);
    close(summary.ci_low.unwrap(), 3.212_512, 1e-6);
    close(summary.ci_high.unwrap(), 6.787_488, 1e-6);
}

#[test]
fn summary_of_fifteen_rounds_uses_2_1448() {
    // values 1..=15: mean 8, Σ(x − 8)² = 280, s = √(280 / 14) = √20 = 4.472136,
    // h = 2.144787 · 4.472136 / √15 = 2.476586.
    let values: Vec<f64> = (1..=15).map(f64::from).collect();
    let summary = Summary::of(&values).unwrap();
    close(summary.mean, 8.0, 1e-12);
    close(summary.sd.unwrap(), 20f64.sqrt(), 1e-12);
    close(summary.half_width.unwrap(), 2.476_586, 1e-6);
}

#[test]
fn summary_of_one_round_has_no_interval_and_of_none_is_nothing() {
    let one = Summary::of(&[0.7]).unwrap();
    assert_eq!((one.n, one.mean), (1, 0.7));
    assert_eq!((one.sd, one.half_width, one.interval()), (None, None, None));
    assert_eq!(Summary::of(&[]), None);
    assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
}

#[test]
fn constant_rounds_have_a_zero_width_interval() {
    let summary = Summary::of(&[57.0; 15]).unwrap();
    assert_eq!(summary.sd, Some(0.0));
    assert_eq!(summary.interval(), Some((57.0, 57.0)));
}

#[test]
fn welch_difference_of_a_hand_computed_example() {
    // off = 10 12 14: mean 12, s² = 4, n = 3 → s²/n = 4/3; CI 12 ± 4.302653·2/√3 = 12 ± 4.968275.
    // on = 20 24 28 32: mean 26, s² = 80/3, n = 4 → s²/n = 20/3; CI 26 ± 3.182446·√(80/3)/2
    //      = 26 ± 8.217041.
    // se² = 4/3 + 20/3 = 8, df = 8² / ((4/3)²/2 + (20/3)²/3) = 64 / (8/9 + 400/27) = 4.075472,
    // t(0.975, 4.075472) = 2.756285, h = 2.756285 · √8 = 7.795951,
    // difference 14, CI [6.204049, 21.795951]; 16.968275 < 17.782959: the intervals separate.
    let off = Summary::of(&[10.0, 12.0, 14.0]).unwrap();
    let on = Summary::of(&[20.0, 24.0, 28.0, 32.0]).unwrap();
    close(off.half_width.unwrap(), 4.968_275, 1e-6);
    close(on.half_width.unwrap(), 8.217_041, 1e-6);
    let difference = Difference::welch(&off, &on).unwrap();
    close(difference.difference, 14.0, 1e-12);
    close(difference.df, 4.075_472, 1e-6);
    close(difference.half_width, 7.795_951, 1e-5);
    close(difference.ci_low, 6.204_049, 1e-5);
    close(difference.ci_high, 21.795_951, 1e-5);
    assert!(difference.intervals_separate);
    assert!(difference.excludes_zero);
    assert_eq!(difference.verdict, Verdict::Separate);
}

#[test]
fn welch_with_equal_variances_and_sizes_matches_the_pooled_test() {
    // Both s² = 1, n = 5: pooled df = 8 and Welch's df = 4·(0.2+0.2)² / (0.04 + 0.04) = 8.
    let a = Summary::of(&[1.0, 2.0, 3.0, 2.0, 2.0]).unwrap();
    let b = Summary::of(&[2.0, 3.0, 4.0, 3.0, 3.0]).unwrap();
    let sd = a.sd.unwrap();
    let d = Difference::welch(&a, &b).unwrap();
    close(d.df, 8.0, 1e-9);
    let pooled = 2.306_004_1 * (sd * sd * (2.0 / 5.0)).sqrt();
    close(d.half_width, pooled, 1e-6);
}

#[test]
fn welch_verdicts_overlap_and_difference_only() {
    // Overlapping intervals whose difference still excludes zero:
    // a = 0 1 2 … ; b shifted by 1.6: per-condition h = 2.262157·3.02765/√10 = 2.16584,
    // difference h = 2.100922·√(2·0.916667) = 2.84476 > 1.6 → not separated at all.
    let a: Vec<f64> = (0..10).map(f64::from).collect();
    let b: Vec<f64> = a.iter().map(|v| v + 1.6).collect();
    let d = Difference::welch(&Summary::of(&a).unwrap(), &Summary::of(&b).unwrap()).unwrap();
    assert_eq!(d.verdict, Verdict::NotSeparated);
    // Shifted by 3.5: the intervals (h 2.16584 each) overlap, the difference's (h 2.84476) not.
    let c: Vec<f64> = a.iter().map(|v| v + 3.5).collect();
    let d = Difference::welch(&Summary::of(&a).unwrap(), &Summary::of(&c).unwrap()).unwrap();
    assert!(!d.intervals_separate);
    assert!(d.excludes_zero);
    assert_eq!(d.verdict, Verdict::DifferenceOnly);
    // Needs two rounds on each side.
    assert_eq!(
        Difference::welch(&Summary::of(&[1.0]).unwrap(), &Summary::of(&a).unwrap()),
        None
    );
}

// ---- per-run metrics ----

const START_MS: i64 = 1_000_000;

fn histogram_of(values_us: &[u64]) -> Vec<u8> {
    let mut histogram = new_histogram();
    for &value in values_us {
        histogram.record(value).unwrap();
    }
    serialize_histogram(&histogram)
}

fn outcomes(ok: u64, failed: u64, rejected: u64) -> OutcomeCounts {
    OutcomeCounts {
        ok,
        failed,
        rejected,
        ..OutcomeCounts::default()
    }
}

fn run_row(condition_index: i64, round: i64) -> RunRow {
    RunRow {
        id: RunId(round * 10 + condition_index),
        experiment_id: ExperimentId(1),
        plan_index: round * 10 + condition_index,
        round_index: round,
        condition_index,
        condition_label: format!("condition {condition_index}"),
        fault_kind: "error".into(),
        fault_rate: 0.5,
        breaker_mode: "enforce".into(),
        condition_json: "{}".into(),
        status: Status::Finished,
        warmup_ms: 2_000,
        duration_ms: 10_000,
        started_at_ms: Some(START_MS),
        finished_at_ms: Some(START_MS + 12_500),
        abort_reason: None,
        outcomes: Some(outcomes(90, 5, 5)),
        energy: Some((500.0, EnergySource::Modelled)),
        load_errors: Some(0),
    }
}

fn transition(breaker: &str, at_ms: i64, from: State, to: State) -> TransitionRecord {
    TransitionRecord {
        at_ms,
        service: "frontend".into(),
        breaker: breaker.into(),
        from,
        to,
        reason: breaker::Reason::Forced,
        detail: breaker::TransitionDetail::default(),
        seq: at_ms,
        shadow: false,
        source: None,
    }
}

fn cart_second(second: i64, latencies_us: &[u64]) -> EndpointSecondRow {
    EndpointSecondRow {
        second,
        endpoint: cart_view_endpoint().into(),
        outcomes: outcomes(latencies_us.len() as u64, 0, 0),
        latency: StoredLatency::default(),
        p95_ok_us: None,
        p95_failed_us: None,
        histogram_v2: histogram_of(latencies_us),
    }
}

/// A run with warmup 2 s and a measured window of 10 s (seconds 2..=11 of the load).
fn run_data() -> RunData {
    // Cart size: second s holds s items, except warmup (0, 1) and the second past the window (12),
    // which hold values that must not show up.
    let samples = (0..=12)
        .map(|second| SampleRow {
            second,
            warmup: second < 2,
            outcomes: OutcomeCounts::default(),
            collector: CollectorSample {
                second: second as u64,
                cart_mean_items: Some(match second {
                    0 | 1 => 100.0,
                    12 => 1000.0,
                    s => s as f64,
                }),
                ..CollectorSample::default()
            },
        })
        .collect();
    let endpoint_seconds = vec![
        cart_second(0, &[50_000]),
        cart_second(2, &[100, 200]),
        cart_second(3, &[300]),
        cart_second(6, &[700]),
        cart_second(10, &[1000]),
        cart_second(11, &[1500, 2000]),
    ];
    let checkout_latencies: Vec<u64> = (1..=100).collect();
    let endpoint_histograms = vec![EndpointHistogramRow {
        endpoint: checkout_endpoint().into(),
        outcomes: outcomes(75, 20, 5),
        latency: StoredLatency::default(),
        mean_us: 0.0,
        histogram_v2: histogram_of(&checkout_latencies),
        histogram_ok_v2: histogram_of(&[]),
    }];
    let from = START_MS + 2_000;
    let transitions = vec![
        transition("frontend->checkout", from - 500, State::Closed, State::Open),
        transition(
            "frontend->checkout",
            from + 1_000,
            State::Open,
            State::HalfOpen,
        ),
        transition(
            "frontend->checkout",
            from + 1_100,
            State::HalfOpen,
            State::Open,
        ),
        transition(
            "frontend->checkout",
            from + 3_000,
            State::Open,
            State::HalfOpen,
        ),
        transition(
            "frontend->checkout",
            from + 3_050,
            State::HalfOpen,
            State::Closed,
        ),
        transition(
            "frontend->checkout",
            from + 9_000,
            State::Closed,
            State::Open,
        ),
        transition(
            "checkout->payment",
            from + 2_000,
            State::Closed,
            State::Open,
        ),
        transition(
            "checkout->payment",
            from + 2_500,
            State::Open,
            State::HalfOpen,
        ),
        transition(
            "checkout->payment",
            from + 11_000,
            State::HalfOpen,
            State::Open,
        ),
    ];
    RunData {
        run: run_row(0, 0),
        samples,
        endpoint_seconds,
        endpoint_histograms,
        transitions,
        probe_buckets: None,
    }
}

/// The probe counter of two Payment replicas, as the sampler stores `/metrics`, at the seconds given.
fn probe_sample(second: i64, payment: f64, replica: f64) -> SampleRow {
    SampleRow {
        second,
        warmup: second < 2,
        outcomes: OutcomeCounts::default(),
        collector: CollectorSample {
            second: second as u64,
            extra: Some(serde_json::json!({ "metrics": {
                "payment": { "tolerant_agent_probes_total": payment, "tolerant_agent_requests_total": 1e6 },
                "payment#2": { "tolerant_agent_probes_total": replica },
                "cart": { "boutique_http_requests_total": 12.0 },
            }})),
            ..CollectorSample::default()
        },
    }
}

#[test]
fn probes_per_second_are_the_counters_increase_between_consecutive_measured_seconds() {
    let mut data = run_data();
    // Measured seconds 2..=11. The increase into second 3 is 5 + 2 = 7 (the peak); into 5 and 11 one each;
    // second 6 is missing, so 5 → 7 is no one-second increase; the agent restarted at 9 (counter back to 3,
    // not counted); warmup (into 1) and second 12 (past the window) are not measured.
    data.samples = [
        (0, 0.0, 7.0),
        (1, 100.0, 7.0),
        (2, 100.0, 7.0),
        (3, 105.0, 9.0),
        (4, 105.0, 9.0),
        (5, 106.0, 9.0),
        (7, 110.0, 9.0),
        (8, 110.0, 9.0),
        (9, 3.0, 9.0),
        (10, 3.0, 9.0),
        (11, 4.0, 9.0),
        (12, 50.0, 9.0),
    ]
    .into_iter()
    .map(|(second, payment, replica)| probe_sample(second, payment, replica))
    .collect();
    let metrics = run_metrics(&data).unwrap();
    let get = |metric| metrics.get(&MetricKey::run(metric)).unwrap();
    close(get(MetricName::ProbesPeakPerS), 7.0, 0.0);
    // Increases into 2, 3, 4, 5, 8, 10, 11: 0 + 7 + 0 + 1 + 0 + 0 + 1 = 9 over 7 seconds.
    close(get(MetricName::ProbesMeanPerS), 9.0 / 7.0, 1e-12);
    // Without the counter in any sample there is no probe figure (not a zero).
    let plain = run_metrics(&run_data()).unwrap();
    assert!(
        plain
            .get(&MetricKey::run(MetricName::ProbesPeakPerS))
            .is_none()
    );
    assert!(
        plain
            .get(&MetricKey::run(MetricName::ProbesMeanPerS))
            .is_none()
    );
}

#[test]
fn run_metrics_from_hand_built_rows() {
    let metrics = run_metrics(&run_data()).unwrap();
    let get = |metric| metrics.get(&MetricKey::run(metric)).unwrap();
    // 90 ok of 100 requests (5 failed, 5 rejected: a rejection is a failure).
    close(get(MetricName::Availability), 0.9, 1e-12);
    // 90 ok over the 10 s measured window.
    close(get(MetricName::ThroughputOk), 9.0, 1e-12);
    close(get(MetricName::Rejected), 5.0, 0.0);
    // Checkout: 75 ok of 100; 100 attempted over the 10 s measured window.
    close(get(MetricName::CheckoutFailure), 0.25, 1e-12);
    close(get(MetricName::CheckoutRate), 10.0, 1e-12);
    // 500 J over 10 s; 500 J / 90 ok.
    close(get(MetricName::EnergyJ), 500.0, 0.0);
    close(get(MetricName::PowerW), 50.0, 1e-12);
    close(get(MetricName::EnergyPerOkJ), 500.0 / 90.0, 1e-12);
    // Window [from, from + 10 000 ms): frontend->checkout open at the start until +1 000 (1 000 ms),
    // reopened at +1 100 until +3 000 (1 900 ms) and at +9 000 until the end (1 000 ms);
    // checkout->payment open +2 000 .. +2 500 (500 ms); the open at +11 000 is after the window,
    // the one at −500 before it. Opens in the window: +1 100, +9 000, +2 000 = 3.
    close(get(MetricName::BreakerOpens), 3.0, 0.0);
    close(get(MetricName::TimeOpenS), 4.4, 1e-12);
    // Cart size: first fifth = seconds 2, 3 → 2.5; last fifth = seconds 10, 11 → 10.5.
    close(get(MetricName::CartItemsStart), 2.5, 1e-12);
    close(get(MetricName::CartItemsEnd), 10.5, 1e-12);
    // GET /cart: first fifth 100, 200, 300 µs → mean 0.2 ms; last fifth 1000, 1500, 2000 → 1.5 ms.
    close(get(MetricName::CartLatencyStartMs), 0.2, 1e-9);
    close(get(MetricName::CartLatencyEndMs), 1.5, 1e-9);
    // Checkout latencies 1..=100 µs, each once (exact below 2 048 µs at 3 significant digits).
    let checkout = |metric| {
        metrics
            .get(&MetricKey::endpoint(metric, checkout_endpoint()))
            .unwrap()
    };
    close(checkout(MetricName::P50Ms), 0.050, 1e-12);
    close(checkout(MetricName::P95Ms), 0.095, 1e-12);
    close(checkout(MetricName::P99Ms), 0.099, 1e-12);
    assert_eq!(metrics.energy_source, Some(EnergySource::Modelled));
}

#[test]
fn failure_rate_is_each_endpoints_own_share_of_requests_that_did_not_succeed() {
    // A full pool refuses the index too: 30 of its 120 requests were refused (failed), none rejected; checkout
    // lost 60 of 100 (40 failed, 20 rejected by a breaker). An endpoint with no request has no figure.
    let mut data = run_data();
    let row = |endpoint: &str, outcomes| EndpointHistogramRow {
        endpoint: endpoint.into(),
        outcomes,
        latency: StoredLatency::default(),
        mean_us: 0.0,
        histogram_v2: histogram_of(&[1_000]),
        histogram_ok_v2: histogram_of(&[1_000]),
    };
    data.endpoint_histograms = vec![
        row("index", outcomes(90, 30, 0)),
        row(checkout_endpoint(), outcomes(40, 40, 20)),
        row("view_cart", outcomes(0, 0, 0)),
    ];
    let metrics = run_metrics(&data).unwrap();
    let failure =
        |endpoint: &str| metrics.get(&MetricKey::endpoint(MetricName::FailureRate, endpoint));
    close(failure("index").unwrap(), 0.25, 1e-12);
    close(failure(checkout_endpoint()).unwrap(), 0.6, 1e-12);
    assert_eq!(failure("view_cart"), None);
    // The checkout endpoint's share is the run's checkout failure.
    close(
        metrics
            .get(&MetricKey::run(MetricName::CheckoutFailure))
            .unwrap(),
        0.6,
        1e-12,
    );
}

#[test]
fn checkout_p95_of_successes_is_not_pulled_down_by_fast_rejections() {
    // 10 checkouts succeed after 800–809 ms; 190 are rejected by the open breaker in 1 ms. Mixed, 95 % of the
    // 200 are at most 1 ms: the p95 of every request says checkout is fast, though no user who got an answer
    // waited less than 800 ms.
    let ok: Vec<u64> = (0..10).map(|i| 800_000 + i * 1_000).collect();
    let all: Vec<u64> = ok.iter().copied().chain([1_000; 190]).collect();
    let mut data = run_data();
    data.endpoint_histograms = vec![EndpointHistogramRow {
        endpoint: checkout_endpoint().into(),
        outcomes: outcomes(10, 0, 190),
        latency: StoredLatency::default(),
        mean_us: 0.0,
        histogram_v2: histogram_of(&all),
        histogram_ok_v2: histogram_of(&ok),
    }];
    let metrics = run_metrics(&data).unwrap();
    let checkout = |metric| {
        metrics
            .get(&MetricKey::endpoint(metric, checkout_endpoint()))
            .unwrap()
    };
    close(checkout(MetricName::P95Ms), 1.0, 1e-9);
    // HDR keeps 3 significant digits: 809 ms is recorded within 0.1 %.
    close(checkout(MetricName::P95OkMs), 809.0, 1.0);
    close(checkout(MetricName::P95FailedMs), 1.0, 1e-9);

    // No successful checkout at all: no success latency (not 0 ms).
    data.endpoint_histograms[0].histogram_ok_v2 = histogram_of(&[]);
    data.endpoint_histograms[0].histogram_v2 = histogram_of(&[1_000; 190]);
    let metrics = run_metrics(&data).unwrap();
    let key = |metric| MetricKey::endpoint(metric, checkout_endpoint());
    assert_eq!(metrics.get(&key(MetricName::P95OkMs)), None);
    close(
        metrics.get(&key(MetricName::P95FailedMs)).unwrap(),
        1.0,
        1e-9,
    );
}

#[test]
fn run_timeline_bins_the_measured_window() {
    let metrics = run_metrics(&run_data()).unwrap();
    // 10 measured seconds → 10 one-second bins; bin 0 is second 2, bin 9 second 11.
    assert_eq!(metrics.timeline.len(), 10);
    assert_eq!(metrics.timeline[0].cart_items, Some(2.0));
    assert_eq!(metrics.timeline[9].cart_items, Some(11.0));
    close(metrics.timeline[0].cart_latency_ms.unwrap(), 0.15, 1e-9);
    close(metrics.timeline[4].cart_latency_ms.unwrap(), 0.7, 1e-9);
    assert_eq!(metrics.timeline[5].cart_latency_ms, None);
    close(metrics.timeline[9].start_s, 9.0, 1e-12);
}

#[test]
fn a_run_without_rows_has_only_its_totals() {
    let mut data = run_data();
    data.samples.clear();
    data.endpoint_seconds.clear();
    data.endpoint_histograms.clear();
    data.run.energy = None;
    data.run.started_at_ms = None;
    let metrics = run_metrics(&data).unwrap();
    let names: Vec<MetricName> = metrics.values.keys().map(|k| k.metric).collect();
    assert_eq!(
        names,
        [
            MetricName::Availability,
            MetricName::ThroughputOk,
            MetricName::Rejected
        ]
    );
}

#[test]
fn an_unreadable_histogram_is_an_error_naming_run_and_endpoint() {
    let mut data = run_data();
    data.endpoint_histograms[0].histogram_v2 = vec![1, 2, 3];
    let error = run_metrics(&data).unwrap_err().to_string();
    assert!(
        error.contains("run 0") && error.contains("POST /cart/checkout"),
        "{error}"
    );
}

#[test]
fn time_open_counts_a_breaker_open_for_the_whole_window() {
    let transitions = [transition("a->b", 0, State::Closed, State::Open)];
    assert_eq!(breaker_time_open(&transitions, 100, 1100), (0, 1000));
    assert_eq!(breaker_time_open(&transitions, -100, 900), (1, 900));
    assert_eq!(breaker_time_open(&[], 0, 1000), (0, 0));
}

// ---- conditions ----

fn metrics_with(condition_index: i64, round: i64, values: &[(MetricName, f64)]) -> RunMetrics {
    RunMetrics {
        run_id: RunId(round * 10 + condition_index),
        round,
        condition_index,
        values: values
            .iter()
            .map(|&(metric, value)| (MetricKey::run(metric), value))
            .collect::<BTreeMap<_, _>>(),
        timeline: vec![TimelineBin {
            start_s: 0.0,
            end_s: 1.0,
            cart_items: Some(round as f64),
            cart_latency_ms: None,
        }],
        energy_source: Some(EnergySource::Modelled),
    }
}

fn key(index: i64, rate: f64, mode: &str) -> ConditionKey {
    ConditionKey {
        index,
        label: format!("error 500 @ {}% / {mode}", rate * 100.0),
        fault_kind: "error".into(),
        fault_rate: rate,
        breaker_mode: mode.into(),
    }
}

fn info(finished: usize) -> ExperimentInfo {
    ExperimentInfo {
        id: ExperimentId(1),
        name: "test".into(),
        status: Status::Finished,
        planned_runs: finished as i64,
        finished_runs: finished,
        other_runs: 0,
        failed_runs: 0,
        not_measured: Vec::new(),
    }
}

/// Two rates × {disabled, enforce} × 3 rounds. Availability off at 50 %: 0.50 0.52 0.54, on:
/// 0.40 0.41 0.42 (the hand example of the report tests uses the same shape).
fn two_by_two() -> ExperimentStats {
    let off_50 = [0.50, 0.52, 0.54];
    let on_50 = [0.40, 0.41, 0.42];
    let mut runs = Vec::new();
    for round in 0..3 {
        let r = round as usize;
        runs.push(metrics_with(0, round, &[(MetricName::Availability, 1.0)]));
        runs.push(metrics_with(1, round, &[(MetricName::Availability, 1.0)]));
        runs.push(metrics_with(
            2,
            round,
            &[(MetricName::Availability, off_50[r])],
        ));
        runs.push(metrics_with(
            3,
            round,
            &[(MetricName::Availability, on_50[r])],
        ));
    }
    let keys = vec![
        key(0, 0.0, "disabled"),
        key(1, 0.0, "enforce"),
        key(2, 0.5, "disabled"),
        key(3, 0.5, "enforce"),
    ];
    ExperimentStats::from_runs(info(12), keys, runs)
}

#[test]
fn conditions_summarise_rounds_and_pairs_compare_off_with_on() {
    let stats = two_by_two();
    assert_eq!(stats.conditions.len(), 4);
    let availability = MetricKey::run(MetricName::Availability);
    let off = stats.condition(2).unwrap().summary(&availability).unwrap();
    // 0.50 0.52 0.54: mean 0.52, s = 0.02, h = 4.302653 · 0.02 / √3 = 0.049683.
    close(off.mean, 0.52, 1e-12);
    close(off.sd.unwrap(), 0.02, 1e-12);
    close(off.half_width.unwrap(), 0.049_683, 1e-6);
    assert_eq!(stats.comparisons.len(), 2);
    let at_50 = &stats.comparisons[1];
    assert_eq!((at_50.baseline.index, at_50.treatment.index), (2, 3));
    let d = at_50.difference(&availability).unwrap();
    // on − off = 0.41 − 0.52 = −0.11; se² = 0.0004/3 + 0.0001/3, df = 2.9412, ...
    close(d.difference, -0.11, 1e-12);
    assert!(d.excludes_zero);
    // Off interval [0.470317, 0.569683]; on: 0.41 ± 4.302653·0.01/√3 = [0.385159, 0.434841].
    assert!(d.intervals_separate);
    // At 0 % both are constant 1.0: a zero difference, exactly.
    let at_0 = stats.comparisons[0].difference(&availability).unwrap();
    assert_eq!((at_0.difference, at_0.half_width), (0.0, 0.0));
    assert_eq!(at_0.verdict, Verdict::NotSeparated);
    // Timelines average the per-run bins: rounds 0, 1, 2 → 1.0.
    assert_eq!(stats.conditions[0].timeline[0].cart_items, Some(1.0));
    assert_eq!(stats.conditions[0].energy, Some(EnergyLabel::Modelled));
}

#[test]
fn shadow_is_the_baseline_when_there_is_no_disabled_mode() {
    let runs = (0..2)
        .flat_map(|round| {
            [
                metrics_with(0, round, &[(MetricName::Rejected, 0.0)]),
                metrics_with(1, round, &[(MetricName::Rejected, 10.0 + round as f64)]),
            ]
        })
        .collect();
    let stats = ExperimentStats::from_runs(
        info(4),
        vec![key(0, 1.0, "shadow"), key(1, 1.0, "enforce")],
        runs,
    );
    assert_eq!(stats.comparisons.len(), 1);
    assert_eq!(stats.comparisons[0].baseline.breaker_mode, "shadow");
    assert_eq!(stats.comparisons[0].treatment.breaker_mode, "enforce");
}

#[test]
fn energy_labels_say_when_instruments_are_mixed() {
    use EnergySource::{Measured, Modelled};
    assert_eq!(
        EnergyLabel::of([Measured, Measured]),
        Some(EnergyLabel::Measured)
    );
    assert_eq!(
        EnergyLabel::of([Measured, Modelled]),
        Some(EnergyLabel::Mixed)
    );
    assert_eq!(EnergyLabel::of([]), None);
}

// ---- coverage: the intervals mean what they say ----

/// Standard normal variates from a seeded generator (Box–Muller).
fn normals(seed: u64, count: usize) -> Vec<f64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let u: f64 = rng.random_range(f64::EPSILON..1.0);
            let v: f64 = rng.random();
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        })
        .collect()
}

#[test]
fn ninety_five_percent_intervals_cover_the_true_mean_about_95_percent_of_the_time() {
    // 4 000 experiments of 5 normal rounds (mean 10, sd 3). With the t quantile the coverage is
    // 95 %; with the normal quantile (1.96) it would be about 88 %. Binomial sd at 4 000 trials
    // is 0.34 %, so [93.9 %, 96.1 %] is over three sds wide on each side.
    let trials = 4_000;
    let draws = normals(42, trials * 5);
    let covered = draws
        .chunks(5)
        .filter(|round| {
            let values: Vec<f64> = round.iter().map(|z| 10.0 + 3.0 * z).collect();
            let (low, high) = Summary::of(&values).unwrap().interval().unwrap();
            low <= 10.0 && 10.0 <= high
        })
        .count();
    let coverage = covered as f64 / trials as f64;
    assert!((0.939..=0.961).contains(&coverage), "coverage {coverage}");
}

#[test]
fn welch_intervals_cover_the_true_difference_with_unequal_variances() {
    // Off: 4 rounds, sd 1; on: 12 rounds, sd 5; true difference 2. A pooled interval would be too
    // narrow here (the small group has the small variance); Welch's keeps about 95 %.
    let trials = 3_000;
    let draws = normals(7, trials * 16);
    let covered = draws
        .chunks(16)
        .filter(|chunk| {
            let off: Vec<f64> = chunk[..4].iter().map(|z| 1.0 + z).collect();
            let on: Vec<f64> = chunk[4..].iter().map(|z| 3.0 + 5.0 * z).collect();
            let d =
                Difference::welch(&Summary::of(&off).unwrap(), &Summary::of(&on).unwrap()).unwrap();
            d.ci_low <= 2.0 && 2.0 <= d.ci_high
        })
        .count();
    let coverage = covered as f64 / trials as f64;
    assert!((0.935..=0.965).contains(&coverage), "coverage {coverage}");
}

#[test]
fn swapping_baseline_and_treatment_negates_the_difference_only() {
    let draws = normals(3, 40);
    for chunk in draws.chunks(10) {
        let a = Summary::of(&chunk[..4]).unwrap();
        let b = Summary::of(&chunk[4..]).unwrap();
        let ab = Difference::welch(&a, &b).unwrap();
        let ba = Difference::welch(&b, &a).unwrap();
        close(ab.difference, -ba.difference, 1e-12);
        close(ab.half_width, ba.half_width, 1e-12);
        close(ab.df, ba.df, 1e-9);
        assert_eq!(ab.verdict, ba.verdict);
    }
}

#[test]
fn criteria_deserialize_inside_a_spec_struct_with_the_line_of_a_bad_value() {
    // What the spec module does when it takes `validate: Vec<Criterion>` in its raw struct.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct RawSpec {
        #[allow(dead_code)]
        name: String,
        #[serde(default)]
        validate: Vec<Criterion>,
    }
    let good = "name = \"x\"\n[[validate]]\nmetric = \"availability\"\nfault_rate = 0.5\nbreaker = \"enforce\"\ncomparison = \">=\"\nthreshold = 0.6\n";
    let spec: RawSpec = toml::from_str(good).unwrap();
    assert_eq!(spec.validate.len(), 1);
    let bad = good.replace("fault_rate = 0.5", "fault_rate = 2");
    let error = toml::from_str::<RawSpec>(&bad).err().unwrap();
    let message = error.to_string();
    assert!(
        message.contains("fault_rate: 2 is not a fraction"),
        "{message}"
    );
    // The span points into the [[validate]] table (line 2 onwards, 0-based offsets).
    let span = error.span().unwrap();
    assert!(span.start >= good.find("[[validate]]").unwrap(), "{span:?}");
}

#[test]
fn what_a_plain_target_cannot_measure_is_said() {
    let spec = test_support::spec(
        r#"
name = "byo"
duration = "10s"
[load]
users = 1
target = "shop"
[targets]
shop = { url = "http://127.0.0.1:9000", offers = ["pool"] }
agent = "http://127.0.0.1:9002"
"#,
    );
    let lines = crate::stats::not_measured(&spec);
    let joined = lines.join("\n");
    for capability in ["reset", "breaker-config", "breaker-stream", "cart-metrics"] {
        assert!(joined.contains(&format!("`{capability}`")), "{joined}");
    }
    assert!(!joined.contains("`pool`"), "{joined}");
    assert!(
        joined.contains("breaker opens and time open were not measured"),
        "{joined}"
    );
    assert!(!crate::stats::observes_breakers(&spec));

    let scraped = test_support::spec(&format!(
        "{}\n[[sources]]\nkind = \"prometheus\"\nurl = \"http://127.0.0.1:9000/metrics\"\npreset = \"resilience4j\"\ninterval = \"200ms\"\n",
        spec.source
    ));
    assert!(crate::stats::observes_breakers(&scraped));
    let joined = crate::stats::not_measured(&scraped).join("\n");
    assert!(
        !joined.contains("breaker opens and time open were not measured"),
        "{joined}"
    );
    assert!(joined.contains("scraped every 200ms"), "{joined}");
    let embedded = test_support::spec("name = \"e\"\nduration = \"10s\"\n[load]\nusers = 1\n");
    assert!(crate::stats::not_measured(&embedded).is_empty());
}

// The over-time figures shade the schedule's on-periods in seconds into the measured window: an on-period inside
// the warmup is left out, one straddling its end is cut.
#[test]
fn scheduled_fault_periods_are_counted_from_the_warmups_end() {
    let spec = |schedule: &str| {
        test_support::spec(&format!(
            "name = \"t\"\nduration = \"100s\"\nwarmup = \"20s\"\n[load]\nusers = 1\n\
             [fault]\ntarget = \"payment\"\nrates = [1.0]\n{schedule}"
        ))
    };
    assert_eq!(super::measured_fault_periods(&spec("")), Vec::new());
    assert_eq!(
        super::measured_fault_periods(&spec(
            "schedule = { start = \"10s\", on = \"20s\", off = \"30s\" }"
        )),
        vec![(0.0, 10.0), (40.0, 60.0), (90.0, 100.0)]
    );
}

// A scaled Checkout's replicas each store their breaker's transitions under their own label (`checkout#2->payment`);
// the figures are kept under the service's breaker, summed over the replicas, like its rejections and like the
// predictions of `breaker.instances` replicas: replica 1 opens once for 200 ms, replica 2 twice for 300 ms.
#[test]
fn a_scaled_services_replicas_are_summed_under_its_breaker() {
    let mut transitions = vec![
        transition("checkout->payment", 100, State::Closed, State::Open),
        transition("checkout->payment", 300, State::Open, State::Closed),
        transition("checkout#2->payment", 100, State::Closed, State::Open),
        transition("checkout#2->payment", 200, State::Open, State::HalfOpen),
        transition("checkout#2->payment", 500, State::HalfOpen, State::Open),
        transition("checkout#2->payment", 700, State::Open, State::Closed),
    ];
    for t in &mut transitions[2..] {
        t.service = "checkout#2".into();
    }
    let figures = per_breaker_time_open(&transitions, 0, 1000);
    assert_eq!(figures.len(), 1, "{figures:?}");
    assert_eq!(figures["checkout->payment"], (3, 500));
    assert_eq!(
        super::run::service_breaker_name("checkout#12->payment"),
        "checkout->payment"
    );
    // Not a replica label: kept as written.
    for name in ["checkout->payment", "checkout#x->payment", "shop"] {
        assert_eq!(super::run::service_breaker_name(name), name);
    }
}

// Two breakers on the checkout path in [0, 1000): the frontend's on Checkout opens at 100 and closes at 400
// (300 ms), Checkout's on Payment opens at 100 and 600, closing at 300 and 900 (500 ms). Per breaker 1 and 2
// opens; the run's figures are their sums, 3 opens and 800 ms, and each breaker has its own key.
#[test]
fn opens_and_time_open_are_per_breaker_and_the_run_figure_is_their_sum() {
    let transitions = [
        transition("frontend->checkout", 100, State::Closed, State::Open),
        transition("frontend->checkout", 400, State::Open, State::Closed),
        transition("checkout->payment", 100, State::Closed, State::Open),
        transition("checkout->payment", 300, State::Open, State::HalfOpen),
        transition("checkout->payment", 600, State::HalfOpen, State::Open),
        transition("checkout->payment", 900, State::Open, State::Closed),
    ];
    let figures = per_breaker_time_open(&transitions, 0, 1000);
    assert_eq!(figures["frontend->checkout"], (1, 300));
    assert_eq!(figures["checkout->payment"], (2, 500));
    assert_eq!(breaker_time_open(&transitions, 0, 1000), (3, 800));

    let mut data = run_data();
    data.transitions = transitions.to_vec();
    let start = data.run.started_at_ms.unwrap() + data.run.warmup_ms;
    for t in &mut data.transitions {
        t.at_ms += start;
    }
    let metrics = run_metrics(&data).unwrap();
    let value = |key: MetricKey| metrics.values.get(&key).copied();
    let payment = "checkout->payment";
    assert_eq!(
        value(MetricKey::breaker(MetricName::BreakerOpens, payment)),
        Some(2.0)
    );
    assert_eq!(
        value(MetricKey::breaker(MetricName::TimeOpenS, payment)),
        Some(0.5)
    );
    assert_eq!(value(MetricKey::run(MetricName::BreakerOpens)), Some(3.0));
    assert_eq!(value(MetricKey::run(MetricName::TimeOpenS)), Some(0.8));
}
