//! Replays the stock Online Boutique load generator's task mix (its exact requests and form fields,
//! redirects followed) against the embedded stack: every request ends in a 200.

mod common;

use std::collections::BTreeMap;

use boutique::ServiceName;
use boutique::loadgen::{VirtualUser, http_client};
use boutique::services::payment::YearMonth;
use rand::SeedableRng;
use rand::rngs::SmallRng;

const USERS: u64 = 12;
const TASKS_PER_USER: usize = 25;

#[tokio::test]
async fn the_stock_task_mix_runs_unchanged_with_no_unexpected_status() {
    let stack = common::start(common::config()).await;
    let frontend = stack.url(ServiceName::Frontend);
    let client = http_client();
    let year = YearMonth::now().year;

    let mut users = tokio::task::JoinSet::new();
    for seed in 0..USERS {
        let mut user = VirtualUser::new(
            frontend.clone(),
            client.clone(),
            SmallRng::seed_from_u64(seed),
            year,
        );
        users.spawn(async move {
            let mut records = user.on_start().await;
            let mut tasks = Vec::new();
            for _ in 0..TASKS_PER_USER {
                let task = user.pick_task();
                tasks.push(task);
                records.extend(user.run(task).await);
            }
            (records, tasks)
        });
    }
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    let mut tasks_seen = BTreeMap::new();
    while let Some(result) = users.join_next().await {
        let (records, tasks) = result.unwrap();
        for record in records {
            assert_eq!(
                record.status, 200,
                "{} answered {}",
                record.name, record.status
            );
            *by_name.entry(record.name).or_default() += 1;
        }
        for task in tasks {
            *tasks_seen.entry(task).or_insert(0usize) += 1;
        }
    }
    assert_eq!(
        tasks_seen.values().sum::<usize>(),
        (USERS as usize) * TASKS_PER_USER
    );
    for name in [
        "GET /",
        "GET /product/{id}",
        "POST /cart",
        "GET /cart",
        "POST /setCurrency",
        "POST /cart/checkout",
    ] {
        assert!(
            by_name.get(name).copied().unwrap_or(0) > 0,
            "the mix exercised {name}: {by_name:?}"
        );
    }
    stack.shutdown().await;
}
