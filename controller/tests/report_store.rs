//! Reports from a real store: a synthetic experiment (2 rates × {disabled, enforce} × 3 rounds, plus
//! one interrupted attempt) is written through the store's public API into a temporary SQLite file,
//! then rendered as markdown (with SVG plots), CSV and JSON, and judged by validation criteria. The
//! expected numbers are worked out by hand in the comments.

use controller::test_support::{self, TempStore};
use std::time::Duration;

use controller::load::{
    EndpointReport, EndpointSecond, EndpointStats, LatencySummary, OutcomeCounts, SecondStats,
    endpoint, new_histogram, serialize_histogram,
};
use controller::report::{CSV_HEADER, Format, render, report, validation_markdown};
use controller::spec::PlannedRun;
use controller::stats::{criteria_of_spec, evaluate, load_experiment};
use controller::store::{
    CollectorSample, EnergySource, ExperimentId, RunRecord, Status, Store, TransitionRecord,
};

const SPEC: &str = r#"
name = "report-test"
rounds = 3
duration = "10s"
warmup = "2s"
order = "fixed"

[load]
users = 1

[fault]
target = "payment"
rates = [0.0, 1.0]

[breaker]
modes = ["disabled", "enforce"]
"#;

/// The spec's validation criteria (`ExperimentSpec` does not take `[[validate]]` tables yet, so
/// they are kept apart here and appended for `criteria_of_spec`).
const VALIDATE: &str = r#"
[[validate]]
metric = "p95_ms"
endpoint = "checkout"
fault_rate = 1.0
breaker = "enforce"
comparison = "<"
threshold = 0.3

[[validate]]
metric = "p95_ms"
endpoint = "checkout"
fault_rate = 1.0
breaker = "enforce"
comparison = "<"
threshold = 0.23

[[validate]]
metric = "availability"
fault_rate = 1.0
breaker = "enforce"
comparison = ">="
threshold = 0.9
"#;

fn stats_of(count: u64, outcome: &str, latency_us: u64) -> EndpointStats {
    let mut stats = EndpointStats::default();
    for _ in 0..count {
        let outcome = match outcome {
            "ok" => controller::load::RequestOutcome::Ok,
            "failed" => controller::load::RequestOutcome::Failed,
            _ => controller::load::RequestOutcome::Rejected,
        };
        stats.record(outcome, latency_us, 0);
    }
    stats
}

/// What one run of `planned` saw (see the module comment of each figure below).
fn record(planned: &PlannedRun, start_ms: i64) -> RunRecord {
    let round = u64::from(planned.round);
    let rate = planned.condition.fault_rate;
    let enforce = planned.condition.breaker_mode.as_str() == "enforce";
    let names: Vec<String> = endpoint::NAMES.iter().map(|n| (*n).to_owned()).collect();

    // GET /cart: one request per second, second s taking 100 + 10 s µs; cart holds s items.
    let seconds: Vec<SecondStats> = (0..12u64)
        .map(|second| {
            let mut histogram = new_histogram();
            histogram.record(100 + 10 * second).unwrap();
            SecondStats {
                second,
                warmup: second < 2,
                endpoints: vec![EndpointSecond {
                    endpoint: endpoint::VIEW_CART,
                    outcomes: OutcomeCounts {
                        ok: 1,
                        ..OutcomeCounts::default()
                    },
                    latency: LatencySummary::of(&histogram),
                    latency_ok: LatencySummary::default(),
                    latency_failed: LatencySummary::default(),
                    histogram_v2: serialize_histogram(&histogram),
                    outcome_histograms_v2: None,
                }],
            }
        })
        .collect();
    let collector = (0..12u64)
        .map(|second| CollectorSample {
            second,
            cart_mean_items: Some(second as f64),
            ..CollectorSample::default()
        })
        .collect();

    // Measured totals: 100 ok on GET /, 10 ok on GET /cart, 10 checkouts: ok at 0 % (1 000 µs);
    // at 100 % failed (1 500 + 100 r µs) with the breaker disabled, rejected (200 + 10 r µs) with it
    // enforcing.
    let checkout = if rate == 0.0 {
        stats_of(10, "ok", 1_000)
    } else if enforce {
        stats_of(10, "rejected", 200 + 10 * round)
    } else {
        stats_of(10, "failed", 1_500 + 100 * round)
    };
    let endpoints = vec![
        EndpointReport {
            name: names[endpoint::INDEX].clone(),
            stats: stats_of(100, "ok", 500),
        },
        EndpointReport {
            name: names[endpoint::VIEW_CART].clone(),
            stats: stats_of(10, "ok", 150),
        },
        EndpointReport {
            name: names[endpoint::CHECKOUT].clone(),
            stats: checkout,
        },
    ];

    // At 100 % with the breaker enforcing, round r opens r + 1 times for 1 s each, all inside the
    // measured window (which starts 2 s after the run).
    let window_ms = start_ms + 2_000;
    let mut transitions = Vec::new();
    if rate > 0.0 && enforce {
        for k in 0..=round as i64 {
            for (offset, from, to) in [
                (0, breaker::State::Closed, breaker::State::Open),
                (1_000, breaker::State::Open, breaker::State::HalfOpen),
            ] {
                transitions.push(TransitionRecord {
                    at_ms: window_ms + 2_000 * k + offset,
                    service: "frontend".into(),
                    breaker: "frontend->checkout".into(),
                    from,
                    to,
                    reason: breaker::Reason::ConsecutiveFailures,
                    detail: breaker::TransitionDetail::default(),
                    seq: 2 * k + offset / 1_000,
                    shadow: false,
                    source: None,
                });
            }
        }
    }

    // Energy: 120 + 10 r J (modelled) at 100 % enforce, 110 J otherwise.
    let joules = if rate > 0.0 && enforce {
        120.0 + 10.0 * round as f64
    } else {
        110.0
    };
    RunRecord {
        status: Status::Finished,
        abort_reason: None,
        load_errors: 0,
        finished_at_ms: start_ms + 12_000,
        endpoint_names: names,
        seconds,
        endpoints,
        collector,
        transitions,
        events: Vec::new(),
        energy: Some((joules, EnergySource::Modelled)),
        sources: Vec::new(),
    }
}

async fn experiment(dir: &TempStore) -> (Store, ExperimentId) {
    let store = dir.open().await;
    let spec = test_support::spec(SPEC);
    let id = store.create_experiment(&spec, 1_000).await.unwrap();
    let (warmup, duration) = (Duration::from_secs(2), Duration::from_secs(10));
    let plan = spec.plan();
    assert_eq!(plan.len(), 12);
    // An attempt that died mid-run: marked interrupted, left out of every figure.
    store
        .start_run(id, &plan[0], warmup, duration, 5_000)
        .await
        .unwrap();
    assert_eq!(store.mark_interrupted(id, 6_000).await.unwrap(), 1);
    for planned in &plan {
        let start_ms = 100_000 * (planned.sequence as i64 + 1);
        let run = store
            .start_run(id, planned, warmup, duration, start_ms)
            .await
            .unwrap();
        store
            .finish_run(run, &record(planned, start_ms))
            .await
            .unwrap();
    }
    store
        .set_experiment_status(id, Status::Finished, 2_000_000, None)
        .await
        .unwrap();
    (store, id)
}

fn close(actual: f64, expected: f64, tolerance: f64) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{actual} is not within {tolerance} of {expected}"
    );
}

#[tokio::test]
async fn csv_report_parses_back_with_the_hand_computed_numbers() {
    let dir = TempStore::new("report-csv");
    let (store, id) = experiment(&dir).await;
    let csv_report = report(&store, id, Format::Csv).await.unwrap();
    assert!(csv_report.plots.is_empty());

    let mut reader = csv::Reader::from_reader(csv_report.text.as_bytes());
    let headers: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(headers, CSV_HEADER);
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let column = |name: &str| CSV_HEADER.iter().position(|h| *h == name).unwrap();
    let find = |condition: &str, metric: &str, endpoint: &str| {
        rows.iter()
            .find(|r| {
                r[column("condition")] == *condition
                    && r[column("metric")] == *metric
                    && r[column("endpoint")] == *endpoint
            })
            .unwrap_or_else(|| panic!("no row {condition} {metric} {endpoint}"))
            .clone()
    };
    let number = |row: &csv::StringRecord, name: &str| row[column(name)].parse::<f64>().unwrap();

    // Checkout p95 at 100 % enforce: 0.20, 0.21, 0.22 ms → mean 0.21, s = 0.01,
    // h = t(0.975, 2) · 0.01 / √3 = 4.302653 · 0.005774 = 0.024841.
    let on = find(
        "error 500 @ 100% / enforce",
        "p95_ms",
        "POST /cart/checkout",
    );
    assert_eq!(&on[column("rounds")], "3");
    assert_eq!(&on[column("n")], "3");
    close(number(&on, "mean"), 0.21, 1e-9);
    close(number(&on, "sd"), 0.01, 1e-9);
    close(number(&on, "half_width"), 0.024_841, 1e-6);
    close(number(&on, "ci_high"), 0.234_841, 1e-6);
    // Off: 1.5, 1.6, 1.7 ms → mean 1.6, s = 0.1. On − off = −1.39;
    // se² = (0.01 + 0.0001) / 3, df = 0.0101² / ((0.01² + 0.0001²) / 2) = 2.039996.
    assert_eq!(&on[column("baseline_mode")], "disabled");
    close(number(&on, "difference"), -1.39, 1e-9);
    close(number(&on, "welch_df"), 2.039_996, 1e-6);
    assert_eq!(&on[column("verdict")], "separate");

    // Opens at 100 % enforce: 1, 2, 3 → mean 2, s = 1, h = 4.302653 / √3 = 2.484138; time open
    // the same in seconds.
    let opens = find("error 500 @ 100% / enforce", "breaker_opens", "");
    close(number(&opens, "mean"), 2.0, 1e-12);
    close(number(&opens, "half_width"), 2.484_138, 1e-6);
    let open_s = find("error 500 @ 100% / enforce", "time_open_s", "");
    close(number(&open_s, "mean"), 2.0, 1e-12);

    // Availability at 100 %: (100 + 10) ok of 120, whether failed or rejected → 0.916667, no spread.
    for mode in ["disabled", "enforce"] {
        let row = find(&format!("error 500 @ 100% / {mode}"), "availability", "");
        close(number(&row, "mean"), 110.0 / 120.0, 1e-12);
        close(number(&row, "half_width"), 0.0, 0.0);
    }
    // Throughput: 120 ok / 10 s at 0 %.
    close(
        number(
            &find("error 500 @ 0% / disabled", "throughput_ok", ""),
            "mean",
        ),
        12.0,
        1e-12,
    );
    // Energy per ok at 100 % enforce: 120, 130, 140 J / 110 ok → mean 1.181818, s = 0.090909;
    // off: 110 / 110 = 1 every round: the difference 0.181818 has df 2 and
    // h = 4.302653 · 0.090909 / √3 = 0.225831 → [−0.044013, 0.407649]: not separated.
    let energy = find("error 500 @ 100% / enforce", "energy_per_ok_j", "");
    close(number(&energy, "mean"), 130.0 / 110.0, 1e-9);
    close(number(&energy, "difference"), 20.0 / 110.0, 1e-9);
    close(number(&energy, "welch_df"), 2.0, 1e-9);
    close(number(&energy, "difference_ci_low"), -0.044_013, 1e-6);
    assert_eq!(&energy[column("verdict")], "not separated");
    // /cart over time: first fifth seconds 2, 3 → 120, 130 µs, last fifth 10, 11 → 200, 210 µs.
    let cart = find("error 500 @ 0% / enforce", "cart_latency_start_ms", "");
    close(number(&cart, "mean"), 0.125, 1e-9);
    let cart = find("error 500 @ 0% / enforce", "cart_latency_end_ms", "");
    close(number(&cart, "mean"), 0.205, 1e-9);
    let items = find("error 500 @ 0% / enforce", "cart_items_end", "");
    close(number(&items, "mean"), 10.5, 1e-12);
    // Baseline rows carry no comparison.
    let off = find(
        "error 500 @ 100% / disabled",
        "p95_ms",
        "POST /cart/checkout",
    );
    assert_eq!(&off[column("baseline_mode")], "");
    store.close().await;
}

#[tokio::test]
async fn json_report_holds_every_figure() {
    let dir = TempStore::new("report-json");
    let (store, id) = experiment(&dir).await;
    let text = report(&store, id, Format::Json).await.unwrap().text;
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["confidence"], 0.95);
    assert_eq!(json["experiment"]["finished_runs"], 12);
    assert_eq!(json["experiment"]["other_runs"], 1);
    assert_eq!(json["runs"].as_array().unwrap().len(), 12);
    let conditions = json["conditions"].as_array().unwrap();
    assert_eq!(conditions.len(), 4);
    let on_100 = &conditions[3];
    assert_eq!(on_100["condition"]["breaker_mode"], "enforce");
    assert_eq!(on_100["energy"], "modelled");
    let opens = on_100["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "breaker_opens")
        .unwrap();
    assert_eq!(opens["mean"], 2.0);
    close(opens["half_width"].as_f64().unwrap(), 2.484_138, 1e-6);
    let comparisons = json["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 2);
    assert_eq!(comparisons[1]["fault_rate"], 1.0);
    store.close().await;
}

#[tokio::test]
async fn markdown_report_writes_its_svg_plots_next_to_it() {
    let dir = TempStore::new("report-md");
    let (store, id) = experiment(&dir).await;
    let markdown = report(&store, id, Format::Md).await.unwrap();
    let text = &markdown.text;
    assert!(text.starts_with("# Experiment 1: report-test"), "{text}");
    assert!(text.contains("12 finished runs of 12 planned (1 aborted or interrupted"));
    // Opens at 100 % enforce: 2 ± 2.484; checkout p95 0.21 ± 0.02484 ms; verdict separate. Every checkout at
    // 100 % failed or was rejected: their p95 is compared, and there is no successful checkout to compare.
    assert!(
        text.contains("| error | 100 % | 0 ± 0 | 2.000 ± 2.484 |"),
        "{text}"
    );
    assert!(text.contains("0.2100 ± 0.02484"), "{text}");
    assert!(text.contains(
        "| error | 100 % | enforce vs disabled | checkout p95_failed_ms (ms) | 1.600 | 0.2100 | -1.390 ["
    ));
    assert!(!text.contains("| error | 100 % | enforce vs disabled | checkout p95_ok_ms"));
    assert!(
        text.contains(
            "| error | 0 % | enforce vs disabled | checkout p95_ok_ms (ms) | 1.000 | 1.000 |"
        ),
        "{text}"
    );
    assert!(text.contains("Energy figures are **modelled**."));
    // Cart over time: items 2.5 → 10.5, GET /cart 0.125 → 0.205 ms, the same in every round.
    assert!(
        text.contains(
            "| error 500 @ 0% / enforce | 2.500 ± 0 | 10.50 ± 0 | 0.1250 ± 0 | 0.2050 ± 0 |"
        ),
        "{text}"
    );

    let slugs = [
        "opens",
        "checkout-p95",
        "checkout-failure",
        "cart-size",
        "cart-latency",
        "energy-per-ok",
    ];
    assert_eq!(markdown.plots.len(), slugs.len());
    for (plot, slug) in markdown.plots.iter().zip(slugs) {
        let file_name = format!("experiment-{id}-{slug}.svg");
        assert_eq!(plot.file_name, file_name);
        assert!(text.contains(&format!("]({file_name})")));
        assert!(plot.svg.starts_with("<svg"), "{}", &plot.svg[..80]);
        // Text is written as SVG text (no font files needed): the title and axis labels are there.
        assert!(plot.svg.contains("<text"));
        assert!(plot.svg.contains(&plot.title));
    }
    let path = dir.dir().join("report.md");
    let written = markdown.write(&path).unwrap();
    assert_eq!(written.len(), 1 + slugs.len());
    for file in &written {
        assert!(file.exists(), "{}", file.display());
        assert_eq!(file.parent(), Some(dir.dir()));
    }
    store.close().await;
}

#[tokio::test]
async fn validation_criteria_from_the_spec_are_judged_on_the_stored_intervals() {
    let dir = TempStore::new("report-validate");
    let (store, id) = experiment(&dir).await;
    let stats = load_experiment(&store, id).await.unwrap();
    let criteria = criteria_of_spec(&format!("{SPEC}{VALIDATE}")).unwrap();
    let validation = evaluate(&criteria, &stats);
    use controller::stats::CriterionOutcome::{Fail, Pass};
    let outcomes: Vec<_> = validation.results.iter().map(|r| r.outcome).collect();
    // p95 CI [0.185159, 0.234841]: below 0.3 holds, below 0.23 does not (the mean 0.21 would);
    // availability 0.916667 exactly, ≥ 0.9.
    assert_eq!(outcomes, [Pass, Fail, Pass]);
    assert!(!validation.passed());
    let text = validation_markdown(&stats, &validation);
    assert!(text.contains("**FAIL**: 2 of 3 criteria"), "{text}");
    assert!(text.contains("[0.1852, 0.2348]"), "{text}");
    // The same statistics render in every format without the store.
    assert!(
        render(&stats, Format::Json)
            .unwrap()
            .text
            .contains("\"breaker_opens\"")
    );
    store.close().await;
}

#[tokio::test]
async fn a_missing_experiment_is_an_error() {
    let dir = TempStore::new("report-missing");
    let store = dir.open().await;
    let error = report(&store, ExperimentId(42), Format::Md)
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "experiment 42 does not exist");
    store.close().await;
}
