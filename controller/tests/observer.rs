//! The observer against a real service on loopback: a `/_breakers/stream` the test feeds transitions into and a
//! `/_pool` that counts its reads. One follower serves every consumer the same sequence; a consumer that falls
//! behind sees a counted gap while the others miss nothing; the follower reconnects when the service is stopped
//! and started again on its port; a target is followed and given back at runtime; the sampler reads each
//! target once a tick however many watches ask.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::IntoResponse;
use axum::routing::get;
use controller::observe::{Follows, Observation, Observations, Observer, Received, Target};
use controller::target::ServiceId;
use controller::testbed::AdminClient;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

/// What the fake service shares with the test.
#[derive(Clone)]
struct Service {
    /// Every transition sent here goes to every open stream.
    transitions: broadcast::Sender<String>,
    /// Streams open now.
    open_streams: Arc<AtomicU64>,
    /// `GET /_pool` answered so far.
    pool_reads: Arc<AtomicU64>,
    /// Ends the server and every stream it holds.
    stop: CancellationToken,
}

impl Service {
    fn new() -> Self {
        Service {
            transitions: broadcast::channel(16_384).0,
            open_streams: Arc::new(AtomicU64::new(0)),
            pool_reads: Arc::new(AtomicU64::new(0)),
            stop: CancellationToken::new(),
        }
    }

    /// Sends transition number `seq` of `checkout->payment` to every open stream.
    fn emit(&self, seq: u64) {
        let text = format!(
            r#"{{"service":"checkout","breaker":"checkout->payment","from":"closed","to":"open",
                "reason":"consecutive_failures","detail":{{"failures":5}},"at_ms":{seq},"seq":{seq},"shadow":false}}"#
        );
        let _ = self.transitions.send(text);
    }
}

async fn stream(State(service): State<Service>, upgrade: WebSocketUpgrade) -> impl IntoResponse {
    upgrade.on_upgrade(move |socket| follow(service, socket))
}

async fn follow(service: Service, mut socket: WebSocket) {
    let mut transitions = service.transitions.subscribe();
    service.open_streams.fetch_add(1, Ordering::SeqCst);
    loop {
        tokio::select! {
            () = service.stop.cancelled() => break,
            sent = transitions.recv() => match sent {
                Ok(text) => {
                    if socket.send(Message::Text(text.into())).await.is_err() {
                        break;
                    }
                }
                Err(_) => break,
            },
            received = socket.recv() => if !matches!(received, Some(Ok(_))) {
                break;
            },
        }
    }
    service.open_streams.fetch_sub(1, Ordering::SeqCst);
}

async fn pool(State(service): State<Service>) -> impl IntoResponse {
    service.pool_reads.fetch_add(1, Ordering::SeqCst);
    axum::Json(serde_json::json!({
        "in_flight": 1, "queued": 0, "capacity": 8, "queue_capacity": 16, "rejected": 0
    }))
}

/// Serves `service` on `addr` (port 0: any) until its `stop` is cancelled; returns the address bound.
async fn serve(service: Service, addr: SocketAddr) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(addr).await.expect("bind");
    let bound = listener.local_addr().expect("address");
    let stop = service.stop.clone();
    let app = Router::new()
        .route("/_breakers/stream", get(stream))
        .route("/_pool", get(pool))
        .with_state(service);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
    });
    bound
}

/// Waits (at most 10 s) until `condition` holds.
async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..1_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{what}: not within 10 s");
}

/// The `seq` of the next transition a consumer sees, within 5 s (gaps and other observations skipped).
async fn next_seq(observations: &mut Observations) -> (String, u64) {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match observations.next().await {
                Some(Received::Observation(Observation::Transition { event, .. })) => {
                    return (event.service, event.seq);
                }
                Some(_) => continue,
                None => panic!("the observer is gone"),
            }
        }
    })
    .await
    .expect("a transition within 5 s")
}

fn label(name: &str) -> ServiceId {
    ServiceId::new(name).expect("a label")
}

fn transitions_of(name: &str, addr: SocketAddr) -> Target {
    Target {
        label: label(name),
        url: format!("http://{addr}"),
        follows: Follows {
            transitions: true,
            ..Follows::default()
        },
    }
}

#[tokio::test]
async fn two_consumers_receive_the_same_sequence_from_one_follower() {
    let service = Service::new();
    let addr = serve(service.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let observer = Observer::new(AdminClient::without_token());
    let (mut runner, mut dashboard) = (observer.subscribe(), observer.subscribe());
    // Two watches ask for the same stream: one connection serves both.
    let (first, second) = (observer.watch(), observer.watch());
    first.follow(&transitions_of("checkout#2", addr));
    second.follow(&transitions_of("checkout#2", addr));
    first
        .breakers_connected(&label("checkout#2"))
        .await
        .unwrap();
    second
        .breakers_connected(&label("checkout#2"))
        .await
        .unwrap();
    eventually("the stream is open", || {
        service.open_streams.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(service.open_streams.load(Ordering::SeqCst), 1);

    for seq in 1..=50 {
        service.emit(seq);
    }
    let mut seen = (Vec::new(), Vec::new());
    for _ in 1..=50 {
        seen.0.push(next_seq(&mut runner).await);
        seen.1.push(next_seq(&mut dashboard).await);
    }
    let expected: Vec<(String, u64)> = (1..=50).map(|seq| ("checkout#2".into(), seq)).collect();
    assert_eq!(seen.0, expected, "named as the replica, in order");
    assert_eq!(seen.1, seen.0);
    assert_eq!((runner.missed(), dashboard.missed()), (0, 0));
}

#[tokio::test]
async fn a_consumer_that_falls_behind_sees_a_counted_gap_and_the_others_miss_nothing() {
    let service = Service::new();
    let addr = serve(service.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let observer = Observer::new(AdminClient::without_token());
    let mut slow = observer.subscribe();
    let mut keeping_up = observer.subscribe();
    let watch = observer.watch();
    watch.follow(&transitions_of("checkout", addr));
    watch.breakers_connected(&label("checkout")).await.unwrap();
    eventually("the stream is open", || {
        service.open_streams.load(Ordering::SeqCst) == 1
    })
    .await;

    let total = controller::observe::OBSERVATION_BUFFER as u64 + 1_000;
    let reader = tokio::spawn(async move {
        let mut seqs = Vec::new();
        while (seqs.len() as u64) < total {
            seqs.push(next_seq(&mut keeping_up).await.1);
        }
        (seqs, keeping_up.missed())
    });
    for seq in 1..=total {
        service.emit(seq);
    }
    let (seqs, missed) = reader.await.unwrap();
    assert_eq!(seqs, (1..=total).collect::<Vec<_>>());
    assert_eq!(missed, 0);

    // The slow one never read: its first news is the gap, counted; then the newest observations.
    let Some(Received::Gap { missed }) = slow.next().await else {
        panic!("a gap first");
    };
    assert!(
        missed >= total - controller::observe::OBSERVATION_BUFFER as u64,
        "{missed}"
    );
    assert_eq!(slow.missed(), missed);
    let (_, next) = next_seq(&mut slow).await;
    assert_eq!(next, missed + 1, "the sequence goes on after the gap");
}

#[tokio::test]
async fn the_follower_reconnects_after_the_service_restarts() {
    let service = Service::new();
    let addr = serve(service.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let observer = Observer::new(AdminClient::without_token());
    let mut seen = observer.subscribe();
    let watch = observer.watch();
    watch.follow(&transitions_of("checkout", addr));
    watch.breakers_connected(&label("checkout")).await.unwrap();
    eventually("the stream is open", || {
        service.open_streams.load(Ordering::SeqCst) == 1
    })
    .await;
    service.emit(1);
    assert_eq!(next_seq(&mut seen).await.1, 1);

    // Stopped: the stream closes, the port is free.
    service.stop.cancel();
    eventually("the stream is closed", || {
        service.open_streams.load(Ordering::SeqCst) == 0
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Started again on the same port: the follower comes back by itself.
    let restarted = Service::new();
    assert_eq!(serve(restarted.clone(), addr).await, addr);
    eventually("the follower reconnected", || {
        restarted.open_streams.load(Ordering::SeqCst) == 1
    })
    .await;
    watch.breakers_connected(&label("checkout")).await.unwrap();
    restarted.emit(2);
    assert_eq!(next_seq(&mut seen).await.1, 2);
    assert_eq!(seen.missed(), 0);
}

#[tokio::test]
async fn a_stream_that_does_not_open_says_its_url() {
    let observer = Observer::new(AdminClient::without_token());
    let watch = observer.watch();
    watch.follow(&transitions_of("checkout", "127.0.0.1:9".parse().unwrap()));
    let error = watch
        .breakers_connected(&label("checkout"))
        .await
        .expect_err("nothing listens on port 9");
    assert!(
        error
            .to_string()
            .starts_with("ws://127.0.0.1:9/_breakers/stream: "),
        "{error}"
    );
}

#[tokio::test]
async fn a_target_is_followed_and_given_back_at_runtime() {
    let (one, two) = (Service::new(), Service::new());
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let (addr_one, addr_two) = (serve(one.clone(), any).await, serve(two.clone(), any).await);
    let observer = Observer::new(AdminClient::without_token());
    let dashboard = observer.watch();
    dashboard.follow(&transitions_of("checkout", addr_one));
    // A replica discovered mid-run is added, then found gone and removed.
    let discovery = observer.watch();
    discovery.follow(&transitions_of("checkout#2", addr_two));
    discovery
        .breakers_connected(&label("checkout#2"))
        .await
        .unwrap();
    let (streams, _) = observer.followed();
    assert_eq!(streams, ["breakers:checkout", "breakers:checkout#2"]);
    discovery.unfollow(&label("checkout#2"));
    assert_eq!(observer.followed().0, ["breakers:checkout"]);
    eventually("the replica's stream is closed", || {
        two.open_streams.load(Ordering::SeqCst) == 0
    })
    .await;
    assert_eq!(one.open_streams.load(Ordering::SeqCst), 1);
    // The last watch gone, nothing is followed.
    drop((dashboard, discovery));
    assert!(observer.followed().0.is_empty());
    eventually("every stream is closed", || {
        one.open_streams.load(Ordering::SeqCst) == 0
    })
    .await;
}

/// Two watches asking for a target's pool (a run and the dashboard in one process) make one read a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sampler_reads_a_target_once_a_tick_however_many_watch() {
    let service = Service::new();
    let addr = serve(service.clone(), "127.0.0.1:0".parse().unwrap()).await;
    let observer = Observer::new(AdminClient::without_token());
    let mut samples = observer.subscribe();
    let pool = Target {
        label: label("cart"),
        url: format!("http://{addr}"),
        follows: Follows {
            pool: true,
            ..Follows::default()
        },
    };
    let (run, dashboard) = (observer.watch(), observer.watch());
    run.follow(&pool);
    dashboard.follow(&pool);
    let mut taken = Vec::new();
    while taken.len() < 4 {
        if let Some(Received::Observation(Observation::Sample(sample))) = samples.next().await {
            taken.push(sample);
        }
    }
    let reads = service.pool_reads.load(Ordering::SeqCst);
    assert!((4..=5).contains(&reads), "{reads} reads for 4 samples");
    for sample in &taken {
        let cart = sample.of("cart").expect("the cart is sampled");
        assert_eq!(cart.pool.as_ref().map(|p| p.capacity), Some(8));
        assert!(
            cart.breakers.is_none() && cart.metrics.is_none(),
            "only what was asked"
        );
    }
    // One grid: ticks a whole number of seconds apart (one skipped only if a read outlasted its second).
    let gaps: Vec<Duration> = taken.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(
        gaps.iter()
            .all(|gap| gap.as_nanos() % 1_000_000_000 == 0 && !gap.is_zero()),
        "{gaps:?}"
    );
}
