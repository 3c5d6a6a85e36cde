//! Foreign breaker sources during a run: a Resilience4j-style exposition served on loopback is scraped by the
//! observer at 20 Hz and its state changes are published live and recorded by the run in the stored shape with
//! their source; pushed events are recorded too, and a flood of them goes to the store while the run goes.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use controller::observe::{Observation, Observations, Observer, Received, Watch};
use controller::runner::RunRecorder;
use controller::sources::{PushInbox, RateLimit, StateMapping};
use controller::spec::ScrapeSpec;
use controller::testbed::AdminClient;
use parking_lot::Mutex;

/// An observer, a live consumer of it, a run's recorder (taking `inbox`'s pushes) and a watch.
fn observing(inbox: Option<&PushInbox>) -> (Observations, RunRecorder, Watch) {
    let observer = Observer::new(AdminClient::without_token());
    let live = observer.subscribe();
    let recorder = RunRecorder::start(observer.subscribe(), 0, Default::default(), inbox);
    (live, recorder, observer.watch())
}

/// The next foreign transition the live consumer sees, within 5 s.
async fn next_foreign(live: &mut Observations) -> breaker::TransitionEvent {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match live.next().await {
                Some(Received::Observation(Observation::Foreign(event))) => return event,
                Some(_) => continue,
                None => panic!("the observer is gone"),
            }
        }
    })
    .await
    .expect("a foreign transition within 5 s")
}

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
    let (mut live, recorder, watch) = observing(Some(&inbox));
    watch
        .scrape(0, &spec)
        .await
        .expect("the baseline scrape works");

    *current.lock() = "open";
    let first = next_foreign(&mut live).await;
    assert_eq!(
        (first.from, first.to),
        (breaker::State::Closed, breaker::State::Open)
    );
    *current.lock() = "half_open";
    let second = next_foreign(&mut live).await;
    assert_eq!(second.to, breaker::State::HalfOpen);
    *current.lock() = "closed";
    let third = next_foreign(&mut live).await;
    assert_eq!(third.to, breaker::State::Closed);
    inbox
        .ingest(
            r#"{"service":"shop","breaker":"upstream","to":"open","source":"pybreaker"}"#,
            controller::clock::now_ms() as u64,
        )
        .expect("valid push");

    let recording = recorder.finish().await;
    assert!(recording.panics.is_empty(), "{:?}", recording.panics);
    let records = recording.transitions;
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
                && r.reason == breaker::Reason::Observed
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

/// A flood of pushed transitions — 200 breakers changing 30 times within one second — is written to the store
/// while the run goes, not held until its end; each breaker's 20 a second are stored and the other 10 counted in
/// one `transitions:not_stored` event of its own.
#[tokio::test]
async fn a_flood_of_foreign_transitions_is_stored_while_the_run_goes_under_a_ceiling() {
    let inbox = PushInbox::new(RateLimit::new(1e9, 1e9));
    let (_live, mut recorder, _watch) = observing(Some(&inbox));
    let file = controller::test_support::TempStore::new("flood");
    let store = file.open().await;
    let run = controller::test_support::started_run(&store).await;
    recorder.spool_to(store.clone(), run);
    // Stamped 10 s ago: settled at once, so the spool's first write takes them.
    let second = (controller::clock::now_ms() as u64 - 10_000) / 1_000 * 1_000;
    for change in 0..30u64 {
        for half in 0..2 {
            let events: Vec<String> = (0..100)
                .map(|b| {
                    let to = if change % 2 == 0 { "open" } else { "closed" };
                    let at = second + change * 10 + b;
                    format!(
                        r#"{{"breaker":"b{}","to":"{to}","at_ms":{at}}}"#,
                        half * 100 + b
                    )
                })
                .collect();
            let body = format!("[{}]", events.join(","));
            let ingested = (inbox.ingest(&body, controller::clock::now_ms() as u64)).unwrap();
            assert_eq!(ingested.events.len(), 100);
            tokio::task::yield_now().await;
        }
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut stored = 0;
    while stored < 200 * 20 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stored = store.transitions(run).await.unwrap().len();
    }
    assert_eq!(stored, 200 * 20, "written while the run goes");
    let recording = recorder.finish().await;
    assert!(recording.panics.is_empty(), "{:?}", recording.panics);
    assert_eq!(recording.missed, 0);
    assert!(
        recording.transitions.is_empty(),
        "nothing was left for the end"
    );
    let counted: Vec<u64> = (recording.agent_events.iter())
        .filter_map(|record| match &record.event {
            controller::store::RunEvent::TransitionsNotStored { count, .. } => Some(*count),
            _ => None,
        })
        .collect();
    assert_eq!(counted, vec![10; 200]);
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
    let (_live, recorder, watch) = observing(None);
    watch
        .scrape(0, &spec)
        .await
        .expect("the baseline scrape works");
    let recording = recorder.finish().await;
    assert!(recording.panics.is_empty(), "{:?}", recording.panics);
    let records = recording.transitions;
    let found: Vec<(&str, &str, &str)> = records
        .iter()
        .map(|r| (r.from.as_str(), r.to.as_str(), r.reason.as_str()))
        .collect();
    assert_eq!(found, vec![("closed", "open", "observed")]);
    assert!(records[0].at_ms >= before);
}

/// Serves `/metrics` with an exposition of `inventory` open, except that request `n` (from 0) is answered 503
/// whenever `unavailable(n)`.
async fn flaky_exporter(unavailable: fn(usize) -> bool) -> String {
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let n = served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                if unavailable(n) {
                    Err(http::StatusCode::SERVICE_UNAVAILABLE)
                } else {
                    Ok(exposition("open"))
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/metrics")
}

fn spec_of(url: &str) -> ScrapeSpec {
    ScrapeSpec {
        url: url.to_owned(),
        interval: Duration::from_millis(50),
        service: "orders".into(),
        mapping: StateMapping::resilience4j(),
    }
}

/// A source answering 503 when the run starts does not stop the run: it is blind from the start (said on the
/// live stream and in its tally), and the first scrape that answers is its baseline.
#[tokio::test]
async fn a_source_answering_503_at_the_start_is_blind_until_its_first_answer() {
    let url = flaky_exporter(|n| n < 3).await;
    let (mut live, recorder, watch) = observing(None);
    let started = controller::clock::now_ms();
    let tally = watch
        .scrape(0, &spec_of(&url))
        .await
        .expect("a source without its baseline is blind, not an error");
    let failed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Some(Received::Observation(Observation::ScrapeFailed { error, .. })) =
                live.next().await
            {
                return error;
            }
        }
    })
    .await
    .expect("the failed baseline is published");
    assert!(
        failed.starts_with("no baseline scrape") && failed.contains("503"),
        "{failed}"
    );
    let opened = next_foreign(&mut live).await;
    assert_eq!(
        (opened.from, opened.to),
        (breaker::State::Closed, breaker::State::Open),
        "the first answer is the baseline: found open there"
    );
    let health = tally.lock().health(controller::clock::now_ms());
    assert_eq!(health.failures, 3, "{health:?}");
    assert_eq!(health.blind.len(), 1, "{health:?}");
    assert!(health.blind[0].from_ms >= started && health.blind[0].from_ms <= started + 50);
    assert!(
        health.blind_ms() >= 100,
        "three scrapes 50 ms apart: {health:?}"
    );
    assert!(health.longest_gap_ms >= health.blind_ms());
    drop(watch);
    let recording = recorder.finish().await;
    assert_eq!(recording.transitions.len(), 1);
}

/// A source that answers its baseline and then stops answering is blind from its last answer to the end, however
/// quiet its breakers look.
#[tokio::test]
async fn a_source_that_stops_answering_after_its_baseline_is_blind_to_the_end() {
    let url = flaky_exporter(|n| n > 0).await;
    let (_live, _recorder, watch) = observing(None);
    let tally = watch.scrape(0, &spec_of(&url)).await.expect("baseline");
    tokio::time::sleep(Duration::from_millis(400)).await;
    let end = controller::clock::now_ms();
    let health = tally.lock().health(end);
    assert!(health.scrapes >= 4, "{health:?}");
    assert_eq!(health.failures, health.scrapes - 1, "{health:?}");
    assert_eq!(health.blind.len(), 1, "{health:?}");
    assert_eq!(health.blind[0].to_ms, end);
    assert!(health.blind_ms() >= 300, "{health:?}");
    assert!(tally.lock().is_blind());
}
