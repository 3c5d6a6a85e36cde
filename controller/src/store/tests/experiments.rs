//! Experiments: their spec, status and predictions, and the queue of scheduled starts (also moved from the old
//! table outside the migrations).

use super::*;
use crate::test_support;

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
async fn predictions_are_stored_with_the_experiment() {
    let (stores, _file) = stores().await;
    let spec = test_support::spec(SPEC);
    // As JSON holds them (a mean's last bit may not survive the text).
    let predicted = serde_json::to_string(&crate::predict::predict(&spec)).unwrap();
    let expected: Vec<crate::predict::Prediction> = serde_json::from_str(&predicted).unwrap();
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
    let file = TempStore::new("store");
    let location = file.location();
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
