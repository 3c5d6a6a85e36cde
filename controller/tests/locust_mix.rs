//! Replays the Online Boutique task mix (the controller's definition: its exact requests and form fields,
//! redirects followed) with the controller's load driver against the embedded stack: every request ends ok,
//! every endpoint and task of the mix is exercised.

use std::time::Duration;

use boutique::{RunningStack, ServiceName, StackConfig};
use controller::load::{LoadSettings, Workload, endpoint, run};

const USERS: u32 = 12;

#[tokio::test]
async fn the_stock_task_mix_runs_unchanged_with_no_unexpected_status() {
    let stack = tokio::time::timeout(
        Duration::from_secs(10),
        RunningStack::start(StackConfig::default()),
    )
    .await
    .expect("the stack starts within 10 s")
    .expect("the stack starts");
    let frontend = stack.addrs()[&ServiceName::Frontend];
    let report = run(
        LoadSettings {
            target: frontend,
            workload: Workload::OnlineBoutique,
            users: USERS,
            think_time: (Duration::from_millis(5), Duration::from_millis(20)),
            rate: None,
            timeout: Duration::from_secs(10),
            warmup: Duration::ZERO,
            duration: Duration::from_secs(4),
            seed: 7,
        }
        .try_into()
        .expect("valid load config"),
        None,
    )
    .await;
    assert_eq!(report.endpoints.len(), endpoint::NAMES.len());
    for (report, name) in report.endpoints.iter().zip(endpoint::NAMES) {
        assert_eq!(report.name, name);
        let outcomes = &report.stats.outcomes;
        assert!(outcomes.ok > 0, "the mix exercised {name}: {outcomes:?}");
        assert_eq!(outcomes.ok, outcomes.total(), "{name}: {outcomes:?}");
    }
    for (task, count) in &report.tasks {
        assert!(*count > 0, "task {task} ran: {:?}", report.tasks);
    }
    stack.shutdown().await;
}
