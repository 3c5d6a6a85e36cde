//! Payment hanging: with breakers disabled the worker pools fill and unrelated pages fail; with breakers
//! enforcing, the breaker trips on timeouts and the pools drain.

mod common;

use std::time::Duration;

use boutique::{PoolConfig, RunningStack, ServiceName, StackConfig};
use common::{admin, checkout_form, put_payment_fault, shopper, start};

const CAPACITY: usize = 4;
const QUEUE: usize = 2;

fn hang_config(breaker_toml: &str) -> StackConfig {
    let mut config = common::raw_config();
    config.call_timeout = Duration::from_millis(1500);
    config.pool = PoolConfig {
        capacity: CAPACITY,
        queue: QUEUE,
    };
    config.breaker = breaker::BreakerConfig::from_toml_str(breaker_toml).unwrap();
    config.agent = agent::RawAgentConfig {
        max_hold: Duration::from_secs(3),
        ..config.agent.into_raw()
    }
    .build()
    .expect("a valid agent config");
    config.build().expect("a valid stack config")
}

async fn hang_payment(stack: &RunningStack) {
    put_payment_fault(
        stack,
        "payment-hangs",
        serde_json::json!({
            "kind": "hang", "rate": 1.0,
            "match": {"method": "POST", "path_prefix": "/charge"}, "lease": "60s"
        }),
    )
    .await;
}

async fn pool(stack: &RunningStack, service: ServiceName) -> serde_json::Value {
    admin()
        .get(format!("{}/_pool", stack.url(service)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Sends `count` checkouts at once, each from its own shopper; returns the statuses.
fn checkout_burst(stack: &RunningStack, count: usize) -> tokio::task::JoinSet<(u16, bool)> {
    let frontend = stack.url(ServiceName::Frontend);
    let mut burst = tokio::task::JoinSet::new();
    for _ in 0..count {
        let frontend = frontend.clone();
        burst.spawn(async move {
            let response = shopper()
                .post(format!("{frontend}/cart/checkout"))
                .form(&checkout_form())
                .send()
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response.headers().contains_key("x-tolerant-rejected"),
            )
        });
    }
    burst
}

#[tokio::test]
async fn with_breakers_disabled_a_hang_exhausts_the_pool_and_unrelated_pages_fail() {
    let stack = start(hang_config("mode = \"disabled\"\n")).await;
    hang_payment(&stack).await;
    let mut burst = checkout_burst(&stack, 12);

    let mut saw_full = false;
    for _ in 0..200 {
        let frontend = pool(&stack, ServiceName::Frontend).await;
        if frontend["in_flight"] == CAPACITY && frontend["queued"] == QUEUE {
            saw_full = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        saw_full,
        "the frontend's pool fills with checkouts waiting on the hang"
    );
    // The pool stamped when it filled, in milliseconds: the last edge is "full", the first fill since reset.
    let frontend = pool(&stack, ServiceName::Frontend).await;
    assert_eq!(frontend["full"], true, "{frontend}");
    let edges = frontend["edges"].as_array().expect("edges").clone();
    assert_eq!(edges.last().unwrap()["full"], true, "{frontend}");
    assert!(
        frontend["first_full_ms"].as_u64().unwrap()
            <= edges.last().unwrap()["at_ms"].as_u64().unwrap()
    );
    assert!(frontend["fills"].as_u64().unwrap() >= 1, "{frontend}");
    assert_eq!(
        pool(&stack, ServiceName::Checkout).await["in_flight"],
        CAPACITY,
        "checkout's pool is full of calls waiting on Payment"
    );
    let home = shopper()
        .get(format!("{}/", stack.url(ServiceName::Frontend)))
        .send()
        .await
        .unwrap();
    assert_eq!(
        home.status(),
        503,
        "the home page fails although it never touches Payment"
    );
    assert!(
        pool(&stack, ServiceName::Frontend).await["rejected"]
            .as_u64()
            .unwrap()
            > 0
    );

    let mut statuses = Vec::new();
    while let Some(result) = burst.join_next().await {
        statuses.push(result.unwrap());
    }
    assert!(
        statuses
            .iter()
            .all(|(status, rejected)| *status >= 500 && !rejected),
        "{statuses:?}"
    );
    stack.shutdown().await;
}

#[tokio::test]
async fn with_breakers_enforcing_the_pool_drains_after_the_trip() {
    let stack = start(hang_config(
        "mode = \"enforce\"\n[trip]\nconsecutive_failures = 2\n[open]\nbase = \"60s\"\n",
    ))
    .await;
    hang_payment(&stack).await;

    // First wave: timeouts trip the breaker(s).
    let mut wave = checkout_burst(&stack, CAPACITY);
    while let Some(result) = wave.join_next().await {
        let (status, _) = result.unwrap();
        assert!(status >= 500);
    }
    let opened: Vec<_> = common::breaker_states(&stack, ServiceName::Checkout)
        .await
        .into_iter()
        .chain(common::breaker_states(&stack, ServiceName::Frontend).await)
        .filter(|(_, state)| state == "open")
        .collect();
    assert!(!opened.is_empty(), "a timeout-driven breaker opened");

    // Second wave: checkouts fail fast, so the home page is served and the pool empties.
    let mut wave = checkout_burst(&stack, 12);
    let mut rejected = 0;
    while let Some(result) = wave.join_next().await {
        let (status, was_rejected) = result.unwrap();
        assert_eq!(status, 503);
        if was_rejected {
            rejected += 1;
        }
    }
    assert!(rejected > 0, "rejections carry x-tolerant-rejected");
    let home = shopper()
        .get(format!("{}/", stack.url(ServiceName::Frontend)))
        .send()
        .await
        .unwrap();
    assert_eq!(home.status(), 200);
    let mut drained = false;
    for _ in 0..200 {
        let frontend = pool(&stack, ServiceName::Frontend).await;
        let checkout = pool(&stack, ServiceName::Checkout).await;
        if frontend["in_flight"] == 0 && checkout["in_flight"] == 0 {
            drained = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(drained, "pools drain once the breaker rejects");
    // The first wave filled the frontend's workers; the last edge says they were released.
    let frontend = pool(&stack, ServiceName::Frontend).await;
    assert_eq!(frontend["full"], false, "{frontend}");
    assert!(frontend["fills"].as_u64().unwrap() >= 1, "{frontend}");
    let edges = frontend["edges"].as_array().expect("edges");
    assert_eq!(edges.last().unwrap()["full"], false, "{frontend}");
    assert!(frontend["full_ms"].as_u64().unwrap() > 0, "{frontend}");
    stack.shutdown().await;
}
