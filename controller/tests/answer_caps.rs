//! Every answer Tolerant reads from outside has a size cap checked while reading: an endless body ends in a
//! bounded "too large" error naming the cap (not in the process growing until it dies), and a 100 MB exposition
//! from a `[[sources]]` entry mid-run is stored in the run's event log as a failed scrape with that reason.
//! A source showing more breakers than one source may have followed is refused at its baseline, said.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::get;
use bytes::Bytes;
use controller::observe::Observer;
use controller::runner::RunRecorder;
use controller::sources::StateMapping;
use controller::spec::ScrapeSpec;
use controller::store::RunEvent;
use controller::testbed::{AdminClient, AdminError, Credential, MAX_ANSWER_BYTES};
use futures::StreamExt;

/// A body of `chunk` repeated without end (chunked, no length).
fn endless(chunk: Bytes) -> Body {
    Body::from_stream(futures::stream::repeat(chunk).map(Ok::<_, std::io::Error>))
}

/// `megabytes` MB of exposition comments, sent 1 MB at a time with their `Content-Length`.
fn huge(megabytes: usize) -> Response {
    let chunk = Bytes::from(vec![b'#'; 1 << 20]);
    let stream =
        futures::stream::iter((0..megabytes).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
    Response::builder()
        .header(http::header::CONTENT_LENGTH, (megabytes << 20).to_string())
        .body(Body::from_stream(stream))
        .unwrap()
}

async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
}

#[tokio::test]
async fn an_endless_body_is_a_bounded_too_large_error() {
    let base = serve(Router::new().route(
        "/metrics",
        get(|| async { endless(Bytes::from(vec![b'x'; 64 * 1024])) }),
    ))
    .await;
    let answer = AdminClient::without_token()
        .call(
            http::Method::GET,
            &format!("{base}/metrics"),
            Credential::Anonymous,
            None,
            Bytes::new(),
        )
        .await;
    match answer {
        Err(AdminError::TooLarge { cap, .. }) => assert_eq!(cap, MAX_ANSWER_BYTES),
        other => panic!("not a too-large error: {other:?}"),
    }
    let message = AdminClient::without_token()
        .get_text(&format!("{base}/metrics"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        message.contains(&format!(
            "answer too large: more than {MAX_ANSWER_BYTES} bytes"
        )),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_exposition_mid_run_is_recorded_as_a_failed_scrape() {
    let oversized = Arc::new(AtomicBool::new(false));
    let switch = Arc::clone(&oversized);
    let base = serve(Router::new().route(
        "/metrics",
        get(move || {
            let oversized = switch.load(Ordering::SeqCst);
            async move {
                if oversized {
                    huge(100)
                } else {
                    Response::new(Body::from("shop_breaker_state{breaker=\"db\"} 0\n"))
                }
            }
        }),
    ))
    .await;
    let url = format!("{base}/metrics");
    let observer = Observer::new(AdminClient::without_token());
    let recorder = RunRecorder::start(observer.subscribe(), 0, Default::default(), None);
    let watch = observer.watch();
    let spec = ScrapeSpec {
        url: url.clone(),
        interval: Duration::from_millis(50),
        service: "shop".into(),
        mapping: StateMapping::Value {
            metric: "shop_breaker_state".into(),
            breaker_label: "breaker".into(),
            values: StateMapping::default_values(),
        },
    };
    watch.scrape(0, &spec).await.expect("the baseline is small");
    oversized.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let recording = recorder.finish().await;
    let failed: Vec<(&str, &str)> = recording
        .agent_events
        .iter()
        .filter_map(|record| match &record.event {
            RunEvent::ScrapeFailed { source, error } => Some((source.as_str(), error.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        failed.len(),
        1,
        "one record per run of failures: {failed:?}"
    );
    assert_eq!(failed[0].0, format!("prometheus:{url}"));
    assert!(
        failed[0].1.contains("answer too large"),
        "the reason is said: {}",
        failed[0].1
    );
}

#[tokio::test]
async fn a_source_showing_more_breakers_than_followed_is_an_error_naming_it() {
    let many: String = (0..controller::sources::MAX_BREAKERS_PER_SOURCE + 1)
        .map(|index| format!("shop_breaker_state{{breaker=\"b{index}\"}} 0\n"))
        .collect();
    let base = serve(Router::new().route(
        "/metrics",
        get(move || {
            let many = many.clone();
            async move { many }
        }),
    ))
    .await;
    let observer = Observer::new(AdminClient::without_token());
    let spec = ScrapeSpec {
        url: format!("{base}/metrics"),
        interval: Duration::from_millis(50),
        service: "shop".into(),
        mapping: StateMapping::Value {
            metric: "shop_breaker_state".into(),
            breaker_label: "breaker".into(),
            values: StateMapping::default_values(),
        },
    };
    let message = observer
        .watch()
        .scrape(3, &spec)
        .await
        .expect_err("1,001 breakers are more than one source may have followed")
        .to_string();
    assert!(
        message.starts_with("sources[3].url: the baseline scrape shows 1001 breakers"),
        "{message}"
    );
}
