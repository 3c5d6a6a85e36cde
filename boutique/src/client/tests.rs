//! The breaker-wrapped client against stub servers: a caller that gave up still records the failure, calls
//! spread over every address of a name, half-open probes marked.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{Ack, CallStats, Dependency};
use crate::service_name::ServiceName;

/// The caller's caller gives up (its timeout, 150 ms, is below the call timeout, 400 ms) while the dependency
/// hangs: the call still ends at its own timeout and is recorded as the failure it is, so five hangs trip
/// `consecutive_failures = 5` — they used to be dropped permits, counted as ignored, and never tripped it.
#[tokio::test]
async fn a_call_whose_caller_gave_up_is_still_recorded_as_a_failure() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = Some(5);
    let config = config.build().expect("a valid test config");
    let breaker = Arc::new(breaker::CircuitBreaker::new(
        "checkout->payment",
        config,
        Arc::new(breaker::SystemClock),
    ));
    let dependency = Dependency::new(
        ServiceName::Payment,
        format!("http://{address}"),
        breaker.clone(),
        super::internal_http_client(),
        Duration::from_millis(400),
        Arc::new(CallStats::default()),
    );
    for _ in 0..5 {
        let gave_up =
            tokio::time::timeout(Duration::from_millis(150), dependency.get::<Ack>("/charge"))
                .await;
        assert!(gave_up.is_err(), "the caller's caller should give up first");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while breaker.snapshot().counters.failures < 5 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            breaker.snapshot().counters
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let counters = breaker.snapshot().counters;
    assert_eq!(
        (counters.failures, counters.ignored),
        (5, 0),
        "{counters:?}"
    );
    assert_eq!(breaker.state(), breaker::State::Open);
    held.abort();
}

/// Resolves every name to the same fixed addresses.
#[derive(Debug)]
struct Fixed(Vec<std::net::SocketAddr>);

impl super::Resolve for Fixed {
    fn resolve(
        &self,
        _host: &str,
        _port: u16,
    ) -> futures::future::BoxFuture<'static, std::io::Result<Vec<std::net::SocketAddr>>> {
        let addresses = self.0.clone();
        Box::pin(async move { Ok(addresses) })
    }
}

/// A server on `ip` answering `{}` and counting the calls it got and the probe-marked ones among them.
async fn replica(ip: [u8; 4]) -> (std::net::SocketAddr, Arc<[AtomicUsize; 2]>) {
    let listener = tokio::net::TcpListener::bind((std::net::IpAddr::from(ip), 0))
        .await
        .unwrap();
    let address = listener.local_addr().unwrap();
    let seen: Arc<[AtomicUsize; 2]> = Arc::default();
    let counted = seen.clone();
    let router = axum::Router::new()
        .route(
            "/fail",
            axum::routing::post(|| async { http::StatusCode::INTERNAL_SERVER_ERROR }),
        )
        .route(
            "/charge",
            axum::routing::post(move |headers: http::HeaderMap| {
                let counted = counted.clone();
                async move {
                    counted[0].fetch_add(1, Ordering::SeqCst);
                    if headers.contains_key(super::PROBE_HEADER) {
                        counted[1].fetch_add(1, Ordering::SeqCst);
                    }
                    if headers.get(http::header::HOST).map(|h| h.as_bytes())
                        != Some(b"payment:8080")
                    {
                        return Err(http::StatusCode::BAD_REQUEST);
                    }
                    Ok(axum::Json(Ack {}))
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });
    (address, seen)
}

/// Trips on one failure, open for 1 s of `clock`'s time, closes after one successful probe.
fn breaker_for_test(clock: Arc<breaker::ManualClock>) -> Arc<breaker::CircuitBreaker> {
    let mut config = breaker::RawBreakerConfig::default();
    config.trip.consecutive_failures = Some(1);
    config.open.base = Duration::from_secs(1);
    config.open.jitter = 0.0;
    config.half_open.successes_to_close = 1;
    let config = config.build().expect("a valid test config");
    Arc::new(breaker::CircuitBreaker::new(
        "checkout->payment",
        config,
        clock,
    ))
}

/// Payment by its name `payment:8080`, through `breaker`, the name resolving to `addresses`.
fn payment_at(
    breaker: Arc<breaker::CircuitBreaker>,
    addresses: Vec<std::net::SocketAddr>,
) -> Dependency {
    Dependency::new(
        ServiceName::Payment,
        "http://payment:8080",
        breaker,
        super::internal_http_client(),
        Duration::from_secs(5),
        Arc::new(CallStats::default()),
    )
    .with_resolver(Arc::new(Fixed(addresses)))
}

/// A name that resolves to two replicas (127.0.0.1 and 127.0.0.2, one server each): the calls go to both in
/// turn, through one breaker, with the service's name as the `Host`.
#[tokio::test]
async fn calls_are_spread_over_every_address_of_the_name() {
    let (first, first_seen) = replica([127, 0, 0, 1]).await;
    let (second, second_seen) = replica([127, 0, 0, 2]).await;
    let breaker = breaker_for_test(Arc::new(breaker::ManualClock::new()));
    let dependency = payment_at(breaker.clone(), vec![first, second]);
    for _ in 0..10 {
        let _: Ack = dependency.post("/charge", &Ack {}).await.unwrap();
    }
    let calls = |seen: &[AtomicUsize; 2]| seen[0].load(Ordering::SeqCst);
    assert_eq!((calls(&first_seen), calls(&second_seen)), (5, 5));
    assert_eq!(breaker.snapshot().counters.successes, 10);
}

/// A call that holds the breaker's half-open probe slot carries the probe header; ordinary calls do not.
#[tokio::test]
async fn a_half_open_probe_is_marked() {
    let (address, seen) = replica([127, 0, 0, 1]).await;
    let clock = Arc::new(breaker::ManualClock::new());
    let breaker = breaker_for_test(clock.clone());
    let dependency = payment_at(breaker.clone(), vec![address]);
    let _: Ack = dependency.post("/charge", &Ack {}).await.unwrap();
    assert_eq!(seen[1].load(Ordering::SeqCst), 0, "a closed breaker's call");
    let failed = dependency.post::<_, Ack>("/fail", &Ack {}).await;
    assert!(failed.is_err());
    assert_eq!(breaker.state(), breaker::State::Open);
    clock.advance(Duration::from_secs(1));
    let _: Ack = dependency.post("/charge", &Ack {}).await.unwrap();
    assert_eq!(
        (
            seen[0].load(Ordering::SeqCst),
            seen[1].load(Ordering::SeqCst)
        ),
        (2, 1)
    );
    assert_eq!(breaker.state(), breaker::State::Closed);
}
