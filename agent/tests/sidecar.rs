//! The sidecar on loopback: pass-through of bodies, headers and statuses, then each fault kind on the wire.

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use agent::api::{ErrorStatus, FaultKind, FaultSpec, MatchRule};
use agent::sidecar::Sidecar;
use agent::{Agent, AgentConfig, RawAgentConfig};
use bytes::Bytes;
use common::{
    BIG_BODY_BYTES, PATIENCE, UpstreamProbe, big_byte, client, full, read_all, start_upstream,
};
use futures::StreamExt;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN: &str = "sidecar-token";

struct Running {
    agent: Agent,
    proxy: SocketAddr,
    control: SocketAddr,
    probe: Arc<UpstreamProbe>,
}

async fn start(max_hold: Duration) -> Running {
    let (upstream, probe) = start_upstream().await;
    let agent = Agent::new(
        RawAgentConfig {
            token: Some(TOKEN.into()),
            max_hold,
            seed: 11,
            ..RawAgentConfig::default()
        }
        .build()
        .expect("a valid agent config"),
    );
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let sidecar = Sidecar::bind(
        agent.clone(),
        loopback,
        &format!("http://{upstream}"),
        loopback,
    )
    .await
    .unwrap();
    let proxy = sidecar.proxy_address().unwrap();
    let control = sidecar.control_address().unwrap();
    tokio::spawn(sidecar.serve());
    Running {
        agent,
        proxy,
        control,
        probe,
    }
}

fn url(address: SocketAddr, path: &str) -> String {
    format!("http://{address}{path}")
}

fn fault(kind: FaultKind) -> FaultSpec {
    FaultSpec::try_new(kind, 1.0, MatchRule::default(), None).expect("a valid fault")
}

/// Sends one raw HTTP/1.1 GET and reads until the server closes; returns what was read or the read error.
async fn raw_get(address: SocketAddr, path: &str) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect(address).await?;
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes())
        .await?;
    let mut received = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received))
        .await
        .expect("the server neither answered nor closed")?;
    Ok(received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statuses_and_headers_pass_through_unchanged() {
    let running = start(Duration::from_secs(5)).await;
    let client = client();
    for code in [200u16, 201, 204, 301, 404, 418, 500, 503] {
        let response = client
            .request(
                Request::get(url(running.proxy, &format!("/status/{code}")))
                    .body(full(""))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), code);
        assert_eq!(response.headers()["x-upstream"], "yes");
        let body = read_all(response).await;
        if code != 204 {
            assert_eq!(body, format!("status {code}"));
        }
    }
    let request = Request::post(url(running.proxy, "/echo?q=1&r=two"))
        .header("host", "payment.internal")
        .header("x-custom", "kept as is")
        .header("x-forwarded-for", "192.0.2.9")
        .header("connection", "x-hop")
        .header("x-hop", "must not cross")
        .body(full("ping"))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let headers = response.headers().clone();
    assert_eq!(read_all(response).await, "ping");
    assert_eq!(headers["x-saw-host"], "payment.internal");
    assert_eq!(headers["x-saw-custom"], "kept as is");
    assert_eq!(headers["x-saw-forwarded-for"], "192.0.2.9, 127.0.0.1");
    assert_eq!(headers["x-saw-hop"], "-");
    assert_eq!(headers["x-saw-query"], "q=1&r=two");
    assert_eq!(headers["x-saw-content-length"], "4");
    assert_eq!(running.agent.requests_seen(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bodies_pass_through_both_ways() {
    let running = start(Duration::from_secs(5)).await;
    let client = client();
    let response = client
        .request(
            Request::get(url(running.proxy, "/big"))
                .body(full(""))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-length"],
        BIG_BODY_BYTES.to_string().as_str()
    );
    let body = read_all(response).await;
    assert_eq!(body.len(), BIG_BODY_BYTES);
    assert!(
        body.iter()
            .enumerate()
            .all(|(index, byte)| *byte == big_byte(index))
    );

    let upload: Bytes = (0..BIG_BODY_BYTES)
        .map(|index| big_byte(index * 7))
        .collect::<Vec<u8>>()
        .into();
    let response = client
        .request(
            Request::put(url(running.proxy, "/echo"))
                .body(full(upload.clone()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        response.headers()["x-saw-content-length"],
        BIG_BODY_BYTES.to_string().as_str()
    );
    assert_eq!(read_all(response).await, upload);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_bodies_stream_without_buffering() {
    let running = start(Duration::from_secs(5)).await;
    let client = client();

    // Upstream → client: the first chunk arrives while the upstream still holds the rest back.
    let response = client
        .request(
            Request::get(url(running.proxy, "/stream"))
                .body(full(""))
                .unwrap(),
        )
        .await
        .unwrap();
    let mut body = response.into_body();
    let first = tokio::time::timeout(PATIENCE, body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.into_data().unwrap(), "first;");
    running.probe.release_stream.notify_one();
    let rest = tokio::time::timeout(PATIENCE, body.collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    assert_eq!(rest, "second;third");

    // Client → upstream → client: a chunked upload is echoed chunk by chunk.
    let (sender, receiver) = futures::channel::mpsc::unbounded::<Bytes>();
    let upload =
        StreamBody::new(receiver.map(|chunk| Ok::<_, common::BoxError>(Frame::data(chunk))))
            .boxed_unsync();
    sender.unbounded_send(Bytes::from_static(b"one;")).unwrap();
    let response = tokio::time::timeout(
        PATIENCE,
        client.request(
            Request::post(url(running.proxy, "/echo"))
                .body(upload)
                .unwrap(),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.headers()["x-saw-transfer-encoding"], "chunked");
    let mut echoed = response.into_body();
    let first = tokio::time::timeout(PATIENCE, echoed.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.into_data().unwrap(), "one;");
    sender.unbounded_send(Bytes::from_static(b"two")).unwrap();
    drop(sender);
    let rest = tokio::time::timeout(PATIENCE, echoed.collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    assert_eq!(rest, "two");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_upstream_is_a_bad_gateway() {
    let agent = Agent::new(AgentConfig::default());
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let dead_upstream = closed.local_addr().unwrap();
    drop(closed);
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let sidecar = Sidecar::bind(
        agent,
        loopback,
        &format!("http://{dead_upstream}"),
        loopback,
    )
    .await
    .unwrap();
    let proxy = sidecar.proxy_address().unwrap();
    tokio::spawn(sidecar.serve());
    let response = client()
        .request(Request::get(url(proxy, "/")).body(full("")).unwrap())
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_faults_answer_without_reaching_the_upstream() {
    let running = start(Duration::from_secs(5)).await;
    running
        .agent
        .put(
            "e",
            fault(FaultKind::Error {
                status: ErrorStatus::new(503).unwrap(),
                body: Some("injected".into()),
            }),
        )
        .unwrap();
    let response = client()
        .request(
            Request::get(url(running.proxy, "/anything"))
                .body(full(""))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(read_all(response).await, "injected");
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_faults_reset_the_connection() {
    let running = start(Duration::from_secs(5)).await;
    running.agent.put("r", fault(FaultKind::Reset)).unwrap();
    let error = raw_get(running.proxy, "/")
        .await
        .expect_err("the read should fail with a reset");
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionReset, "{error}");
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 0);
    // Keep-alive clients see a failed request, not a response.
    assert!(
        client()
            .request(
                Request::get(url(running.proxy, "/"))
                    .body(full(""))
                    .unwrap()
            )
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on a real socket: wall time is what it measures
async fn delay_faults_hold_the_request_then_pass_it_on() {
    let running = start(Duration::from_secs(5)).await;
    running
        .agent
        .put(
            "d",
            fault(FaultKind::Delay {
                delay: Duration::from_millis(150),
                jitter: Duration::from_millis(50),
            }),
        )
        .unwrap();
    let started = std::time::Instant::now();
    let response = client()
        .request(
            Request::get(url(running.proxy, "/status/201"))
                .body(full(""))
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(response.status(), StatusCode::CREATED);
    assert_eq!(read_all(response).await, "status 201");
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on a real socket: wall time is what it measures
async fn hang_faults_outlast_client_timeouts_and_close_at_the_hold_cap() {
    let hold_cap = Duration::from_millis(400);
    let running = start(hold_cap).await;
    running.agent.put("h", fault(FaultKind::Hang)).unwrap();

    // A client with a timeout sees its timeout; when it gives up, the held request is released.
    let mut impatient = TcpStream::connect(running.proxy).await.unwrap();
    impatient
        .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 64];
    let waited =
        tokio::time::timeout(Duration::from_millis(100), impatient.read(&mut buffer)).await;
    assert!(waited.is_err(), "the client should have timed out waiting");
    assert_eq!(running.agent.requests_held(), 1);
    drop(impatient);
    wait_until(|| running.agent.requests_held() == 0).await;

    // A patient client is cut off at the hold cap: the connection closes with no response at all.
    let started = std::time::Instant::now();
    let received = raw_get(running.proxy, "/").await.unwrap();
    assert!(started.elapsed() >= hold_cap);
    assert!(
        received.is_empty(),
        "got {:?}",
        String::from_utf8_lossy(&received)
    );
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 0);
}

/// Polls `condition` every 10 ms, failing after [`PATIENCE`].
async fn wait_until(condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not reached in time"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_listener_serves_the_api_and_metrics_while_the_proxy_forwards_everything() {
    let running = start(Duration::from_secs(5)).await;
    let client = client();
    let put = Request::builder()
        .method(Method::PUT)
        .uri(url(running.control, "/_agent/faults/teapot"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(full(
            r#"{"kind":"error","status":418,"match":{"path_prefix":"/tea"}}"#,
        ))
        .unwrap();
    let response = client.request(put).await.unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    let response = client
        .request(
            Request::get(url(running.proxy, "/tea/pot"))
                .body(full(""))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::IM_A_TEAPOT);
    // The proxy listener has no control API: /_agent/... goes to the upstream.
    let response = client
        .request(
            Request::get(url(running.proxy, "/_agent/faults"))
                .body(full(""))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(read_all(response).await, "hello");
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 1);
    let response = client
        .request(
            Request::get(url(running.control, "/metrics"))
                .body(full(""))
                .unwrap(),
        )
        .await
        .unwrap();
    let text = String::from_utf8(read_all(response).await.to_vec()).unwrap();
    assert!(
        text.contains("tolerant_agent_faults_injected_total{kind=\"error\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("tolerant_agent_active_faults 1\n"));
}

/// Sends one request on a connection of its own (`Connection: close`), so each request is a new client connection.
async fn one_shot_get(address: SocketAddr, path: &str) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received))
        .await
        .expect("no answer")
        .unwrap();
    String::from_utf8_lossy(&received).into_owned()
}

// Single-threaded runtime: the idle pool is per thread, so every client connection here shares it.
#[tokio::test]
async fn upstream_connections_are_pooled_across_client_connections() {
    let running = start(Duration::from_secs(5)).await;
    for _ in 0..5 {
        let answer = one_shot_get(running.proxy, "/").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.ends_with("hello"), "{answer}");
    }
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 5);
    assert_eq!(
        running.probe.connections.load(Ordering::SeqCst),
        1,
        "five client connections in a row should reuse one upstream connection"
    );
}

#[tokio::test]
async fn an_upstream_that_closes_its_connections_is_reconnected() {
    let running = start(Duration::from_secs(5)).await;
    let client = client();
    for _ in 0..3 {
        let response = client
            .request(
                Request::get(url(running.proxy, "/close"))
                    .body(full(""))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(read_all(response).await, "bye");
    }
    // Same client connection throughout; the upstream closed after each answer.
    assert_eq!(running.probe.connections.load(Ordering::SeqCst), 3);
}

/// A fault's effects end with the fault, on the wire too: a request a hang holds is closed when the fault is
/// halted, and a request a delay holds is forwarded when the fault is deleted — long before the hold cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_requests_are_released_when_their_fault_ends() {
    let running = start(Duration::from_secs(600)).await;

    running.agent.put("h", fault(FaultKind::Hang)).unwrap();
    let held = tokio::spawn(raw_get(running.proxy, "/"));
    wait_until(|| running.agent.requests_held() == 1).await;
    assert_eq!(running.agent.halt(), 1);
    let received = tokio::time::timeout(PATIENCE, held)
        .await
        .expect("the hang outlived its fault")
        .unwrap()
        .unwrap();
    assert!(
        received.is_empty(),
        "got {:?}",
        String::from_utf8_lossy(&received)
    );
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 0);

    running
        .agent
        .put(
            "d",
            fault(FaultKind::Delay {
                delay: Duration::from_secs(500),
                jitter: Duration::ZERO,
            }),
        )
        .unwrap();
    let proxy = running.proxy;
    let delayed = tokio::spawn(async move {
        let mut stream = TcpStream::connect(proxy).await.unwrap();
        stream
            .write_all(b"GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        received
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    running.agent.remove("d").unwrap();
    let received = tokio::time::timeout(PATIENCE, delayed)
        .await
        .expect("the delay outlived its fault")
        .unwrap();
    assert!(
        received.starts_with(b"HTTP/1.1 200"),
        "got {:?}",
        String::from_utf8_lossy(&received)
    );
    assert_eq!(running.probe.requests.load(Ordering::SeqCst), 1);
}

/// One request on a connection of its own from `source` (a loopback address of the test's choosing), with
/// `token` as the bearer; returns the status and the `Retry-After` header.
async fn from_address(
    source: &str,
    address: SocketAddr,
    request_line: &str,
    token: &str,
) -> (u16, Option<String>) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    let mut stream = socket.connect(address).await.unwrap();
    let request = format!(
        "{request_line} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received))
        .await
        .expect("no answer")
        .unwrap();
    let text = String::from_utf8_lossy(&received);
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    let retry_after = text.lines().find_map(|line| {
        line.to_ascii_lowercase()
            .strip_prefix("retry-after: ")
            .map(str::to_owned)
    });
    (status, retry_after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_are_throttled_per_address_and_a_right_one_never_is() {
    let running = start(Duration::from_secs(5)).await;
    let halt = "POST /_agent/halt";
    for guess in 0..serving::throttle::WRONG_TOKENS_PER_WINDOW {
        let answer = from_address("127.0.0.2", running.control, halt, "guess").await;
        assert_eq!(answer, (401, None), "wrong token {guess}");
    }
    let (status, retry_after) = from_address("127.0.0.2", running.control, halt, "guess").await;
    assert_eq!(status, 429);
    let seconds: u64 = retry_after.expect("Retry-After").trim().parse().unwrap();
    assert!((1..=10).contains(&seconds), "{seconds}");
    // The right token is not slowed down, from the locked address or any other.
    for source in ["127.0.0.2", "127.0.0.1"] {
        let (status, _) = from_address(source, running.control, halt, TOKEN).await;
        assert_eq!(status, 200, "{source}");
    }
    // Another address has its own allowance.
    let answer = from_address("127.0.0.3", running.control, halt, "guess").await;
    assert_eq!(answer, (401, None));
    // The fault API's other mutations share the lockout.
    let (status, _) = from_address(
        "127.0.0.2",
        running.control,
        "DELETE /_agent/faults/x",
        "guess",
    )
    .await;
    assert_eq!(status, 429);
}
