//! The async `call` helper with paused tokio time, the tower layer, and the registry's broadcast subscription.

#![cfg(all(feature = "tokio", feature = "tower"))]

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use breaker::http::Classifier;
use breaker::layer::{BreakerLayer, StatusClassifier};
use breaker::{
    BreakerConfig, CallError, CircuitBreaker, Outcome, Probes, RawSlowCallConfig, Reason, Registry,
    State, TokioClock,
};
use tower::{Service, ServiceBuilder, ServiceExt};

fn classify<T, E>(result: &Result<T, E>) -> Outcome {
    if result.is_ok() {
        Outcome::Success
    } else {
        Outcome::Failure
    }
}

#[tokio::test(start_paused = true)]
async fn call_trips_on_slow_calls_timed_by_paused_tokio_time() {
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = None;
    config.trip.slow_call = Some(RawSlowCallConfig {
        duration: Duration::from_millis(100),
        rate: 0.5,
        window: Duration::from_secs(10),
        min_calls: 2,
    });
    let config = config.build().expect("a valid test config");
    let breaker = CircuitBreaker::new("a->b", config, Arc::new(TokioClock::new()));
    for _ in 0..2 {
        let answer = breaker
            .call(
                async {
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    Ok::<_, Infallible>(7)
                },
                classify,
            )
            .await;
        assert_eq!(answer, Ok(7));
    }
    assert_eq!(breaker.state(), State::Open);
    let rejected = breaker
        .call(async { Ok::<u32, Infallible>(1) }, classify)
        .await;
    assert!(matches!(rejected, Err(CallError::Rejected(ref r)) if r.state == State::Open));
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        breaker.state(),
        State::HalfOpen,
        "the open window ended in paused tokio time"
    );
}

#[tokio::test(start_paused = true)]
async fn call_passes_inner_errors_and_a_cancelled_call_frees_its_probe() {
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = Some(1);
    config.half_open.probes = Probes::limited(1).expect("1");
    let config = config.build().expect("a valid test config");
    let breaker = CircuitBreaker::new("a->b", config, Arc::new(TokioClock::new()));
    let failed = breaker.call(async { Err::<(), _>("boom") }, classify).await;
    assert_eq!(failed, Err(CallError::Inner("boom")));
    assert_eq!(breaker.state(), State::Open);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let hanging = breaker.call(
        async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<_, &str>(())
        },
        classify,
    );
    assert!(
        tokio::time::timeout(Duration::from_secs(3), hanging)
            .await
            .is_err(),
        "timed out"
    );
    assert_eq!(
        breaker.snapshot().probes_in_flight,
        0,
        "the cancelled call gave its slot back"
    );
    assert_eq!(breaker.snapshot().counters.ignored, 1);
    assert_eq!(
        breaker.call(async { Ok::<_, &str>(()) }, classify).await,
        Ok(())
    );
}

#[tokio::test]
async fn tower_layer_rejects_without_calling_the_service() {
    let breaker = Arc::new(CircuitBreaker::new(
        "a->b",
        BreakerConfig::default(),
        Arc::new(TokioClock::new()),
    ));
    let reached = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&reached);
    let mut service = ServiceBuilder::new()
        .layer(BreakerLayer::new(Arc::clone(&breaker)))
        .service_fn(move |_: ()| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>("unavailable") }
        });
    for _ in 0..5 {
        let result = service.ready().await.expect("ready").call(()).await;
        assert_eq!(result, Err(CallError::Inner("unavailable")));
    }
    for _ in 0..3 {
        let result = service.ready().await.expect("ready").call(()).await;
        assert!(
            matches!(result, Err(CallError::Rejected(ref r)) if r.breaker == "a->b" && r.state == State::Open),
            "the rejection names the breaker: {result:?}"
        );
    }
    assert_eq!(
        reached.load(Ordering::SeqCst),
        5,
        "rejected calls never reached the service"
    );
    assert_eq!(breaker.snapshot().counters.rejected, 3);
}

#[tokio::test]
#[should_panic(expected = "polled after completion")]
async fn tower_layer_rejection_is_handed_out_once_not_invented_again() {
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = Some(1);
    let config = config.build().expect("a valid test config");
    let breaker = Arc::new(CircuitBreaker::new(
        "a->b",
        config,
        Arc::new(TokioClock::new()),
    ));
    let mut service = ServiceBuilder::new()
        .layer(BreakerLayer::new(Arc::clone(&breaker)))
        .service_fn(|_: ()| async { Err::<(), _>("unavailable") });
    let failed = service.ready().await.expect("ready").call(()).await;
    assert_eq!(failed, Err(CallError::Inner("unavailable")));
    let mut rejected = std::pin::pin!(service.ready().await.expect("ready").call(()));
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    let first = rejected.as_mut().poll(&mut context);
    assert!(
        matches!(first, std::task::Poll::Ready(Err(CallError::Rejected(ref r))) if r.breaker == "a->b"),
        "{first:?}"
    );
    // Polling a finished future is a caller bug: it panics rather than making up a second, nameless rejection.
    let _ = rejected.as_mut().poll(&mut context);
}

#[tokio::test]
async fn tower_layer_classifies_http_statuses() {
    let breaker = Arc::new(CircuitBreaker::new(
        "a->b",
        BreakerConfig::default(),
        Arc::new(TokioClock::new()),
    ));
    let service = ServiceBuilder::new()
        .layer(
            BreakerLayer::new(Arc::clone(&breaker))
                .with_classifier(StatusClassifier(Classifier::default())),
        )
        .service_fn(|status: u16| async move {
            Ok::<_, Infallible>(
                http::Response::builder()
                    .status(status)
                    .body(())
                    .expect("response"),
            )
        });
    for status in [404, 404, 404, 404, 404, 422, 200, 500, 503] {
        let response = service.clone().oneshot(status).await.expect("not rejected");
        assert_eq!(response.status().as_u16(), status);
    }
    let counters = breaker.snapshot().counters;
    assert_eq!(
        (counters.ignored, counters.successes, counters.failures),
        (6, 1, 2)
    );
    assert_eq!(
        breaker.state(),
        State::Closed,
        "4xx never opens the breaker"
    );
}

#[tokio::test]
async fn registry_shares_config_and_broadcasts_transitions() {
    let registry = Registry::new(
        "frontend",
        BreakerConfig::default(),
        Arc::new(TokioClock::new()),
    )
    .with_seed(9);
    let mut events = registry.subscribe();
    let checkout = registry.get("frontend->checkout");
    assert!(Arc::ptr_eq(&checkout, &registry.get("frontend->checkout")));
    for _ in 0..5 {
        checkout
            .try_acquire()
            .expect("closed")
            .record(Outcome::Failure);
    }
    let event = events.recv().await.expect("an event");
    assert_eq!(
        (event.service.as_str(), event.breaker.as_str()),
        ("frontend", "frontend->checkout")
    );
    assert_eq!(event.reason, Reason::ConsecutiveFailures);
    let mut strict = breaker::RawBreakerConfig::default();
    strict.trip.consecutive_failures = Some(1);
    let strict = strict.build().expect("a valid test config");
    registry.set_config(strict.clone());
    let cart = registry.get("frontend->cart");
    assert_eq!(cart.config(), strict);
    assert_eq!(checkout.config(), strict);
    cart.try_acquire().expect("closed").record(Outcome::Failure);
    assert_eq!(cart.state(), State::Open);
    let names: Vec<String> = registry.snapshots().into_iter().map(|s| s.name).collect();
    assert_eq!(names, vec!["frontend->cart", "frontend->checkout"]);
    registry.reset();
    assert!(
        registry
            .snapshots()
            .iter()
            .all(|s| s.state == State::Closed && s.counters.failures == 0)
    );
    let json = serde_json::to_value(registry.snapshots()).expect("json");
    assert_eq!(json[0]["state"], "closed");
    assert_eq!(json[0]["mode"], "enforce");
}
