//! The schedule queue of the embedded operations lives in the experiment database: a scheduled start survives a
//! restart of the controller, and aborting a scheduled experiment removes it from the queue.

use controller::report::Format;
use controller::store::{ExperimentId, Store};
use controller::test_support::TempStore;
use controller::testbed::Testbed;
use web::hub::{Hub, HubConfig};
use web::operations::Operations;
use web::operations::embedded::EmbeddedOperations;

const SPEC: &str = r#"name = "queued"
rounds = 1
duration = "2s"
warmup = "1s"

[load]
users = 1
think_time = ["100ms", "200ms"]

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]

[breaker]
modes = ["enforce"]
"#;

/// A testbed nobody listens on: scheduling never talks to it.
fn unreachable_testbed() -> Testbed {
    Testbed {
        frontend: "127.0.0.1:9".parse().expect("addr"),
        services: Vec::new(),
        agent: "http://127.0.0.1:9".into(),
        token: "token".into(),
    }
}

async fn operations(database: &str) -> (EmbeddedOperations, Store) {
    let store = Store::open(database).await.expect("store");
    let operations = EmbeddedOperations::new(
        store.clone(),
        unreachable_testbed(),
        Hub::new(HubConfig::default()),
    )
    .await
    .expect("operations");
    (operations, store)
}

#[tokio::test]
async fn a_scheduled_start_survives_a_restart_and_abort_unqueues_it() {
    let dir = TempStore::new("web-schedule-test");
    let database = dir.location();
    let due = controller::clock::now_ms() + 3_600_000;

    let (first, store) = operations(&database).await;
    let id = first.create(SPEC.to_owned()).await.expect("valid spec");
    let bad = first.create("name = 1".to_owned()).await;
    assert!(bad.is_err(), "an invalid spec is refused");
    let results = first
        .results(id)
        .await
        .expect("results of an experiment without runs");
    assert!(results.conditions.is_empty());
    // A download renders its one format, the same text `tolerant report` writes.
    for format in [Format::Csv, Format::Json, Format::Md] {
        let download = first.report(id, format).await.expect("report");
        let stored = controller::report::report(&store, ExperimentId(id), format)
            .await
            .expect("stored report");
        assert_eq!(download, stored.text, "{format:?}");
    }
    let csv = first.report(id, Format::Csv).await.expect("csv");
    assert!(csv.lines().count() >= 1, "a CSV header at least");
    first.start(id, Some(due)).await.expect("scheduled");
    let listed = first.experiments().await.expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].status.as_str(), "scheduled");
    assert_eq!(listed[0].scheduled_at_ms, Some(due));
    first.stop_active().await;
    drop(first);
    store.close().await;

    // A new controller process over the same database.
    let (second, store) = operations(&database).await;
    assert_eq!(
        second.scheduled().get(&id).copied(),
        Some(due),
        "the queue came back"
    );
    let listed = second.experiments().await.expect("list");
    assert_eq!(listed[0].status.as_str(), "scheduled");

    second.abort(id).await.expect("unqueue");
    assert!(second.scheduled().is_empty());
    let listed = second.experiments().await.expect("list");
    assert_eq!(listed[0].status.as_str(), "pending");
    let not_running = second.abort(id).await;
    assert!(not_running.is_err(), "nothing left to abort");
    second.stop_active().await;
    drop(second);
    store.close().await;

    let (third, store) = operations(&database).await;
    assert!(third.scheduled().is_empty(), "the abort was stored too");
    third.stop_active().await;
    store.close().await;
}
