//! A fault on a schedule inside a run, against the embedded stack: Payment fails every charge only from second 2
//! to second 4 of a 6 s run (time_scale 10). Checkouts fail only in those seconds, the store holds the one period
//! actually applied, and the lease is renewed only while the fault is on.

use controller::load::endpoint;
use controller::runner::{Runner, start_embedded_stack};
use controller::spec::ExperimentSpec;
use controller::store::{Status, Store};

const SCHEDULED: &str = r#"
name = "scheduled-blip"
rounds = 1
duration = "60s"
time_scale = 10.0
order = "fixed"
seed = 3

[load]
users = 20
rate = 120.0
timeout = "5s"

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]
lease = "3s"
schedule = { start = "20s", length = "20s" }

[breaker]
modes = ["disabled"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkouts_fail_only_while_the_scheduled_fault_is_on() {
    let spec = ExperimentSpec::parse(SCHEDULED).unwrap();
    let db = std::env::temp_dir().join(format!("tolerant-schedule-{}.db", std::process::id()));
    let store = Store::open(db.to_str().unwrap()).await.unwrap();
    let (stack, testbed) = start_embedded_stack(&spec).await.unwrap();
    let runner = Runner::new(store.clone(), testbed);
    let experiment = runner.run_experiment(&spec, |_| {}).await.unwrap();
    stack.shutdown().await;

    let runs = store.runs(experiment).await.unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.status, Status::Finished);

    // Failed checkouts per second of the run: none before second 2 or after second 4 (the on-period is
    // [2 s, 4 s) from the load's start; a second that merely touches it may hold a few).
    let checkout = endpoint::NAMES[endpoint::CHECKOUT];
    let mut failed = [0u64; 6];
    let mut ok = [0u64; 6];
    for row in store.endpoint_seconds(run.id).await.unwrap() {
        if row.endpoint == checkout {
            let t = usize::try_from(row.second).unwrap();
            failed[t] += row.outcomes.failed;
            ok[t] += row.outcomes.ok;
        }
    }
    assert_eq!(
        failed[0] + failed[1] + failed[5],
        0,
        "failed {failed:?}, ok {ok:?}"
    );
    assert!(failed[2] + failed[3] > 0, "failed {failed:?}, ok {ok:?}");
    assert_eq!(
        ok[3], 0,
        "second 3 lies wholly inside the on-period: {ok:?}"
    );
    assert!(ok[0] + ok[1] > 0 && ok[5] > 0, "ok {ok:?}");

    // The store holds the one period applied, from about 2 s to about 4 s after the run's start.
    let periods = store.fault_periods(run.id).await.unwrap();
    assert_eq!(periods.len(), 1, "{periods:?}");
    let period = periods[0];
    let to = period.to_s.expect("removed at the period's end");
    assert!((2.0..3.0).contains(&period.from_s), "{period:?}");
    assert!((4.0..6.0).contains(&to), "{period:?}");

    // The lease (3 s, renewed every second) is renewed only while the fault is on.
    let events = store.fault_events(run.id).await.unwrap();
    let at = |name: &str| {
        events
            .iter()
            .filter(|e| e.event == name)
            .map(|e| e.at_ms)
            .collect::<Vec<_>>()
    };
    let (applied, removed, renewed) = (at("applied"), at("removed"), at("renewed"));
    assert_eq!((applied.len(), removed.len()), (1, 1), "{events:?}");
    assert!(!renewed.is_empty(), "{events:?}");
    assert!(
        renewed.iter().all(|t| *t > applied[0] && *t < removed[0]),
        "{events:?}"
    );

    store.close().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}
