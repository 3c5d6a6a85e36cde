//! Foreign breaker sources during a run: a Resilience4j-style exposition served on loopback is scraped at 20 Hz and
//! its state changes become stored-shape transitions with their source; pushed events are taken too.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use controller::runner::SourceCollector;
use controller::sources::{PushInbox, StateMapping};
use controller::spec::{ScrapeSpec, SourceSpec};
use parking_lot::Mutex;

fn exposition(state: &str) -> String {
    ["closed", "open", "half_open"]
        .iter()
        .map(|s| {
            format!(
                "resilience4j_circuitbreaker_state{{name=\"inventory\",state=\"{s}\",}} {}\n",
                u8::from(*s == state)
            )
        })
        .collect()
}

/// Serves `/actuator/prometheus` with whatever state `current` holds.
async fn exporter(current: Arc<Mutex<&'static str>>) -> String {
    let app = Router::new().route(
        "/actuator/prometheus",
        get(move || {
            let current = Arc::clone(&current);
            async move { exposition(*current.lock()) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/actuator/prometheus")
}

/// Waits (bounded) until `condition` holds, checking every 20 ms.
async fn eventually(mut condition: impl FnMut() -> bool) {
    for _ in 0..250 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn scraped_and_pushed_transitions_are_collected_with_their_source() {
    let current = Arc::new(Mutex::new("closed"));
    let url = exporter(Arc::clone(&current)).await;
    let spec = ScrapeSpec {
        url: url.clone(),
        interval: Duration::from_millis(50),
        service: "orders".into(),
        mapping: StateMapping::resilience4j(),
    };
    let inbox = PushInbox::default();
    let (live, mut seen_live) = tokio::sync::mpsc::unbounded_channel();
    let collector = SourceCollector::start(
        &[SourceSpec::Prometheus(spec.clone())],
        Some(&inbox),
        Some(live),
    )
    .await
    .expect("the baseline scrape works");

    *current.lock() = "open";
    let first = tokio::time::timeout(Duration::from_secs(5), seen_live.recv())
        .await
        .expect("the open is seen within 5 s")
        .expect("live event");
    assert_eq!(
        (first.from, first.to),
        (breaker::State::Closed, breaker::State::Open)
    );
    *current.lock() = "half_open";
    let mut seen = vec![first];
    eventually(|| {
        while let Ok(event) = seen_live.try_recv() {
            seen.push(event);
        }
        seen.len() >= 2
    })
    .await;
    *current.lock() = "closed";
    eventually(|| {
        while let Ok(event) = seen_live.try_recv() {
            seen.push(event);
        }
        seen.len() >= 3
    })
    .await;
    inbox
        .ingest(
            r#"{"service":"shop","breaker":"upstream","to":"open","source":"pybreaker"}"#,
            controller::clock::now_ms() as u64,
        )
        .expect("valid push");

    let (records, panics) = collector.finish().await;
    assert!(panics.is_empty(), "{panics:?}");
    let scraped: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r.breaker == "inventory")
        .map(|r| (r.from.as_str(), r.to.as_str()))
        .collect();
    assert_eq!(
        scraped,
        vec![
            ("closed", "open"),
            ("open", "half_open"),
            ("half_open", "closed")
        ]
    );
    let source = format!("prometheus:{url}");
    assert!(
        records
            .iter()
            .filter(|r| r.breaker == "inventory")
            .all(|r| r.service == "orders"
                && r.reason == "observed"
                && r.source.as_deref() == Some(source.as_str()))
    );
    let pushed = records
        .iter()
        .find(|r| r.breaker == "upstream")
        .expect("the pushed event is part of the run");
    assert_eq!(pushed.source.as_deref(), Some("push:pybreaker"));
    assert!(
        records.windows(2).all(|w| w[0].at_ms <= w[1].at_ms),
        "time order"
    );
}

#[tokio::test]
async fn a_breaker_already_open_at_the_baseline_scrape_is_on_the_timeline() {
    let current = Arc::new(Mutex::new("open"));
    let url = exporter(Arc::clone(&current)).await;
    let spec = ScrapeSpec {
        url,
        interval: Duration::from_millis(50),
        service: "orders".into(),
        mapping: StateMapping::resilience4j(),
    };
    let before = controller::clock::now_ms();
    let collector = SourceCollector::start(&[SourceSpec::Prometheus(spec)], None, None)
        .await
        .expect("the baseline scrape works");
    let (records, panics) = collector.finish().await;
    assert!(panics.is_empty(), "{panics:?}");
    let found: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| (r.from.as_str(), r.to.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(found, vec![("closed", "open", "observed")]);
    assert!(records[0].at_ms >= before);
}

#[tokio::test]
async fn a_source_that_does_not_answer_names_itself() {
    let spec = ScrapeSpec {
        url: "http://127.0.0.1:9/metrics".into(),
        interval: Duration::from_millis(250),
        service: "x".into(),
        mapping: StateMapping::resilience4j(),
    };
    let error = SourceCollector::start(&[SourceSpec::Prometheus(spec)], None, None)
        .await
        .err()
        .expect("no baseline, no run");
    assert!(error.to_string().starts_with("sources[0].url"), "{error}");
}
