//! A fault on a schedule inside a run, against the embedded stack: Payment fails every charge only from second 3
//! to second 5 of an 8 s run (time_scale 10). Checkouts fail only in those seconds, the store holds the one period
//! actually applied, and the lease is renewed only while the fault is on.

use controller::load::endpoint;
use controller::runner::Runner;
use controller::store::Status;
use controller::test_support::{self, TempStore};
use controller::testbed::start_embedded_stack;

const SCHEDULED: &str = r#"
name = "scheduled-blip"
rounds = 1
duration = "80s"
time_scale = 10.0
order = "fixed"
seed = 3

[load]
users = 30
rate = 150.0
timeout = "5s"

[fault]
target = "payment"
kind = "error"
status = 500
rates = [1.0]
lease = "3s"
schedule = { start = "30s", length = "20s" }

[breaker]
modes = ["disabled"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkouts_fail_only_while_the_scheduled_fault_is_on() {
    let spec = test_support::spec(SCHEDULED);
    let db = TempStore::new("schedule");
    let store = db.open().await;
    let (stack, testbed) = start_embedded_stack(&spec).await.unwrap();
    let runner = Runner::new(store.clone(), testbed);
    let experiment = runner.run_experiment(&spec, |_| {}).await.unwrap();
    stack.shutdown().await;

    let runs = store.runs(experiment).await.unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run.status, Status::Finished);

    // Failed checkouts per second of the run: none in the first two seconds or the last two (the on-period is
    // [3 s, 5 s) from the load's start; seconds 2 and 5 merely touch it), some inside it.
    let checkout = endpoint::NAMES[endpoint::CHECKOUT];
    let mut failed = [0u64; 8];
    let mut ok = [0u64; 8];
    for row in store.endpoint_seconds(run.id).await.unwrap() {
        if row.endpoint == checkout {
            let t = usize::try_from(row.second).unwrap();
            failed[t] += row.outcomes.failed;
            ok[t] += row.outcomes.ok;
        }
    }
    let report = format!("failed {failed:?}, ok {ok:?}");
    assert_eq!(failed[0] + failed[1] + failed[6] + failed[7], 0, "{report}");
    assert!(failed[3] + failed[4] > 0, "{report}");
    assert_eq!(
        ok[4], 0,
        "second 4 lies wholly inside the on-period: {report}"
    );
    // After the period checkouts succeed again (before it they do too, once the cold stack answers in time).
    assert!(ok[6] + ok[7] > 0, "{report}");

    // The store holds the one period applied, from about 3 s to about 5 s after the run's start.
    let periods = store.fault_periods(run.id).await.unwrap();
    assert_eq!(periods.len(), 1, "{periods:?}");
    let period = periods[0];
    let to = period.to_s.expect("removed at the period's end");
    assert!((3.0..5.0).contains(&period.from_s), "{period:?}");
    assert!((5.0..8.0).contains(&to), "{period:?}");

    // The lease (3 s, renewed every second) is renewed only while the fault is on.
    let events = store.run_events(run.id).await.unwrap();
    let at = |name: &str| {
        events
            .iter()
            .filter(|e| e.event.kind().as_str() == name)
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
}
