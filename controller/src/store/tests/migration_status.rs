//! Migration 10 gives failed and degraded runs their own status: a store made at version 9 with failed,
//! degraded and aborted runs (stored the old way, `aborted` plus a reason prefix) and rows in every table that
//! refers to a run migrates with every one of those rows kept and each run's status and reason right, on
//! SQLite (where `runs` is rebuilt) and on PostgreSQL when `TOLERANT_TEST_PG_URL` is set.

use super::*;
use crate::sources::SourceHealth;

/// Every table with a column referring to `runs`, and that column.
const CHILDREN: [(&str, &str); 10] = [
    ("samples", "run_id"),
    ("endpoint_seconds", "run_id"),
    ("endpoint_histograms", "run_id"),
    ("transitions", "run_id"),
    ("fault_events", "run_id"),
    ("container_samples", "run_id"),
    ("run_sources", "run_id"),
    // `ON DELETE SET NULL`: a cascade would keep the row and forget the run.
    ("annotations", "run_id"),
    ("container_faults", "run_id"),
    ("scheduled_starts", "experiment_id"),
];

/// How each table's rows that refer to something stand: `table: count` for every child table.
async fn child_counts(pool: &sqlx::AnyPool) -> Vec<String> {
    let mut counts = Vec::new();
    for (table, column) in CHILDREN {
        let count: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {table} WHERE {column} IS NOT NULL"
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        counts.push(format!("{table}: {count}"));
    }
    counts
}

/// The (status, reason) each run of the experiment ended with, as the old code stored them, and as they read
/// back after the migration.
const RUNS: [(&str, Option<&str>, Status, Option<&str>); 5] = [
    ("finished", None, Status::Finished, None),
    (
        "aborted",
        Some("availability below 0.2 for 10s"),
        Status::Aborted,
        Some("availability below 0.2 for 10s"),
    ),
    (
        "aborted",
        Some("failed: the run panicked: boom"),
        Status::Failed,
        Some("the run panicked: boom"),
    ),
    (
        "aborted",
        Some("degraded: load worker `w1` lost at second 3: its 10 users missing in seconds 3..8"),
        Status::Degraded,
        Some("load worker `w1` lost at second 3: its 10 users missing in seconds 3..8"),
    ),
    // A reason that only mentions the word elsewhere is an abort still.
    (
        "aborted",
        Some("fault: apply failed: refused"),
        Status::Aborted,
        Some("fault: apply failed: refused"),
    ),
];

/// A store at migration 9 on `location` holding [`RUNS`] with child rows in every table; returns the experiment.
async fn old_store(location: &str) -> ExperimentId {
    let (url, backend) = database_url(location).unwrap();
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    super::migrations::migrator_through(backend, 9)
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    let old = Store { pool, backend };
    let (spec, experiment) = new_experiment(&old).await;
    old.schedule_start(experiment, 9_000).await.unwrap();
    for (index, (stored, reason, ..)) in RUNS.into_iter().enumerate() {
        let run = start_run_of(&old, &spec, experiment, index, 1).await;
        let status = Status::parse(stored).unwrap();
        let mut ended = record(status, Duration::ZERO);
        ended.abort_reason = reason.map(str::to_owned);
        ended.sources = vec![SourceHealth {
            source: "prometheus:http://127.0.0.1:9000/metrics".into(),
            scrapes: 10,
            failures: 1,
            longest_gap_ms: 2_000,
            blind: Vec::new(),
        }];
        old.finish_run(run, &ended).await.unwrap();
        let sample = ContainerSampleRecord {
            second: 1,
            container: "payment-1".into(),
            service: "payment".into(),
            replica: 1,
            cpu_seconds: 0.5,
            memory_bytes: 1 << 20,
            rx_bytes: 10,
            tx_bytes: 20,
            energy_joules: 1.0,
        };
        old.insert_container_samples(run, &[sample]).await.unwrap();
        let note = NewAnnotation {
            at_ms: 1_000,
            text: format!("during run {run}"),
            author: None,
            experiment_id: Some(experiment),
            run_id: Some(run),
        };
        old.insert_annotation(&note).await.unwrap();
        let fault = NewContainerFault {
            container_id: "abc".into(),
            container_name: "payment-1".into(),
            service: "payment".into(),
            action: "{}".into(),
            owner: "test".into(),
            run_id: Some(run),
            started_ms: 1_000,
            until_ms: 2_000,
        };
        old.insert_container_fault(&fault).await.unwrap();
    }
    old.close().await;
    experiment
}

/// Opens `location` (migrating it) and checks every child row is kept and every run reads back right.
async fn migrates_keeping_every_row(location: &str, before: Vec<String>, experiment: ExperimentId) {
    let store = Store::open(location).await.unwrap();
    assert_eq!(
        child_counts(store.pool()).await,
        before,
        "no child row lost"
    );
    let runs = store.runs(experiment).await.unwrap();
    let read: Vec<(Status, Option<&str>)> = runs
        .iter()
        .map(|run| (run.status, run.abort_reason.as_deref()))
        .collect();
    let expected: Vec<(Status, Option<&str>)> = RUNS
        .into_iter()
        .map(|(_, _, status, reason)| (status, reason))
        .collect();
    assert_eq!(read, expected);
    let stored: Vec<String> = sqlx::query_scalar("SELECT status FROM runs ORDER BY id")
        .fetch_all(store.pool())
        .await
        .unwrap();
    assert_eq!(
        stored,
        ["finished", "aborted", "failed", "degraded", "aborted"],
        "their own status in the column"
    );
    // Each run still has its rows, and the rebuilt table still refuses and cascades as before.
    for run in &runs {
        assert_eq!(store.transitions(run.id).await.unwrap().len(), 2, "{run:?}");
    }
    let orphan = sqlx::query("INSERT INTO run_sources (run_id, ordinal, source, scrapes, failures, longest_gap_ms, blind_json) VALUES (999999, 0, 's', 0, 0, 0, '[]')")
        .execute(store.pool())
        .await;
    assert!(orphan.is_err(), "foreign keys are enforced again");
    let duplicate_finish = sqlx::query(
        "INSERT INTO runs (experiment_id, plan_index, round_index, condition_index, condition_label, \
         fault_kind, fault_rate, breaker_mode, condition_json, status, warmup_ms, duration_ms) \
         SELECT experiment_id, plan_index, round_index, condition_index, condition_label, fault_kind, \
         fault_rate, breaker_mode, condition_json, status, warmup_ms, duration_ms FROM runs \
         WHERE status = 'finished'",
    )
    .execute(store.pool())
    .await;
    assert!(duplicate_finish.is_err(), "runs_finished_once is back");
    // A new failed run is stored with its own status, and the experiment can still be deleted whole.
    let spec = test_support::spec(SPEC);
    let run = start_run_of(&store, &spec, experiment, 5, 2).await;
    let mut failed = record(Status::Failed, Duration::ZERO);
    failed.abort_reason = Some("the run panicked".into());
    store.finish_run(run, &failed).await.unwrap();
    assert_eq!(
        store.runs(experiment).await.unwrap()[5].status,
        Status::Failed
    );
    sqlx::query("DELETE FROM experiments WHERE id = $1")
        .bind(experiment.0)
        .execute(store.pool())
        .await
        .unwrap();
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM transitions")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(
        left, 0,
        "deleting the experiment still cascades through runs"
    );
    store.close().await;
}

#[tokio::test]
async fn a_sqlite_store_at_version_9_migrates_keeping_every_child_row() {
    let file = TempStore::new("store");
    let location = file.location();
    let experiment = old_store(&location).await;
    let (url, _) = database_url(&location).unwrap();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    let before = child_counts(&pool).await;
    pool.close().await;
    // Five runs with 2 transitions each: nothing below would notice a table that was empty to begin with.
    assert!(before.contains(&"transitions: 10".to_owned()), "{before:?}");
    migrates_keeping_every_row(&location, before, experiment).await;
}

/// `url` with its database name replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let authority = url.find("://").expect("a URL") + 3;
    let path = authority + url[authority..].find('/').expect("a database in the URL");
    let end = url[path..].find('?').map_or(url.len(), |at| path + at);
    format!("{}/{database}{}", &url[..path], &url[end..])
}

#[tokio::test]
async fn a_postgres_store_at_version_9_migrates_keeping_every_child_row() {
    let Ok(url) = std::env::var("TOLERANT_TEST_PG_URL") else {
        return;
    };
    sqlx::any::install_default_drivers();
    let admin = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .expect("TOLERANT_TEST_PG_URL must be reachable");
    let database = format!("tolerant_migration_{}", std::process::id());
    let drop = format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)");
    sqlx::query(&drop).execute(&admin).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {database}"))
        .execute(&admin)
        .await
        .unwrap();
    let location = with_database(&url, &database);
    let experiment = old_store(&location).await;
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&location)
        .await
        .unwrap();
    let before = child_counts(&pool).await;
    pool.close().await;
    assert!(before.contains(&"transitions: 10".to_owned()), "{before:?}");
    migrates_keeping_every_row(&location, before, experiment).await;
    sqlx::query(&drop).execute(&admin).await.unwrap();
}

#[test]
fn a_database_name_is_replaced_in_a_url() {
    assert_eq!(
        with_database("postgres://u@localhost/tolerant_test?host=/s", "other"),
        "postgres://u@localhost/other?host=/s"
    );
    assert_eq!(
        with_database("postgres://u@h:5/db", "x"),
        "postgres://u@h:5/x"
    );
}
