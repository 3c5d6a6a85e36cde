//! The fault layer without sockets: per-request draws, reproducibility, order, matching and each kind's effect.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent::api::{ErrorStatus, FaultKind, FaultSpec, MatchRule};
use agent::inject::{AbortReason, FaultBody, INJECTED_HEADER};
use agent::{Agent, RawAgentConfig};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use tower::{Service, ServiceExt};

type Upstream =
    tower::util::BoxCloneService<Request<Full<Bytes>>, Response<Full<Bytes>>, Infallible>;

/// A service answering 200 "ok" and counting its calls.
fn counting_service(calls: Arc<AtomicUsize>) -> Upstream {
    tower::util::BoxCloneService::new(tower::service_fn(move |_request: Request<Full<Bytes>>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"ok")))) }
    }))
}

fn agent_with_seed(seed: u64) -> Agent {
    Agent::new(
        RawAgentConfig {
            seed,
            max_hold: Duration::from_secs(5),
            ..RawAgentConfig::default()
        }
        .build()
        .expect("a valid agent config"),
    )
}

fn request(method: Method, path: &str) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(path)
        .body(Full::new(Bytes::new()))
        .unwrap()
}

/// What happened to one request, as the caller sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Passed,
    Status(u16),
    Aborted(AbortReason),
}

fn classify(response: &Response<FaultBody<Full<Bytes>>>) -> Seen {
    if let Some(reason) = response.body().abort_reason() {
        return Seen::Aborted(reason);
    }
    if response.headers().contains_key(INJECTED_HEADER) {
        Seen::Status(response.status().as_u16())
    } else {
        Seen::Passed
    }
}

async fn send(
    service: &mut agent::FaultService<Upstream>,
    method: Method,
    path: &str,
) -> Response<FaultBody<Full<Bytes>>> {
    service
        .ready()
        .await
        .unwrap()
        .call(request(method, path))
        .await
        .unwrap()
}

async fn outcomes(agent: &Agent, count: usize) -> Vec<Seen> {
    let mut service =
        agent::FaultLayer::new(agent.clone()).layer_service(counting_service(Arc::default()));
    let mut seen = Vec::with_capacity(count);
    for _ in 0..count {
        seen.push(classify(&send(&mut service, Method::GET, "/charge").await));
    }
    seen
}

trait LayerExt {
    fn layer_service(&self, inner: Upstream) -> agent::FaultService<Upstream>;
}

impl LayerExt for agent::FaultLayer {
    fn layer_service(&self, inner: Upstream) -> agent::FaultService<Upstream> {
        tower::Layer::layer(self, inner)
    }
}

#[tokio::test]
async fn the_injection_rate_is_within_binomial_bounds() {
    const DRAWS: usize = 10_000;
    const RATE: f64 = 0.3;
    let agent = agent_with_seed(20_261_129);
    agent
        .put("f", FaultSpec::error(500, RATE).expect("a valid fault"))
        .unwrap();
    let injected = outcomes(&agent, DRAWS)
        .await
        .into_iter()
        .filter(|seen| *seen == Seen::Status(500))
        .count();
    let mean = DRAWS as f64 * RATE;
    let sigma = (DRAWS as f64 * RATE * (1.0 - RATE)).sqrt();
    assert!(
        (injected as f64 - mean).abs() <= 5.0 * sigma,
        "{injected} of {DRAWS} injected, expected {mean} ± {:.0}",
        5.0 * sigma
    );
    assert_eq!(agent.faults()[0].injected, injected as u64);
    assert_eq!(agent.requests_seen(), DRAWS as u64);
    assert!(agent.render_metrics().contains(&format!(
        "tolerant_agent_faults_injected_total{{kind=\"error\"}} {injected}\n"
    )));
}

#[tokio::test]
async fn the_same_seed_gives_the_same_sequence() {
    let runs: Vec<Vec<Seen>> = futures::future::join_all([7, 7, 8].map(|seed| async move {
        let agent = agent_with_seed(seed);
        agent
            .put("f", FaultSpec::error(503, 0.5).expect("a valid fault"))
            .unwrap();
        outcomes(&agent, 500).await
    }))
    .await;
    assert_eq!(runs[0], runs[1]);
    assert_ne!(
        runs[0], runs[2],
        "another seed should give another sequence"
    );
}

#[tokio::test]
async fn faults_are_checked_in_id_order_and_the_first_that_fires_wins() {
    let agent = agent_with_seed(3);
    agent
        .put(
            "b-second",
            FaultSpec::error(502, 1.0).expect("a valid fault"),
        )
        .unwrap();
    agent
        .put(
            "a-first",
            FaultSpec::error(501, 1.0).expect("a valid fault"),
        )
        .unwrap();
    assert_eq!(
        agent
            .faults()
            .iter()
            .map(|view| view.id.as_str())
            .collect::<Vec<_>>(),
        ["a-first", "b-second"]
    );
    assert!(
        outcomes(&agent, 50)
            .await
            .iter()
            .all(|seen| *seen == Seen::Status(501))
    );

    // At 0.5 each, a fires on about half and b on about a quarter of the requests.
    let agent = agent_with_seed(3);
    agent
        .put("a", FaultSpec::error(501, 0.5).expect("a valid fault"))
        .unwrap();
    agent
        .put("b", FaultSpec::error(502, 0.5).expect("a valid fault"))
        .unwrap();
    let seen = outcomes(&agent, 4_000).await;
    let first = seen
        .iter()
        .filter(|seen| **seen == Seen::Status(501))
        .count() as f64;
    let second = seen
        .iter()
        .filter(|seen| **seen == Seen::Status(502))
        .count() as f64;
    // 5 sigma of Binomial(4000, 0.5) is 158, of Binomial(4000, 0.25) is 137.
    assert!((first - 2_000.0).abs() <= 158.0, "a fired {first}");
    assert!((second - 1_000.0).abs() <= 137.0, "b fired {second}");
}

#[tokio::test]
async fn match_rules_select_method_and_path_prefix() {
    let agent = agent_with_seed(1);
    let spec = FaultSpec::try_new(
        FaultKind::Error {
            status: ErrorStatus::new(500).unwrap(),
            body: None,
        },
        1.0,
        MatchRule {
            method: Some("POST".into()),
            path_prefix: Some("/charge".into()),
        },
        None,
    )
    .expect("a valid fault");
    agent.put("charge", spec).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(calls.clone()),
    );
    assert_eq!(
        classify(&send(&mut service, Method::POST, "/charge/42").await),
        Seen::Status(500)
    );
    assert_eq!(
        classify(&send(&mut service, Method::GET, "/charge/42").await),
        Seen::Passed
    );
    assert_eq!(
        classify(&send(&mut service, Method::POST, "/refund").await),
        Seen::Passed
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the faulted request must not reach the service"
    );
}

#[tokio::test]
async fn error_faults_answer_with_their_status_and_body() {
    let agent = agent_with_seed(1);
    let spec = FaultSpec::try_new(
        FaultKind::Error {
            status: ErrorStatus::new(503).unwrap(),
            body: Some("payment is down".into()),
        },
        1.0,
        MatchRule::default(),
        None,
    )
    .expect("a valid fault");
    agent.put("down", spec).unwrap();
    let mut service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(Arc::default()),
    );
    let response = send(&mut service, Method::GET, "/").await;
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[INJECTED_HEADER], "error");
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "payment is down");
}

#[tokio::test]
async fn reset_faults_abort_the_response_body() {
    let agent = agent_with_seed(1);
    agent
        .put(
            "reset",
            FaultSpec::try_new(FaultKind::Reset, 1.0, MatchRule::default(), None)
                .expect("a valid fault"),
        )
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(calls.clone()),
    );
    let response = send(&mut service, Method::GET, "/").await;
    assert_eq!(classify(&response), Seen::Aborted(AbortReason::Reset));
    assert!(response.into_body().collect().await.is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn delay_faults_wait_then_pass_through() {
    let agent = agent_with_seed(1);
    agent
        .put(
            "slow",
            FaultSpec::try_new(
                FaultKind::Delay {
                    delay: Duration::from_millis(200),
                    jitter: Duration::from_millis(100),
                },
                1.0,
                MatchRule::default(),
                None,
            )
            .expect("a valid fault"),
        )
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let mut service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(calls.clone()),
    );
    for _ in 0..20 {
        let started = tokio::time::Instant::now();
        let call = service
            .ready()
            .await
            .unwrap()
            .call(request(Method::GET, "/"));
        let response = call.await.unwrap();
        let waited = started.elapsed();
        assert_eq!(classify(&response), Seen::Passed);
        assert!(
            waited >= Duration::from_millis(200) && waited <= Duration::from_millis(300),
            "waited {waited:?}"
        );
    }
    assert_eq!(calls.load(Ordering::SeqCst), 20);
}

#[tokio::test(start_paused = true)]
async fn the_delayed_service_is_called_only_after_the_wait() {
    let agent = agent_with_seed(1);
    agent
        .put(
            "slow",
            FaultSpec::try_new(
                FaultKind::Delay {
                    delay: Duration::from_secs(1),
                    jitter: Duration::ZERO,
                },
                1.0,
                MatchRule::default(),
                None,
            )
            .expect("a valid fault"),
        )
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(calls.clone()),
    );
    let pending = tokio::spawn(service.oneshot(request(Method::GET, "/")));
    tokio::time::sleep(Duration::from_millis(999)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "called before the delay ran out"
    );
    pending.await.unwrap().unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn hang_faults_outlast_a_client_timeout_and_end_at_the_hold_cap() {
    let agent = agent_with_seed(1);
    agent
        .put(
            "stuck",
            FaultSpec::try_new(FaultKind::Hang, 1.0, MatchRule::default(), None)
                .expect("a valid fault"),
        )
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(calls.clone()),
    );

    // A client with a 1 s timeout sees its timeout; dropping the future releases the held request.
    let timed_out = tokio::time::timeout(
        Duration::from_secs(1),
        service.clone().oneshot(request(Method::GET, "/")),
    )
    .await;
    assert!(timed_out.is_err(), "the client should have timed out");
    assert_eq!(agent.requests_held(), 0);

    // A patient client is released at the hold cap (5 s) with an aborted response.
    let started = tokio::time::Instant::now();
    let pending = tokio::spawn(service.oneshot(request(Method::GET, "/")));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(agent.requests_held(), 1);
    let response = pending.await.unwrap().unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    assert_eq!(
        classify(&response),
        Seen::Aborted(AbortReason::HoldCapReached)
    );
    assert_eq!(agent.requests_held(), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_control_api_is_never_faulted_nor_counted() {
    let agent = agent_with_seed(1);
    agent
        .put("all", FaultSpec::error(500, 1.0).expect("a valid fault"))
        .unwrap();
    let mut service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(Arc::default()),
    );
    assert_eq!(
        classify(&send(&mut service, Method::POST, "/_agent/halt").await),
        Seen::Passed
    );
    assert_eq!(agent.requests_seen(), 0);
}

#[tokio::test]
async fn no_fault_passes_everything_through() {
    let agent = agent_with_seed(1);
    assert!(
        outcomes(&agent, 100)
            .await
            .iter()
            .all(|seen| *seen == Seen::Passed)
    );
    agent
        .put("never", FaultSpec::error(500, 0.0).expect("a valid fault"))
        .unwrap();
    assert!(
        outcomes(&agent, 100)
            .await
            .iter()
            .all(|seen| *seen == Seen::Passed)
    );
    assert!(
        agent
            .render_metrics()
            .contains("tolerant_agent_requests_total 200\n")
    );
}

/// How a held request's fault ends.
#[derive(Debug, Clone, Copy)]
enum FaultEnd {
    Expiry,
    Delete,
    Halt,
    Replace,
}

impl FaultEnd {
    const ALL: [FaultEnd; 4] = [
        FaultEnd::Expiry,
        FaultEnd::Delete,
        FaultEnd::Halt,
        FaultEnd::Replace,
    ];

    /// Ends fault `id` (put with a 2 s lease) this way, `at` 1 s into the hold.
    async fn end(self, agent: &Agent, id: &str) {
        match self {
            // The lease (2 s) runs out 1 s from now: the reaper removes it.
            FaultEnd::Expiry => tokio::time::sleep(Duration::from_secs(1)).await,
            FaultEnd::Delete => agent.remove(id).unwrap(),
            FaultEnd::Halt => assert_eq!(agent.halt(), 1),
            FaultEnd::Replace => {
                agent
                    .put(id, FaultSpec::error(503, 0.0).expect("a valid fault"))
                    .unwrap();
            }
        }
    }
}

/// Puts fault `id` of `kind` (2 s lease, hold cap 60 s), sends one request, ends the fault `end`'s way 1 s
/// into the hold and returns what the caller saw, how long it was held and how often the service was called.
async fn hold_then_end(kind: FaultKind, end: FaultEnd) -> (Seen, Duration, usize) {
    let agent = Agent::new(
        RawAgentConfig {
            max_hold: Duration::from_secs(60),
            ..RawAgentConfig::default()
        }
        .build()
        .expect("a valid agent config"),
    );
    let spec = FaultSpec::try_new(
        kind,
        1.0,
        MatchRule::default(),
        Some(Duration::from_secs(2)),
    )
    .expect("a valid fault");
    agent.put("held", spec).unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let service = tower::Layer::layer(
        &agent::FaultLayer::new(agent.clone()),
        counting_service(calls.clone()),
    );
    let started = tokio::time::Instant::now();
    let pending = tokio::spawn(service.oneshot(request(Method::GET, "/")));
    tokio::time::sleep(Duration::from_secs(1)).await;
    end.end(&agent, "held").await;
    let response = pending.await.unwrap().unwrap();
    assert_eq!(agent.requests_held(), 0, "{end:?}");
    (
        classify(&response),
        started.elapsed(),
        calls.load(Ordering::SeqCst),
    )
}

/// A fault's effects end with the fault: a request a hang holds is closed at once when the fault expires, is
/// deleted, replaced or halted (not at the 60 s hold cap); one a delay holds goes on to the service at once.
#[tokio::test(start_paused = true)]
async fn held_requests_are_released_when_their_fault_ends() {
    let delay = FaultKind::Delay {
        delay: Duration::from_secs(50),
        jitter: Duration::ZERO,
    };
    for end in FaultEnd::ALL {
        let (seen, held, calls) = hold_then_end(FaultKind::Hang, end).await;
        assert_eq!(
            (seen, calls),
            (Seen::Aborted(AbortReason::FaultEnded), 0),
            "hang, {end:?}"
        );
        assert!(
            held <= Duration::from_secs(2),
            "hang, {end:?}: held {held:?}"
        );
        let (seen, held, calls) = hold_then_end(delay.clone(), end).await;
        assert_eq!((seen, calls), (Seen::Passed, 1), "delay, {end:?}");
        assert!(
            held <= Duration::from_secs(2),
            "delay, {end:?}: held {held:?}"
        );
    }
}

/// A delay is capped like a hang: longer than the hold cap is refused naming the field; an absurd one
/// ("500000000000y") is refused, not a panic on every matching request.
#[tokio::test]
async fn delays_over_the_hold_cap_are_refused_naming_the_field() {
    let agent = agent_with_seed(1); // hold cap 5 s
    for (delay, jitter, field) in [
        ("6s", "0s", "delay"),
        ("4s", "2s", "jitter"),
        ("500000000000y", "0s", "delay"),
        ("1s", "500000000000y", "jitter"),
    ] {
        let spec = FaultSpec::from_json_slice(
            format!(r#"{{"kind": "delay", "delay": "{delay}", "jitter": "{jitter}"}}"#).as_bytes(),
        )
        .unwrap();
        let error = agent.put("slow", spec).unwrap_err();
        assert_eq!(error.field(), Some(field), "{delay} + {jitter}: {error}");
    }
    assert!(agent.faults().is_empty());
    let at_cap =
        FaultSpec::from_json_slice(br#"{"kind": "delay", "delay": "3s", "jitter": "2s"}"#).unwrap();
    agent.put("slow", at_cap).unwrap();
}

/// Error faults are error statuses: 1xx, 2xx and 3xx would look like success.
#[test]
fn error_faults_accept_only_statuses_400_to_599() {
    for status in [0, 101, 200, 204, 302, 399, 600, 65_536] {
        let error = FaultSpec::from_json_slice(
            format!(r#"{{"kind": "error", "status": {status}}}"#).as_bytes(),
        )
        .unwrap_err();
        assert_eq!(error.field, "status", "{status}");
    }
    for status in [400, 404, 500, 599] {
        FaultSpec::from_json_slice(
            format!(r#"{{"kind": "error", "status": {status}}}"#).as_bytes(),
        )
        .unwrap();
    }
}

/// The number of faults an agent holds is bounded; replacing one at the bound is still allowed.
#[tokio::test]
async fn the_fault_table_is_bounded() {
    let agent = agent_with_seed(1);
    for i in 0..agent::MAX_FAULTS {
        agent
            .put(
                &format!("f{i}"),
                FaultSpec::error(500, 0.0).expect("a valid fault"),
            )
            .unwrap();
    }
    let error = agent
        .put(
            "one-too-many",
            FaultSpec::error(500, 0.0).expect("a valid fault"),
        )
        .unwrap_err();
    assert_eq!(error.field(), Some("id"), "{error}");
    assert_eq!(agent.faults().len(), agent::MAX_FAULTS);
    agent
        .put("f0", FaultSpec::error(503, 0.0).expect("a valid fault"))
        .unwrap();
    agent.remove("f1").unwrap();
    agent
        .put(
            "one-more",
            FaultSpec::error(500, 0.0).expect("a valid fault"),
        )
        .unwrap();
}

/// Requests marked as a half-open probe are counted whether a fault answers them or not; unmarked ones and the
/// control API's are not.
#[tokio::test]
async fn probes_are_counted_with_and_without_a_fault() {
    let agent = agent_with_seed(7);
    let mut service =
        agent::FaultLayer::new(agent.clone()).layer_service(counting_service(Arc::default()));
    let probe = |path: &str| {
        Request::builder()
            .uri(path)
            .header(agent::PROBE_HEADER, "1")
            .body(Full::new(Bytes::new()))
            .unwrap()
    };
    service
        .ready()
        .await
        .unwrap()
        .call(probe("/charge"))
        .await
        .unwrap();
    send(&mut service, Method::POST, "/charge").await;
    assert_eq!(agent.probes_seen(), 1);
    agent
        .put("down", FaultSpec::error(500, 1.0).unwrap())
        .unwrap();
    let answered = service
        .ready()
        .await
        .unwrap()
        .call(probe("/charge"))
        .await
        .unwrap();
    assert_eq!(classify(&answered), Seen::Status(500));
    assert_eq!(agent.probes_seen(), 2);
    assert!(
        agent
            .render_metrics()
            .contains("tolerant_agent_probes_total 2\n")
    );
}
