//! Storage tests against a temporary SQLite file, and against PostgreSQL too when
//! `TOLERANT_TEST_PG_URL` is set (e.g. `postgres://tolerant@127.0.0.1/tolerant_test`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::json;

use super::writing::ROWS_PER_INSERT;
use super::*;
use crate::load::{EndpointReport, Outcome, Recorder, deserialize_histogram, endpoint};
use crate::spec::ExperimentSpec;

const SPEC: &str = r#"
name = "store-test"
rounds = 2
duration = "10s"
warmup = "2s"
seed = 9

[load]
users = 3

[fault]
target = "payment"
rates = [0.0, 1.0]

[breaker]
modes = ["disabled", "enforce"]
"#;

/// A fresh SQLite file in the temp dir (removed with its WAL files when dropped).
struct TempDb(PathBuf);

impl TempDb {
    fn new() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "tolerant-store-{}-{}.db",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        TempDb(path)
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

/// The stores every scenario runs against: SQLite always, PostgreSQL when configured.
async fn stores() -> (Vec<Store>, TempDb) {
    let file = TempDb::new();
    let mut stores = vec![Store::open(file.0.to_str().unwrap()).await.unwrap()];
    if let Ok(url) = std::env::var("TOLERANT_TEST_PG_URL") {
        stores.push(
            Store::open(&url)
                .await
                .expect("TOLERANT_TEST_PG_URL must be reachable"),
        );
    }
    (stores, file)
}

fn record(status: Status, warmup: Duration) -> RunRecord {
    let names: Vec<String> = endpoint::NAMES.iter().map(|n| (*n).to_owned()).collect();
    let mut recorder = Recorder::new(names.len(), warmup, None);
    let ms = Duration::from_millis(1);
    for i in 0..40u32 {
        let at = ms * (i * 100);
        let outcome = match i % 4 {
            0 | 1 => Outcome::Ok,
            2 => Outcome::Failed,
            _ => Outcome::Rejected,
        };
        recorder.record(endpoint::PRODUCT, at, outcome, ms * (i + 1), Duration::ZERO);
        recorder.record(endpoint::CHECKOUT, at, Outcome::Ok, ms * 3, Duration::ZERO);
    }
    let (seconds, totals) = recorder.finish(4);
    RunRecord {
        status,
        abort_reason: (status == Status::Aborted).then(|| "availability below 0.2 for 10s".into()),
        load_errors: 0,
        finished_at_ms: 2_000,
        endpoint_names: names.clone(),
        seconds,
        endpoints: names
            .into_iter()
            .zip(totals)
            .map(|(name, stats)| EndpointReport { name, stats })
            .collect(),
        collector: vec![CollectorSample {
            second: 1,
            cart_mean_items: Some(2.5),
            carts: Some(3),
            pool_in_flight: Some(4),
            pool_queued: Some(0),
            cpu_seconds: Some(0.25),
            energy_joules: Some(12.5),
            extra: Some(json!({"agent_injected": 7})),
        }],
        transitions: vec![
            TransitionRecord {
                at_ms: 1_500,
                service: "checkout".into(),
                breaker: "checkout->payment".into(),
                from: "closed".into(),
                to: "open".into(),
                reason: "consecutive_failures".into(),
                detail: json!({"failures": 5}),
                seq: 1,
                shadow: false,
                source: None,
            },
            TransitionRecord {
                at_ms: 1_700,
                service: "shop".into(),
                breaker: "inventory".into(),
                from: "closed".into(),
                to: "open".into(),
                reason: "observed".into(),
                detail: json!({}),
                seq: 1,
                shadow: false,
                source: Some("prometheus:http://127.0.0.1:9000/metrics".into()),
            },
        ],
        fault_events: vec![
            FaultEventRecord {
                at_ms: 1_000,
                event: "applied".into(),
                fault_id: "run-1".into(),
                detail: json!({"kind": "error", "status": 500, "rate": 1.0}),
            },
            FaultEventRecord {
                at_ms: 1_900,
                event: "removed".into(),
                fault_id: "run-1".into(),
                detail: json!({}),
            },
        ],
        energy: Some((40.0, EnergySource::Modelled)),
    }
}

async fn new_experiment(store: &Store) -> (ExperimentSpec, ExperimentId) {
    let spec = ExperimentSpec::parse(SPEC).unwrap();
    let id = store.create_experiment(&spec, 1_000).await.unwrap();
    (spec, id)
}

#[test]
fn locations_map_to_urls_and_backends() {
    assert_eq!(
        database_url("tolerant.db").unwrap(),
        ("sqlite://tolerant.db?mode=rwc".to_owned(), Backend::Sqlite)
    );
    assert_eq!(
        database_url("sqlite:///tmp/x.db").unwrap().0,
        "sqlite:///tmp/x.db?mode=rwc"
    );
    assert_eq!(
        database_url("sqlite://x.db?mode=ro").unwrap().0,
        "sqlite://x.db?mode=ro"
    );
    assert_eq!(
        database_url("postgres://u@127.0.0.1/db").unwrap().1,
        Backend::Postgres
    );
    assert!(database_url("mysql://x").is_err());
    assert!(database_url("sqlite::memory:").is_err());
    assert!(database_url("").is_err());
}

#[test]
fn both_migration_flavours_declare_the_same_columns() {
    fn shape(sql: &str) -> Vec<String> {
        sql.lines()
            .map(str::trim)
            .filter(|line| !line.starts_with("--") && !line.is_empty())
            .map(|line| {
                let mut words = line.split_whitespace();
                let first = words.next().unwrap_or("");
                match first {
                    "CREATE" => line.split('(').next().unwrap_or("").trim().to_owned(),
                    _ => first.to_owned(),
                }
            })
            .collect()
    }
    for (version, _, sqlite, postgres) in MIGRATIONS {
        assert_eq!(shape(sqlite), shape(postgres), "migration {version}");
        // Generated ids are the one difference: where one flavour has them, the other has its own.
        assert_eq!(
            sqlite.contains("INTEGER PRIMARY KEY"),
            postgres.contains("GENERATED BY DEFAULT AS IDENTITY"),
            "migration {version}"
        );
    }
}

#[tokio::test]
async fn sqlite_file_is_created_in_wal_mode_and_reopens() {
    let file = TempDb::new();
    let location = file.0.to_str().unwrap().to_owned();
    let store = Store::open(&location).await.unwrap();
    assert_eq!(store.backend(), Backend::Sqlite);
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    let (_, id) = new_experiment(&store).await;
    store.close().await;
    assert!(file.0.exists());

    // Migrations are not re-applied; data survives.
    let store = Store::open(&location).await.unwrap();
    assert_eq!(
        store.experiment(id).await.unwrap().unwrap().name,
        "store-test"
    );
    store.close().await;
}

#[tokio::test]
async fn experiments_keep_their_spec_and_status() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, id) = new_experiment(store).await;
        let row = store.experiment(id).await.unwrap().unwrap();
        assert_eq!(row.spec_toml, SPEC);
        assert_eq!(row.seed, 9);
        assert_eq!(row.planned_runs, spec.plan().len() as i64);
        assert_eq!(row.status, Status::Pending);
        assert_eq!(row.started_at_ms, None);

        store
            .set_experiment_status(id, Status::Running, 2_000, None)
            .await
            .unwrap();
        store
            .set_experiment_status(id, Status::Running, 3_000, None)
            .await
            .unwrap();
        let row = store.experiment(id).await.unwrap().unwrap();
        assert_eq!(row.status, Status::Running);
        assert_eq!(row.started_at_ms, Some(2_000), "the first start stays");

        store
            .set_experiment_status(id, Status::Aborted, 4_000, Some("halted"))
            .await
            .unwrap();
        let row = store.experiment(id).await.unwrap().unwrap();
        assert_eq!(row.status, Status::Aborted);
        assert_eq!(row.finished_at_ms, Some(4_000));
        assert_eq!(row.abort_reason.as_deref(), Some("halted"));

        assert!(
            store
                .experiments()
                .await
                .unwrap()
                .iter()
                .any(|e| e.id == id)
        );
        assert_eq!(
            store.experiment(ExperimentId(i64::MAX)).await.unwrap(),
            None
        );
    }
}

#[tokio::test]
async fn a_finished_run_stores_everything_it_saw() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let planned = spec.plan()[3];
        let run = store
            .start_run(
                experiment,
                &planned,
                Duration::from_secs(2),
                Duration::from_secs(10),
                1_100,
            )
            .await
            .unwrap();
        let runs = store.runs(experiment).await.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, Status::Running);
        assert_eq!(runs[0].outcomes, None);
        assert_eq!(runs[0].plan_index, 3);
        assert_eq!(runs[0].condition_label, planned.condition.label());
        assert_eq!(runs[0].fault_rate, planned.condition.fault_rate);
        assert!(
            store.samples(run).await.unwrap().is_empty(),
            "nothing before the end"
        );

        let record = record(Status::Finished, Duration::from_secs(2));
        store.finish_run(run, &record).await.unwrap();

        let row = &store.runs(experiment).await.unwrap()[0];
        assert_eq!(row.status, Status::Finished);
        assert_eq!(row.finished_at_ms, Some(2_000));
        assert_eq!(row.outcomes, Some(record.outcomes()));
        assert_eq!(row.energy, Some((40.0, EnergySource::Modelled)));
        assert_eq!(row.warmup_ms, 2_000);

        let samples = store.samples(run).await.unwrap();
        assert_eq!(samples.len(), 4);
        assert!(samples[0].warmup && samples[1].warmup && !samples[2].warmup);
        assert_eq!(samples[0].outcomes, record.seconds[0].outcomes());
        assert_eq!(samples[1].collector, record.collector[0]);
        assert_eq!(samples[2].collector.cart_mean_items, None);

        let seconds = store.endpoint_seconds(run).await.unwrap();
        assert_eq!(seconds.len(), 8, "two endpoints × four seconds");
        let product = seconds
            .iter()
            .find(|s| s.second == 0 && s.endpoint == "GET /product/{id}")
            .unwrap();
        let histogram = deserialize_histogram(&product.histogram_v2).unwrap();
        assert_eq!(histogram.len(), 10);
        assert_eq!(product.outcomes.total(), 10);
        assert_eq!(product.max_us as u64, histogram.max());
        // Second 0 of GET /product: ok after 1, 2, 5, 6, 9, 10 ms, failed or rejected after 3, 4, 7, 8 ms.
        let near = |value: Option<i64>, us: i64| value.is_some_and(|v| (v - us).abs() <= us / 500);
        assert!(near(product.p95_ok_us, 10_000), "{product:?}");
        assert!(near(product.p95_failed_us, 8_000), "{product:?}");
        let checkout = seconds
            .iter()
            .find(|s| s.second == 0 && s.endpoint == endpoint::NAMES[endpoint::CHECKOUT])
            .unwrap();
        assert_eq!(checkout.p95_failed_us, None, "every checkout succeeded");

        let histograms = store.endpoint_histograms(run).await.unwrap();
        assert_eq!(histograms.len(), endpoint::NAMES.len());
        let product = histograms
            .iter()
            .find(|h| h.endpoint == "GET /product/{id}")
            .unwrap();
        assert_eq!(product.outcomes.total(), 20, "measured part only");
        assert_eq!(product.outcomes.ok, 10);
        let all = deserialize_histogram(&product.histogram_v2).unwrap();
        let ok = deserialize_histogram(&product.histogram_ok_v2).unwrap();
        assert_eq!((all.len(), ok.len()), (20, 10));
        assert_eq!(product.p99_us as u64, all.value_at_quantile(0.99));

        assert_eq!(store.transitions(run).await.unwrap(), record.transitions);
        assert_eq!(store.fault_events(run).await.unwrap(), record.fault_events);
        assert_eq!(
            store.finished_plan_indices(experiment).await.unwrap(),
            vec![3]
        );
    }
}

#[tokio::test]
async fn an_aborted_run_keeps_its_reason() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        store
            .finish_run(run, &record(Status::Aborted, Duration::ZERO))
            .await
            .unwrap();
        let row = &store.runs(experiment).await.unwrap()[0];
        assert_eq!(row.status, Status::Aborted);
        assert_eq!(
            row.abort_reason.as_deref(),
            Some("availability below 0.2 for 10s")
        );
        assert!(
            store
                .finished_plan_indices(experiment)
                .await
                .unwrap()
                .is_empty()
        );
        let error = store
            .finish_run(run, &record(Status::Running, Duration::ZERO))
            .await
            .unwrap_err();
        assert!(matches!(error, StoreError::NotAnEnd(..)), "{error}");
    }
}

#[tokio::test]
async fn a_run_is_written_once() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = store
            .start_run(
                experiment,
                &spec.plan()[1],
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        let record = record(Status::Finished, Duration::ZERO);
        store.finish_run(run, &record).await.unwrap();
        let error = store.finish_run(run, &record).await.unwrap_err();
        assert!(
            matches!(error, StoreError::RunNotRunning(id) if id == run),
            "{error}"
        );
        assert_eq!(
            store.samples(run).await.unwrap().len(),
            record.seconds.len()
        );
    }
}

#[tokio::test]
async fn interrupted_runs_get_no_rows_and_are_retried() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let planned = spec.plan()[2];
        let first = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        // The controller died; a new one marks what was running.
        assert_eq!(store.mark_interrupted(experiment, 50).await.unwrap(), 1);
        assert_eq!(store.mark_interrupted(experiment, 60).await.unwrap(), 0);
        let record = record(Status::Finished, Duration::ZERO);
        assert!(matches!(
            store.finish_run(first, &record).await,
            Err(StoreError::RunNotRunning(_))
        ));
        assert!(store.samples(first).await.unwrap().is_empty());

        // The retry of the same plan position finishes; the interrupted attempt stays as history.
        let retry = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                70,
            )
            .await
            .unwrap();
        store.finish_run(retry, &record).await.unwrap();
        let runs = store.runs(experiment).await.unwrap();
        let statuses: Vec<Status> = runs.iter().map(|r| r.status).collect();
        assert_eq!(statuses, vec![Status::Interrupted, Status::Finished]);
        assert_eq!(
            store.finished_plan_indices(experiment).await.unwrap(),
            vec![2]
        );
    }
}

#[tokio::test]
async fn a_plan_position_cannot_finish_twice() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let planned = spec.plan()[0];
        let record = record(Status::Finished, Duration::ZERO);
        let first = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        let second = store
            .start_run(
                experiment,
                &planned,
                Duration::ZERO,
                Duration::from_secs(10),
                2,
            )
            .await
            .unwrap();
        store.finish_run(first, &record).await.unwrap();
        let error = store.finish_run(second, &record).await.unwrap_err();
        assert!(matches!(error, StoreError::Database(_)), "{error}");
        // The failed transaction left nothing behind and the run still counts as running.
        assert!(store.samples(second).await.unwrap().is_empty());
        let runs = store.runs(experiment).await.unwrap();
        assert_eq!(runs[1].status, Status::Running);
    }
}

#[tokio::test]
async fn a_failing_write_leaves_nothing_behind() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        let mut broken = record(Status::Finished, Duration::ZERO);
        // The same second twice violates the samples' primary key after other rows were written.
        let duplicate = broken.seconds[0].clone();
        broken.seconds.push(duplicate);
        assert!(store.finish_run(run, &broken).await.is_err());
        assert!(store.samples(run).await.unwrap().is_empty());
        assert!(store.endpoint_histograms(run).await.unwrap().is_empty());
        assert_eq!(
            store.runs(experiment).await.unwrap()[0].status,
            Status::Running
        );

        // The run can still be written properly.
        store
            .finish_run(run, &record(Status::Finished, Duration::ZERO))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn long_runs_are_written_in_chunks() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(600),
                1,
            )
            .await
            .unwrap();
        let mut recorder = Recorder::new(1, Duration::ZERO, None);
        for second in 0..(ROWS_PER_INSERT as u64 * 2 + 7) {
            recorder.record(
                0,
                Duration::from_secs(second),
                Outcome::Ok,
                Duration::from_millis(2),
                Duration::ZERO,
            );
        }
        let (seconds, totals) = recorder.finish(ROWS_PER_INSERT as u64 * 2 + 7);
        let mut long = record(Status::Finished, Duration::ZERO);
        long.endpoint_names = vec!["GET /x".into()];
        long.seconds = seconds;
        long.endpoints = vec![EndpointReport {
            name: "GET /x".into(),
            stats: totals.into_iter().next().unwrap(),
        }];
        long.transitions = (0..(ROWS_PER_INSERT + 3))
            .map(|i| TransitionRecord {
                seq: i as i64,
                ..long.transitions[0].clone()
            })
            .collect();
        store.finish_run(run, &long).await.unwrap();
        assert_eq!(
            store.samples(run).await.unwrap().len(),
            ROWS_PER_INSERT * 2 + 7
        );
        assert_eq!(
            store.endpoint_seconds(run).await.unwrap().len(),
            ROWS_PER_INSERT * 2 + 7
        );
        let transitions = store.transitions(run).await.unwrap();
        assert_eq!(transitions.len(), ROWS_PER_INSERT + 3);
        assert_eq!(transitions.last().unwrap().seq, ROWS_PER_INSERT as i64 + 2);
    }
}

#[tokio::test]
async fn annotations_round_trip_with_their_experiment_and_run() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        // Later than anything other tests write, and unique per experiment even in a reused database.
        let base = 1_000_000_000_000_000 + experiment.0 * 100;
        store
            .set_experiment_status(experiment, Status::Running, base, None)
            .await
            .unwrap();
        assert_eq!(store.running().await.unwrap(), Some((experiment, None)));
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(10),
                base,
            )
            .await
            .unwrap();
        assert_eq!(
            store.running().await.unwrap(),
            Some((experiment, Some(run)))
        );

        let during = store
            .insert_annotation(&NewAnnotation {
                at_ms: base + 2,
                text: "  18:02 cut payment DB \n".into(),
                author: Some(" alice ".into()),
                experiment_id: Some(experiment),
                run_id: Some(run),
            })
            .await
            .unwrap();
        assert_eq!(during.text, "18:02 cut payment DB", "trimmed");
        assert_eq!(during.author.as_deref(), Some("alice"));
        let earlier = store
            .insert_annotation(&NewAnnotation {
                at_ms: base + 1,
                text: "paged the payment team".into(),
                author: Some("   ".into()),
                experiment_id: Some(experiment),
                run_id: None,
            })
            .await
            .unwrap();
        assert_eq!(earlier.author, None, "a blank author is none");
        let unattached = store
            .insert_annotation(&NewAnnotation {
                at_ms: base + 3,
                text: "18:05 rollback".into(),
                author: None,
                experiment_id: None,
                run_id: None,
            })
            .await
            .unwrap();
        assert!(during.id < earlier.id && earlier.id < unattached.id);

        // By time, not by insertion order; the experiment's list leaves the unattached one out.
        assert_eq!(
            store.annotations(experiment).await.unwrap(),
            vec![earlier.clone(), during.clone()]
        );
        assert_eq!(
            store.latest_annotations(2).await.unwrap(),
            vec![during.clone(), unattached.clone()]
        );
        assert!(store.latest_annotations(0).await.unwrap().is_empty());

        store
            .set_experiment_status(experiment, Status::Finished, base + 10, None)
            .await
            .unwrap();
        assert_ne!(
            store.running().await.unwrap().map(|(id, _)| id),
            Some(experiment)
        );
    }
}

#[tokio::test]
async fn bad_annotation_text_is_refused_naming_the_field_and_nothing_is_stored() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (_, experiment) = new_experiment(store).await;
        let long = "x".repeat(MAX_ANNOTATION_CHARS + 1);
        for text in ["", "  \n\t ", long.as_str()] {
            let error = store
                .insert_annotation(&NewAnnotation {
                    at_ms: 5,
                    text: text.to_owned(),
                    author: None,
                    experiment_id: Some(experiment),
                    run_id: None,
                })
                .await
                .unwrap_err();
            assert!(
                matches!(error, StoreError::Invalid { field: "text", .. }),
                "{error}"
            );
            assert!(error.to_string().starts_with("text: "), "{error}");
        }
        let error = store
            .insert_annotation(&NewAnnotation {
                at_ms: 5,
                text: "fine".into(),
                author: Some("a".repeat(MAX_AUTHOR_CHARS + 1)),
                experiment_id: Some(experiment),
                run_id: None,
            })
            .await
            .unwrap_err();
        assert!(error.to_string().starts_with("author: "), "{error}");
        assert!(store.annotations(experiment).await.unwrap().is_empty());

        // A run must be one of the annotation's experiment.
        let (spec, other) = new_experiment(store).await;
        let others_run = store
            .start_run(
                other,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        for experiment_id in [Some(experiment), None] {
            let error = store
                .insert_annotation(&NewAnnotation {
                    at_ms: 5,
                    text: "fine".into(),
                    author: None,
                    experiment_id,
                    run_id: Some(others_run),
                })
                .await
                .unwrap_err();
            assert!(error.to_string().starts_with("run_id: "), "{error}");
        }
        assert!(store.annotations(experiment).await.unwrap().is_empty());
        assert!(store.annotations(other).await.unwrap().is_empty());

        // The limit counts characters, not bytes: 2,000 multi-byte characters are accepted.
        let wide = "é".repeat(MAX_ANNOTATION_CHARS);
        let stored = store
            .insert_annotation(&NewAnnotation {
                at_ms: 5,
                text: wide.clone(),
                author: None,
                experiment_id: Some(experiment),
                run_id: None,
            })
            .await
            .unwrap();
        assert_eq!(store.annotations(experiment).await.unwrap(), vec![stored]);
    }
}

#[tokio::test]
async fn annotations_survive_reopening_the_database() {
    let file = TempDb::new();
    let location = file.0.to_str().unwrap().to_owned();
    let store = Store::open(&location).await.unwrap();
    let (_, experiment) = new_experiment(&store).await;
    let stored = store
        .insert_annotation(&NewAnnotation {
            at_ms: 42,
            text: "18:02 cut payment DB".into(),
            author: None,
            experiment_id: Some(experiment),
            run_id: None,
        })
        .await
        .unwrap();
    store.close().await;
    let store = Store::open(&location).await.unwrap();
    assert_eq!(
        store.annotations(experiment).await.unwrap(),
        vec![stored.clone()]
    );
    assert_eq!(store.latest_annotations(10).await.unwrap(), vec![stored]);
    store.close().await;
}

#[tokio::test]
async fn scheduled_starts_are_replaced_and_removed() {
    let (stores, _file) = stores().await;
    for store in stores {
        let (_, first) = new_experiment(&store).await;
        let (_, second) = new_experiment(&store).await;
        store.schedule_start(first, 5_000).await.unwrap();
        store.schedule_start(second, 7_000).await.unwrap();
        // A second time for the same experiment replaces the first.
        store.schedule_start(first, 6_000).await.unwrap();
        assert_eq!(
            store.scheduled_starts().await.unwrap(),
            vec![(first, 6_000), (second, 7_000)]
        );
        store.unschedule_start(first).await.unwrap();
        store.unschedule_start(first).await.unwrap();
        assert_eq!(
            store.scheduled_starts().await.unwrap(),
            vec![(second, 7_000)]
        );
        store.unschedule_start(second).await.unwrap();
    }
}

/// Databases of earlier versions kept the queue in a table made outside the migrations: migration 3 moves
/// its rows and drops those of experiments that no longer exist.
#[tokio::test]
async fn the_old_schedule_table_moves_into_scheduled_starts() {
    let file = TempDb::new();
    let location = file.0.to_str().unwrap().to_owned();
    let (url, backend) = database_url(&location).unwrap();
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    super::migrations::migrator_through(backend, 2)
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO experiments (name, spec_toml, seed, planned_runs, status, created_at_ms) \
         VALUES ('old', '', 1, 1, 'pending', 0)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let id: i64 = sqlx::query_scalar("SELECT MAX(id) FROM experiments")
        .fetch_one(&pool)
        .await
        .unwrap();
    sqlx::query(
        "CREATE TABLE web_schedule (experiment_id BIGINT PRIMARY KEY, at_ms BIGINT NOT NULL)",
    )
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO web_schedule (experiment_id, at_ms) VALUES ($1, 900), ($2, 901)")
        .bind(id)
        .bind(id + 1_000)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;
    let store = Store::open(&location).await.unwrap();
    assert_eq!(
        store.scheduled_starts().await.unwrap(),
        vec![(ExperimentId(id), 900)]
    );
}

/// A stored value that does not decode is an error naming its column, never a silent blank.
#[tokio::test]
async fn a_corrupt_stored_column_is_an_error_naming_it() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        store
            .finish_run(run, &record(Status::Finished, Duration::ZERO))
            .await
            .unwrap();
        // Whole before the damage.
        assert_eq!(store.transitions(run).await.unwrap().len(), 2);
        assert_eq!(store.fault_events(run).await.unwrap().len(), 2);

        let damage = [
            "UPDATE transitions SET detail_json = '{\"failures\": ' WHERE run_id = $1",
            "UPDATE fault_events SET detail_json = 'not json' WHERE run_id = $1",
            "UPDATE samples SET extra_json = '[1,' WHERE run_id = $1",
            // The schema checks the source's name; a source without its joules is the damage left.
            "UPDATE runs SET energy_joules = NULL WHERE id = $1",
        ];
        for sql in damage {
            sqlx::query(sql)
                .bind(run.0)
                .execute(store.pool())
                .await
                .unwrap();
        }
        let column = |error: StoreError| match error {
            StoreError::Corrupt { column, .. } => column,
            other => panic!("expected Corrupt, got {other}"),
        };
        assert_eq!(
            column(store.transitions(run).await.unwrap_err()),
            "transitions.detail_json"
        );
        assert_eq!(
            column(store.fault_events(run).await.unwrap_err()),
            "fault_events.detail_json"
        );
        assert_eq!(
            column(store.samples(run).await.unwrap_err()),
            "samples.extra_json"
        );
        assert_eq!(
            column(store.runs(experiment).await.unwrap_err()),
            "runs.energy_joules/energy_source"
        );
    }
}

/// A new experiment's run at plan position `index`, started (no rows yet).
async fn started_run(store: &Store, index: usize) -> RunId {
    let (spec, experiment) = new_experiment(store).await;
    store
        .start_run(
            experiment,
            &spec.plan()[index],
            Duration::from_secs(2),
            Duration::from_secs(10),
            1_000,
        )
        .await
        .unwrap()
}

#[tokio::test]
async fn predictions_are_stored_with_the_experiment() {
    let (stores, _file) = stores().await;
    let spec = ExperimentSpec::parse(SPEC).unwrap();
    let expected = crate::predict::predict(&spec);
    assert_eq!(expected.len(), 4, "every condition of the spec is modelled");
    for store in stores {
        let id = store.create_experiment(&spec, 1_000).await.unwrap();
        assert_eq!(store.predictions(id).await.unwrap(), expected);
        let other = store.create_experiment(&spec, 2_000).await.unwrap();
        assert_eq!(store.predictions(other).await.unwrap().len(), 4);
        assert!(
            store
                .predictions(ExperimentId(other.0 + 1_000))
                .await
                .unwrap()
                .is_empty()
        );
    }
}

#[tokio::test]
async fn container_faults_keep_their_lease_until_undone_once() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let run = started_run(store, 0).await;
        let fault = NewContainerFault {
            container_id: "c0ffee".into(),
            container_name: "shop_payment_1".into(),
            service: "payment".into(),
            action: r#"{"action":"pause"}"#.into(),
            owner: "host/1/abc".into(),
            run_id: Some(run),
            started_ms: 10_000,
            until_ms: 15_000,
        };
        let id = store.insert_container_fault(&fault).await.unwrap();
        let pending_ids = |rows: Vec<ContainerFaultRow>| -> Vec<i64> {
            rows.into_iter()
                .map(|row| row.id)
                .filter(|row| *row == id)
                .collect()
        };
        // In force but not expired before 15 s; expired from then on.
        let before = store.pending_container_faults(Some(14_999)).await.unwrap();
        assert!(pending_ids(before).is_empty());
        let after = store.pending_container_faults(Some(15_000)).await.unwrap();
        assert_eq!(pending_ids(after), vec![id]);
        // A renewal moves the end of the lease.
        store.renew_container_fault(id, 20_000).await.unwrap();
        let renewed = store.pending_container_faults(Some(15_000)).await.unwrap();
        assert!(pending_ids(renewed).is_empty());
        // Undone once: a second undo (another controller's sweep) changes nothing.
        assert!(
            store
                .finish_container_fault(id, 16_000, None)
                .await
                .unwrap()
        );
        assert!(
            !store
                .finish_container_fault(id, 17_000, Some("late"))
                .await
                .unwrap()
        );
        let row = store.container_fault(id).await.unwrap().unwrap();
        assert_eq!(row.fault.until_ms, 20_000);
        assert_eq!((row.undone_ms, row.undo_error), (Some(16_000), None));
        assert_eq!(store.container_faults_of_run(run).await.unwrap().len(), 1);
        let all = store.pending_container_faults(None).await.unwrap();
        assert!(pending_ids(all).is_empty());
        // A lease cannot end before it starts.
        let backwards = NewContainerFault {
            until_ms: 9_000,
            ..fault
        };
        let refused = store.insert_container_fault(&backwards).await.unwrap_err();
        assert!(refused.to_string().contains("until_ms"), "{refused}");
    }
}

#[tokio::test]
async fn container_samples_round_trip_with_their_run() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let run = started_run(store, 1).await;
        let samples: Vec<ContainerSampleRecord> = (1..=3u32)
            .flat_map(|second| {
                ["shop_checkout_1", "shop_checkout_2"]
                    .into_iter()
                    .enumerate()
                    .map(move |(index, container)| ContainerSampleRecord {
                        second,
                        container: container.into(),
                        service: "checkout".into(),
                        replica: index as u32 + 1,
                        cpu_seconds: 0.25 * f64::from(second),
                        memory_bytes: 10_000_000 + u64::from(second),
                        rx_bytes: 1_000 * u64::from(second),
                        tx_bytes: 2_000,
                        energy_joules: 0.5,
                    })
            })
            .collect();
        store.insert_container_samples(run, &samples).await.unwrap();
        assert_eq!(store.container_samples(run).await.unwrap(), samples);
        let too_big = ContainerSampleRecord {
            second: 9,
            memory_bytes: u64::MAX,
            ..samples[0].clone()
        };
        let refused = store
            .insert_container_samples(run, &[too_big])
            .await
            .unwrap_err();
        assert!(refused.to_string().contains("memory_bytes"), "{refused}");
        assert_eq!(
            store.container_samples(run).await.unwrap().len(),
            samples.len()
        );
    }
}

/// A failed run (a panic, its load generator's own failures) reads back as failed with its reason and
/// load-generator count, on both engines, and is no verdict: a resume runs its plan position again.
#[tokio::test]
async fn failed_runs_read_back_as_failed_with_their_load_errors() {
    let (stores, _file) = stores().await;
    for store in &stores {
        let (spec, experiment) = new_experiment(store).await;
        let run = store
            .start_run(
                experiment,
                &spec.plan()[0],
                Duration::ZERO,
                Duration::from_secs(10),
                1,
            )
            .await
            .unwrap();
        let mut failed = record(Status::Failed, Duration::ZERO);
        failed.abort_reason =
            Some("load generator: 7 request(s) failed in the driver itself".into());
        failed.load_errors = 7;
        store.finish_run(run, &failed).await.unwrap();
        let row = &store.runs(experiment).await.unwrap()[0];
        assert_eq!(row.status, Status::Failed);
        assert_eq!(
            row.abort_reason.as_deref(),
            Some("failed: load generator: 7 request(s) failed in the driver itself")
        );
        assert_eq!(row.load_errors, Some(7));
        assert!(!row.stopped_by_condition());
        assert!(
            store
                .terminal_plan_indices(experiment)
                .await
                .unwrap()
                .is_empty()
        );

        // A finished run stores its count too (0), an unfinished one has none yet.
        let next = store
            .start_run(
                experiment,
                &spec.plan()[1],
                Duration::ZERO,
                Duration::from_secs(10),
                2,
            )
            .await
            .unwrap();
        assert_eq!(store.runs(experiment).await.unwrap()[1].load_errors, None);
        store
            .finish_run(next, &record(Status::Finished, Duration::ZERO))
            .await
            .unwrap();
        let rows = store.runs(experiment).await.unwrap();
        assert_eq!(rows[1].status, Status::Finished);
        assert_eq!(rows[1].load_errors, Some(0));
    }
}
