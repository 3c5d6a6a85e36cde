//! Unit tests of the pure parts: number formatting, formats, charts, figures from hand-built stats.

use std::collections::BTreeMap;

use super::format::{mean_and_half_width, number, percent};
use super::*;
use crate::metric::{MetricKey, MetricName};
use crate::stats::{
    ConditionKey, ExperimentInfo, INTERVALS_NEED_TWO_ROUNDS, RunMetrics, Summary, TimelineBin,
};
use crate::store::{ExperimentId, RunId, Status};

#[test]
fn numbers_keep_four_significant_digits() {
    assert_eq!(number(0.0), "0");
    assert_eq!(number(0.912_345), "0.9123");
    assert_eq!(number(2.484_138), "2.484");
    assert_eq!(number(57.3), "57.30");
    assert_eq!(number(2305.4), "2305");
    assert_eq!(number(123_456.0), "123456");
    assert_eq!(number(-1.39), "-1.390");
    assert_eq!(number(0.000_012_34), "1.234e-5");
    assert_eq!(percent(0.25), "25 %");
    assert_eq!(percent(1.0 / 3.0), "33.33 %");
    let summary = Summary::of(&[1.0, 2.0, 3.0]).unwrap();
    // mean 2, s = 1, h = 4.302653 / √3 = 2.484138.
    assert_eq!(mean_and_half_width(&summary), "2.000 ± 2.484");
    assert_eq!(
        mean_and_half_width(&Summary::of(&[5.0]).unwrap()),
        "5.000 (n = 1)"
    );
}

#[test]
fn formats_parse_by_name() {
    assert_eq!("md".parse::<Format>().unwrap(), Format::Md);
    assert_eq!("csv".parse::<Format>().unwrap(), Format::Csv);
    assert_eq!("json".parse::<Format>().unwrap(), Format::Json);
    let error = "pdf".parse::<Format>().unwrap_err();
    assert_eq!(error.to_string(), "format `pdf`: expected md, csv or json");
}

#[test]
fn a_chart_without_points_is_not_drawn() {
    let chart = Chart {
        title: "t",
        x_label: "x",
        y_label: "y",
        series: vec![Series {
            name: "empty".into(),
            points: Vec::new(),
        }],
        diagonal: false,
        y_from_zero: true,
        shaded: Vec::new(),
    };
    assert_eq!(chart.to_svg().unwrap(), None);
}

#[test]
fn a_chart_shades_the_fault_on_periods_inside_its_x_range() {
    let chart = |shaded: Vec<(f64, f64)>| Chart {
        title: "Cart size",
        x_label: "s",
        y_label: "items",
        series: vec![Series {
            name: "enforce".into(),
            points: (0..10)
                .map(|x| Point {
                    x: f64::from(x),
                    y: 1.0,
                    interval: None,
                })
                .collect(),
        }],
        diagonal: false,
        y_from_zero: true,
        shaded,
    };
    let plain = chart(Vec::new()).to_svg().unwrap().unwrap();
    assert!(!plain.contains("fault on"));
    let shaded = chart(vec![(2.0, 4.0), (20.0, 30.0)])
        .to_svg()
        .unwrap()
        .unwrap();
    assert!(shaded.contains("fault on"), "{shaded}");
    // One band drawn (the second lies outside the axis), plus the legend's swatch.
    assert_eq!(shaded.matches("#7D3C98").count(), 2, "{shaded}");
}

#[test]
fn a_chart_draws_lines_interval_bars_and_text_without_fonts() {
    let chart = Chart {
        title: "Checkout p95",
        x_label: "rate (%)",
        y_label: "ms",
        series: vec![Series {
            name: "enforce".into(),
            points: vec![
                Point {
                    x: 0.0,
                    y: 10.0,
                    interval: Some((9.0, 11.0)),
                },
                Point {
                    x: 100.0,
                    y: 3.0,
                    interval: None,
                },
            ],
        }],
        diagonal: true,
        y_from_zero: true,
        shaded: Vec::new(),
    };
    let svg = chart.to_svg().unwrap().unwrap();
    assert!(svg.starts_with("<svg"));
    for text in ["Checkout p95", "rate (%)", "enforce", "y = x"] {
        assert!(svg.contains(text), "{text} missing");
    }
    // Two points, one interval bar (a polyline of six points), the series line and the diagonal.
    assert_eq!(svg.matches("<circle").count(), 2);
    assert!(svg.matches("<polyline").count() >= 3);
}

fn run(condition_index: i64, round: i64, kind_metrics: &[(MetricName, f64)]) -> RunMetrics {
    RunMetrics {
        run_id: RunId(round * 100 + condition_index),
        round,
        condition_index,
        values: kind_metrics
            .iter()
            .map(|&(m, v)| (MetricKey::run(m), v))
            .collect::<BTreeMap<_, _>>(),
        timeline: vec![TimelineBin {
            start_s: 0.0,
            end_s: 2.0,
            cart_items: Some(1.0 + round as f64),
            cart_latency_ms: Some(10.0),
        }],
        energy_source: None,
    }
}

fn key(index: i64, kind: &str, rate: f64, mode: &str) -> ConditionKey {
    ConditionKey {
        index,
        label: format!("{kind} @ {}% / {mode}", rate * 100.0),
        fault_kind: kind.into(),
        fault_rate: rate,
        breaker_mode: mode.into(),
    }
}

/// Two fault kinds × two rates × enforce, two rounds each; opens = 10 · rate + round.
fn two_kinds() -> ExperimentStats {
    let keys = vec![
        key(0, "error", 0.0, "enforce"),
        key(1, "error", 0.5, "enforce"),
        key(2, "hang", 0.0, "enforce"),
        key(3, "hang", 0.5, "enforce"),
    ];
    let mut runs = Vec::new();
    for round in 0..2 {
        for k in &keys {
            let opens = 10.0 * k.fault_rate + round as f64;
            runs.push(run(
                k.index,
                round,
                &[
                    (MetricName::BreakerOpens, opens),
                    (MetricName::CheckoutFailure, k.fault_rate),
                ],
            ));
        }
    }
    // One breaker opened: the run's opens are all Checkout's on Payment.
    for run in &mut runs {
        let opens = run.values[&MetricKey::run(MetricName::BreakerOpens)];
        run.values.insert(
            MetricKey::breaker(MetricName::BreakerOpens, "checkout->payment"),
            opens,
        );
    }
    let info = ExperimentInfo {
        id: ExperimentId(7),
        name: "kinds | pipes".into(),
        status: Status::Finished,
        planned_runs: 8,
        finished_runs: 8,
        other_runs: 0,
        failed_runs: 0,
        not_measured: Vec::new(),
    };
    ExperimentStats::from_runs(info, keys, runs)
}

#[test]
fn figures_name_series_by_kind_and_mode_and_scale_fractions() {
    let stats = two_kinds();
    let all = figures(&stats);
    let opens = all.iter().find(|f| f.slug == "opens").unwrap();
    let names: Vec<&str> = opens.chart.series.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["error / enforce", "hang / enforce"]);
    // Rates in %, opens: rate 0.5 → rounds 5, 6 → mean 5.5.
    let point = opens.chart.series[0].points[1];
    assert_eq!((point.x, point.y), (50.0, 5.5));
    // s = 0.707107, h = 12.706205 · 0.707107 / √2 = 6.353102.
    let (low, high) = point.interval.unwrap();
    assert!((high - 5.5 - 6.353_102).abs() < 1e-6 && (5.5 - low - 6.353_102).abs() < 1e-6);
    // Observed checkout failure is drawn in % against the diagonal.
    let observed = all.iter().find(|f| f.slug == "checkout-failure").unwrap();
    assert!(observed.chart.diagonal);
    assert_eq!(observed.chart.series[0].points[1].y, 50.0);
    // Over-time figures: one series per condition, x at the bin's middle.
    let cart = all.iter().find(|f| f.slug == "cart-size").unwrap();
    assert_eq!(cart.chart.series.len(), 4);
    assert_eq!(cart.chart.series[0].points[0].x, 1.0);
    assert_eq!(cart.chart.series[0].points[0].y, 1.5);
    // No energy figures in these stats: nothing to draw.
    let energy = all.iter().find(|f| f.slug == "energy-per-ok").unwrap();
    assert!(energy.chart.series.is_empty());
}

#[test]
fn markdown_escapes_pipes_and_says_when_a_figure_has_no_data() {
    let stats = two_kinds();
    let report = render(&stats, Format::Md).unwrap();
    assert!(report.text.starts_with("# Experiment 7: kinds \\| pipes\n"));
    assert!(
        report
            .text
            .contains("### Energy per successful request\n\nNo data.")
    );
    // No baseline mode: no comparison, and the report says why.
    assert!(
        report
            .text
            .contains("No comparison: no failure rate has both a baseline mode")
    );
    // The observed-failure table is in % like its plot: 50 ± 0 at 50 %.
    assert!(
        report.text.contains("| hang | 50 % | 50.00 ± 0 |"),
        "{}",
        report.text
    );
    let slugs: Vec<&str> = report.plots.iter().map(|p| p.file_name.as_str()).collect();
    assert_eq!(
        slugs,
        [
            "experiment-7-opens.svg",
            "experiment-7-checkout-failure.svg",
            "experiment-7-cart-size.svg",
            "experiment-7-cart-latency.svg"
        ]
    );
}

/// The results page draws the charts alone: the same SVG files the markdown links, without the markdown.
#[test]
fn charts_are_the_markdowns_plots() {
    let stats = two_kinds();
    let charts = charts(&stats).unwrap();
    assert_eq!(charts.len(), 4, "every figure with data");
    assert_eq!(charts, render(&stats, Format::Md).unwrap().plots);
}

#[test]
fn csv_has_one_row_per_condition_and_metric() {
    let stats = two_kinds();
    let text = render(&stats, Format::Csv).unwrap().text;
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(reader.headers().unwrap().len(), CSV_HEADER.len());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    // 4 conditions × 3 metrics (opens, checkout failure, and the opens of Checkout's breaker on Payment).
    assert_eq!(rows.len(), 12);
    assert_eq!(
        rows.iter()
            .filter(|r| &r[21] == "checkout->payment")
            .count(),
        4
    );
    assert!(
        rows.iter().all(|r| r[15].is_empty()),
        "no baseline, no comparison"
    );
}

#[test]
fn json_carries_the_annotations_it_is_given() {
    use crate::store::{AnnotationId, AnnotationRow};
    let stats = two_kinds();
    let plain: serde_json::Value =
        serde_json::from_str(&render(&stats, Format::Json).unwrap().text).unwrap();
    assert!(plain.get("annotations").is_none(), "not read: not claimed");

    let note = AnnotationRow {
        id: AnnotationId(3),
        at_ms: 1_732_896_120_000,
        text: "18:02 cut payment DB".into(),
        author: Some("alice".into()),
        experiment_id: Some(ExperimentId(7)),
        run_id: Some(RunId(11)),
    };
    let annotated: serde_json::Value = serde_json::from_str(
        &render_annotated(&stats, std::slice::from_ref(&note), Format::Json)
            .unwrap()
            .text,
    )
    .unwrap();
    assert_eq!(
        annotated["annotations"],
        serde_json::json!([{
            "id": 3, "at_ms": 1_732_896_120_000_i64, "text": "18:02 cut payment DB",
            "author": "alice", "experiment_id": 7, "run_id": 11
        }])
    );
    assert_eq!(annotated["confidence"], plain["confidence"]);
    let none: serde_json::Value =
        serde_json::from_str(&render_annotated(&stats, &[], Format::Json).unwrap().text).unwrap();
    assert_eq!(none["annotations"], serde_json::json!([]));
    // The markdown gets a table (one line per note, pipes escaped), only when there are notes.
    let multi_line = AnnotationRow {
        text: "rolled back | paged\nteam".into(),
        author: None,
        run_id: None,
        ..note.clone()
    };
    let markdown = render_annotated(&stats, &[note.clone(), multi_line], Format::Md)
        .unwrap()
        .text;
    assert!(markdown.contains("## Annotations\n"), "{markdown}");
    assert!(
        markdown.contains("| 2024-11-29 16:02:00.000 UTC | 11 | alice | 18:02 cut payment DB |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| 2024-11-29 16:02:00.000 UTC |  |  | rolled back \\| paged team |"),
        "{markdown}"
    );
    assert!(
        !render(&stats, Format::Md)
            .unwrap()
            .text
            .contains("## Annotations")
    );
    assert_eq!(
        render_annotated(&stats, &[], Format::Md).unwrap(),
        render(&stats, Format::Md).unwrap()
    );
    // The CSV does not change.
    assert_eq!(
        render_annotated(&stats, &[note], Format::Csv).unwrap(),
        render(&stats, Format::Csv).unwrap()
    );
}

#[tokio::test]
async fn the_stored_report_reads_the_experiments_annotations() {
    use crate::store::NewAnnotation;
    let dir = crate::test_support::TempStore::new("report-notes");
    let store = dir.open().await;
    let spec = crate::test_support::spec(
        "name = \"notes\"\nrounds = 1\nduration = \"10s\"\n\n[fault]\ntarget = \"payment\"\nrates = [1.0]\n\n[load]\nusers = 1\n",
    );
    let id = store.create_experiment(&spec, 1).await.unwrap();
    let other = store.create_experiment(&spec, 2).await.unwrap();
    for (experiment, text) in [
        (Some(id), "ours"),
        (Some(other), "theirs"),
        (None, "nobody's"),
    ] {
        store
            .insert_annotation(&NewAnnotation {
                at_ms: 10,
                text: text.into(),
                author: None,
                experiment_id: experiment,
                run_id: None,
            })
            .await
            .unwrap();
    }
    let json: serde_json::Value =
        serde_json::from_str(&report(&store, id, Format::Json).await.unwrap().text).unwrap();
    let texts: Vec<&str> = json["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|note| note["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["ours"]);
    store.close().await;
}

/// One error/hang × off/on experiment with `rounds` rounds and per-endpoint latency for two endpoints.
fn with_endpoints(rounds: i64) -> ExperimentStats {
    let keys = vec![
        key(0, "error", 0.5, "disabled"),
        key(1, "error", 0.5, "enforce"),
    ];
    let mut runs = Vec::new();
    for round in 0..rounds {
        for k in &keys {
            let mut run = run(
                k.index,
                round,
                &[(MetricName::Availability, 0.9 + 0.01 * round as f64)],
            );
            for endpoint in ["GET /", "POST /cart/checkout"] {
                for (metric, ms) in [
                    (MetricName::P50Ms, 1.0),
                    (MetricName::P95Ms, 2.0),
                    (MetricName::P99Ms, 3.0),
                ] {
                    run.values
                        .insert(MetricKey::endpoint(metric, endpoint), ms + round as f64);
                }
            }
            runs.push(run);
        }
    }
    let info = ExperimentInfo {
        id: ExperimentId(9),
        name: "endpoints".into(),
        status: Status::Finished,
        planned_runs: 2 * rounds,
        finished_runs: 2 * rounds as usize,
        other_runs: 0,
        failed_runs: 0,
        not_measured: Vec::new(),
    };
    ExperimentStats::from_runs(info, keys, runs)
}

#[test]
fn the_endpoint_table_has_one_row_per_condition_and_endpoint() {
    let text = render(&with_endpoints(2), Format::Md).unwrap().text;
    let section = text
        .split("## Latency per endpoint")
        .nth(1)
        .expect("the endpoint section")
        .split("\n## ")
        .next()
        .unwrap();
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| error"))
        .collect();
    // 2 conditions × 2 endpoints, each once.
    assert_eq!(rows.len(), 4, "{section}");
    assert_eq!(
        rows.iter()
            .filter(|row| row.contains("| POST /cart/checkout |"))
            .count(),
        2
    );
}

#[test]
fn one_round_says_intervals_need_two_rounds() {
    let one = with_endpoints(1);
    assert!(!one.has_intervals());
    let text = render(&one, Format::Md).unwrap().text;
    assert!(
        !text.contains("Every figure is the mean over rounds ± the half-width"),
        "{text}"
    );
    assert!(text.contains(INTERVALS_NEED_TWO_ROUNDS));
    let verdicts = text
        .split("## Breaker off vs on")
        .nth(1)
        .expect("the off-vs-on section stays");
    assert!(
        verdicts
            .trim_start()
            .starts_with("No verdict. Intervals need at least two rounds"),
        "{verdicts}"
    );
    // Two rounds: intervals and verdicts as before.
    let two = render(&with_endpoints(2), Format::Md).unwrap().text;
    assert!(two.contains("Every figure is the mean over rounds ± the half-width"));
    assert!(!two.contains(INTERVALS_NEED_TWO_ROUNDS));
}

/// A prediction of condition 1 of [`two_kinds`] (error @ 50 %: opens 5 and 6, checkout failure 0.5 both rounds):
/// opens predicted in [20, 22] (the measured interval, 5.5 ± 6.35, misses it), checkout failure 0.5 (within).
fn predicted_condition_1() -> crate::predict::Prediction {
    let band = |low: f64, high: f64, slack: f64| crate::predict::Band {
        low,
        mean: (low + high) / 2.0,
        high,
        band_low: low - slack,
        band_high: high + slack,
        simulations: 40,
    };
    crate::predict::Prediction {
        condition: 1,
        breaker: "checkout->payment".into(),
        not_modelled: vec![crate::predict::NotModelled {
            breaker: "frontend->checkout".into(),
            reason: "not modelled: one breaker".into(),
        }],
        breaker_opens: band(40.0, 42.0, 2.0),
        rejected: band(100.0, 120.0, 10.0),
        checkout_failure: band(0.48, 0.52, 0.03),
        injected_rate: 0.5,
        time_open_s: band(10.0, 12.0, 2.0),
        opens_bound: Some(58),
        breaker_rejected: None,
        upstream: Vec::new(),
        opens_estimate: Some(41.5),
        pool: Some(crate::predict::PoolPrediction {
            workers: 256,
            formula_s: Some(1.28),
            exhaustion_s: Some(band(1.2, 1.4, 0.1)),
            refused: band(40_000.0, 42_000.0, 500.0),
        }),
        checkout_rate: Some(band(0.9, 1.0, 0.05)),
        at_measured_load: None,
    }
}

#[test]
fn predictions_sit_beside_the_measurements_and_misses_are_flagged() {
    let mut stats = two_kinds();
    let measured = stats.condition(1).cloned();
    stats.predictions = vec![crate::stats::PredictedCondition::of(
        predicted_condition_1(),
        "error @ 50% / enforce".into(),
        measured.as_ref(),
        None,
    )];
    let checks = &stats.predictions[0].checks;
    assert_eq!(checks.len(), 2, "opens and checkout failure were measured");
    let md = render(&stats, Format::Md).unwrap().text;
    assert!(md.contains("## Predicted vs measured"), "{md}");
    assert!(
        md.contains("| error @ 50% / enforce | breaker_opens [checkout->payment] | 41.00 [40.00, 42.00] | [38.00, 44.00] (40 sims) | 5.500 ± 6.353 | ⚠ outside |"),
        "{md}"
    );
    assert!(
        md.contains("| checkout_failure | 0.5000 [0.4800, 0.5200]"),
        "{md}"
    );
    assert!(md.contains("| 0.5000 ± 0 | within |"), "{md}");
    assert!(
        md.contains(
            "| rejected | 110.0 [100.0, 120.0] | [90.00, 130.0] (40 sims) | not measured yet |"
        ),
        "{md}"
    );
    assert!(
        md.contains("opens bound [checkout->payment] | ≤ 58, estimate ≈ 41.50"),
        "{md}"
    );
    // A hang's pool: the simulated time to exhaustion, then seed 001's arithmetic beside it.
    assert!(
        md.contains("| pool_exhaustion_s | 1.300 [1.200, 1.400] | [1.100, 1.500] (40 sims) | not measured yet |"),
        "{md}"
    );
    assert!(
        md.contains("| exhaustion formula | 1.280 (workers / (requests per second × share calling the dependency)) |"),
        "{md}"
    );
    // The breaker the model leaves out: said, with its own measurement (it never opened: 0 in both rounds).
    assert!(
        md.contains(
            "| breaker_opens [frontend->checkout] | not modelled: one breaker | | 0 ± 0 | |"
        ),
        "{md}"
    );
    assert!(md.contains("Likely reasons"), "{md}");
    // The load the bands assume comes first; no rate was measured, so they are the prediction before the run.
    assert!(
        md.contains("| error @ 50% / enforce | load: checkout_rate | 0.9500 [0.9000, 1.000] | [0.8500, 1.050] (40 sims) | not measured yet | the rate the prediction made before the run assumes |"),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&stats, Format::Json).unwrap().text).unwrap();
    assert_eq!(json["predictions"][0]["prediction"]["opens_bound"], 58);
    let opens = &json["predictions"][0]["checks"][1];
    assert_eq!(opens["metric"], "breaker_opens", "{json}");
    assert_eq!(opens["breaker"], "checkout->payment", "{json}");
    assert!(opens["flag"].is_string());

    let without = render(&two_kinds(), Format::Md).unwrap().text;
    assert!(!without.contains("Predicted vs measured"));
}

// A predicted metric the targets could not measure says so and points to the statement, instead of "yet".
#[test]
fn a_prediction_of_a_metric_the_targets_could_not_measure_says_not_measured() {
    let mut stats = two_kinds();
    let measured = stats.condition(1).cloned();
    stats.predictions = vec![crate::stats::PredictedCondition::of(
        predicted_condition_1(),
        "error @ 50% / enforce".into(),
        measured.as_ref(),
        None,
    )];
    stats.experiment.not_measured = vec![crate::stats::NotMeasured {
        statement: "time open was not measured: nothing watched".into(),
        metrics: vec![MetricName::TimeOpenS],
    }];
    let md = render(&stats, Format::Md).unwrap().text;
    assert!(
        md.contains("## Not measured\n\n- time open was not measured: nothing watched\n"),
        "{md}"
    );
    assert!(
        md.contains("| time_open_s [checkout->payment] | 11.00 [10.00, 12.00] | [8.000, 14.00] (40 sims) | not measured (see *Not measured*) |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| rejected | 110.0 [100.0, 120.0] | [90.00, 130.0] (40 sims) | not measured yet |"
        ),
        "{md}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&render(&stats, Format::Json).unwrap().text).unwrap();
    assert_eq!(
        json["experiment"]["not_measured"][0], "time open was not measured: nothing watched",
        "the JSON report lists the statements as strings"
    );
}

#[tokio::test]
async fn the_stored_report_sums_up_finished_runs_per_container_samples_per_service() {
    use crate::store::{ContainerSampleRecord, Status};
    let dir = crate::test_support::TempStore::new("report-containers");
    let store = dir.open().await;
    let spec = crate::test_support::spec(
        "name = \"containers\"\nrounds = 1\nduration = \"10s\"\n\n[fault]\ntarget = \"payment\"\nkind = \"pause\"\nrates = [0.0, 1.0]\n\n[load]\nusers = 1\n",
    );
    let id = store.create_experiment(&spec, 1).await.unwrap();
    let sample = |second: u32, container: &str, cpu_seconds: f64| ContainerSampleRecord {
        second,
        container: container.into(),
        service: "payment".into(),
        replica: 1,
        cpu_seconds,
        memory_bytes: 8 << 20,
        rx_bytes: 1 << 20,
        tx_bytes: 1 << 19,
        energy_joules: 1.25,
    };
    let plan = spec.plan();
    let warmup = std::time::Duration::from_secs(1);
    let window = std::time::Duration::from_secs(10);
    // A finished run's samples count; an interrupted run's do not.
    let finished = store
        .start_run(id, &plan[0], warmup, window, 1_000)
        .await
        .unwrap();
    store
        .insert_container_samples(
            finished,
            &[
                sample(1, "shop_payment_1", 0.1),
                sample(2, "shop_payment_1", 0.3),
            ],
        )
        .await
        .unwrap();
    store
        .finish_run(
            finished,
            &crate::store::tests::record(Status::Finished, warmup),
        )
        .await
        .unwrap();
    let interrupted = store
        .start_run(id, &plan[1], warmup, window, 3_000)
        .await
        .unwrap();
    store
        .insert_container_samples(interrupted, &[sample(1, "shop_payment_1", 0.9)])
        .await
        .unwrap();
    store.mark_interrupted(id, 4_000).await.unwrap();

    let markdown = report(&store, id, Format::Md).await.unwrap().text;
    assert!(markdown.contains("## Containers"), "{markdown}");
    assert!(markdown.contains("energy, modelled (J)"));
    assert!(
        markdown.contains("| payment | 1 | 2 | 20.0 | 8.0 | 2.0 | 1.0 | 2.5 |"),
        "{markdown}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&report(&store, id, Format::Json).await.unwrap().text).unwrap();
    assert_eq!(json["containers"][0]["service"], "payment");
    assert_eq!(json["containers"][0]["seconds"], 2);
    store.close().await;
}
