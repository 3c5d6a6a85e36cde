//! The sidecar's HTTP/1.1 handling byte by byte: raw clients and scripted upstreams on loopback, for what a
//! general-purpose client would hide (pipelining, HTTP/1.0, upgrades, interim answers, framing edge cases, and
//! what happens to connections when one side goes away).

mod common;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent::api::{ErrorStatus, FaultKind, FaultSpec, MatchRule};
use agent::sidecar::Sidecar;
use agent::{Agent, AgentConfig};
use common::{PATIENCE, start_upstream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn sidecar_in_front_of(upstream: SocketAddr) -> SocketAddr {
    sidecar_with_agent(upstream, Agent::new(AgentConfig::default())).await
}

async fn sidecar_with_agent(upstream: SocketAddr, agent: Agent) -> SocketAddr {
    let sidecar = bind_sidecar(upstream, agent).await;
    let proxy = sidecar.proxy_address().unwrap();
    tokio::spawn(sidecar.serve());
    proxy
}

/// A sidecar bound to ephemeral loopback ports in front of `upstream`, not serving yet.
async fn bind_sidecar(upstream: SocketAddr, agent: Agent) -> Sidecar {
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    Sidecar::bind(agent, loopback, &format!("http://{upstream}"), loopback)
        .await
        .unwrap()
}

/// An upstream that runs `script` on every connection it accepts; counts the connections.
async fn scripted_upstream<F, Fut>(script: F) -> (SocketAddr, Arc<AtomicUsize>)
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(script(stream));
        }
    });
    (address, connections)
}

/// Reads up to the end of a head (`\r\n\r\n`), byte by byte so nothing after it is consumed.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let byte = tokio::time::timeout(PATIENCE, stream.read_u8())
            .await
            .expect("no head in time")
            .expect("connection ended inside a head");
        head.push(byte);
    }
    String::from_utf8(head).unwrap()
}

/// The value of `name` in a head, if present.
fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Reads one response with a `Content-Length` body: its head and body.
async fn read_response(stream: &mut TcpStream) -> (String, String) {
    let head = read_head(stream).await;
    let length: usize = field(&head, "content-length").map_or(0, |value| value.parse().unwrap());
    let body = read_exactly(stream, length).await;
    (head, String::from_utf8(body).unwrap())
}

/// Opens a connection to `proxy` and writes `bytes` on it.
async fn connect_and_send(proxy: SocketAddr, bytes: &[u8]) -> TcpStream {
    let mut client = TcpStream::connect(proxy).await.unwrap();
    client.write_all(bytes).await.unwrap();
    client
}

/// Reads exactly `length` bytes, bounded by [`PATIENCE`].
async fn read_exactly(stream: &mut TcpStream, length: usize) -> Vec<u8> {
    let mut bytes = vec![0; length];
    tokio::time::timeout(PATIENCE, stream.read_exact(&mut bytes))
        .await
        .expect("not enough bytes in time")
        .unwrap();
    bytes
}

async fn read_to_end(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received))
        .await
        .expect("the connection did not close")
        .unwrap();
    String::from_utf8_lossy(&received).into_owned()
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let (upstream, probe) = start_upstream().await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = connect_and_send(proxy, b"GET /status/201 HTTP/1.1\r\nHost: a\r\n\r\nGET /status/404 HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    let (first, body) = read_response(&mut client).await;
    assert!(first.starts_with("HTTP/1.1 201 "), "{first}");
    assert_eq!(body, "status 201");
    let (second, body) = read_response(&mut client).await;
    assert!(second.starts_with("HTTP/1.1 404 "), "{second}");
    assert_eq!(body, "status 404");
    let (third, body) = read_response(&mut client).await;
    assert!(third.starts_with("HTTP/1.1 200 "), "{third}");
    assert_eq!(body, "hello");
    assert_eq!(probe.requests.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn http_1_0_requests_go_upstream_as_1_0_and_close() {
    let (upstream, _) = scripted_upstream(|mut stream| async move {
        let head = read_head(&mut stream).await;
        let line = head.lines().next().unwrap().to_owned();
        let body = format!("saw {line}");
        let answer = format!(
            "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(answer.as_bytes()).await.unwrap();
    })
    .await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = connect_and_send(proxy, b"GET /old HTTP/1.0\r\n\r\n").await;
    let answer = read_to_end(&mut client).await;
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains("connection: close\r\n"), "{answer}");
    assert!(answer.ends_with("saw GET /old HTTP/1.0"), "{answer}");
}

#[tokio::test]
async fn an_upgrade_becomes_a_tunnel_both_ways() {
    let (upstream, _) = scripted_upstream(|mut stream| async move {
        let head = read_head(&mut stream).await;
        assert_eq!(field(&head, "upgrade"), Some("echo"), "{head}");
        assert_eq!(field(&head, "connection"), Some("upgrade"), "{head}");
        stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nwelcome;")
            .await
            .unwrap();
        // Echo whatever comes, in the new protocol.
        let (mut reader, mut writer) = stream.split();
        let _ = tokio::io::copy(&mut reader, &mut writer).await;
    })
    .await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = connect_and_send(
        proxy,
        b"GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: echo\r\n\r\n",
    )
    .await;
    let head = read_head(&mut client).await;
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert_eq!(field(&head, "upgrade"), Some("echo"));
    assert_eq!(read_exactly(&mut client, 8).await, b"welcome;");
    for message in [&b"ping"[..], b"\x00\xff binary \r\n\r\n"] {
        client.write_all(message).await.unwrap();
        assert_eq!(read_exactly(&mut client, message.len()).await, message);
    }
}

#[tokio::test]
async fn expect_continue_goes_upstream_and_its_interim_answer_comes_back() {
    let (upstream, _) = scripted_upstream(|mut stream| async move {
        let head = read_head(&mut stream).await;
        assert_eq!(field(&head, "expect"), Some("100-continue"), "{head}");
        stream
            .write_all(b"HTTP/1.1 100 Continue\r\n\r\n")
            .await
            .unwrap();
        let mut body = [0u8; 5];
        stream.read_exact(&mut body).await.unwrap();
        let answer = [&b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"[..], &body].concat();
        stream.write_all(&answer).await.unwrap();
    })
    .await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = connect_and_send(
        proxy,
        b"POST /upload HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n",
    )
    .await;
    // The body is sent only after the interim answer, as a careful client does.
    let interim = read_head(&mut client).await;
    assert_eq!(interim, "HTTP/1.1 100 Continue\r\n\r\n");
    client.write_all(b"hello").await.unwrap();
    let (head, body) = read_response(&mut client).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(body, "hello");
}

#[tokio::test]
async fn head_answers_have_no_body_and_the_connection_goes_on() {
    let (upstream, _) = start_upstream().await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = connect_and_send(
        proxy,
        b"HEAD /big HTTP/1.1\r\nHost: a\r\n\r\nGET /status/202 HTTP/1.1\r\nHost: a\r\n\r\n",
    )
    .await;
    let head = read_head(&mut client).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(
        field(&head, "content-length"),
        Some(common::BIG_BODY_BYTES.to_string().as_str())
    );
    let (next, body) = read_response(&mut client).await;
    assert!(next.starts_with("HTTP/1.1 202 "), "{next}");
    assert_eq!(body, "status 202");
}

#[tokio::test]
async fn unacceptable_requests_get_a_4xx_naming_the_field_and_never_reach_the_upstream() {
    let (upstream, probe) = start_upstream().await;
    let proxy = sidecar_in_front_of(upstream).await;
    let cases: [(&[u8], &str, &str); 4] = [
        (b"POST /echo HTTP/1.1\r\nContent-Length: ten\r\n\r\n", "400", "content-length"),
        (
            b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n",
            "400",
            "transfer-encoding",
        ),
        (b"GET /\x01 HTTP/1.1\r\n\r\n", "400", "malformed"),
        (b"CONNECT db:5432 HTTP/1.1\r\n\r\n", "501", "CONNECT"),
    ];
    for (request, status, named) in cases {
        let mut client = connect_and_send(proxy, request).await;
        let answer = read_to_end(&mut client).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{answer}"
        );
        assert!(answer.contains(named), "{answer}");
        assert!(answer.contains("connection: close"), "{answer}");
    }
    let mut client = TcpStream::connect(proxy).await.unwrap();
    let huge = format!("GET / HTTP/1.1\r\nx-big: {}\r\n\r\n", "v".repeat(70 * 1024));
    client.write_all(huge.as_bytes()).await.unwrap();
    assert!(read_to_end(&mut client).await.starts_with("HTTP/1.1 431 "));
    assert_eq!(probe.requests.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_client_that_gives_up_releases_its_upstream_connection() {
    let (closed_sender, mut closed) = tokio::sync::mpsc::unbounded_channel::<()>();
    let (upstream, _) = scripted_upstream(move |mut stream| {
        let closed_sender = closed_sender.clone();
        async move {
            read_head(&mut stream).await;
            // Never answer; report when the sidecar closes this connection.
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest).await;
            let _ = closed_sender.send(());
        }
    })
    .await;
    let proxy = sidecar_in_front_of(upstream).await;
    let client = connect_and_send(proxy, b"GET /slow HTTP/1.1\r\nHost: a\r\n\r\n").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(client);
    tokio::time::timeout(PATIENCE, closed.recv())
        .await
        .expect("the upstream connection outlived the client")
        .unwrap();
}

/// An upstream that answers one request per connection and then closes without saying `Connection: close`.
async fn one_request_per_connection() -> (SocketAddr, Arc<AtomicUsize>) {
    scripted_upstream(|mut stream| async move {
        read_head(&mut stream).await;
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            .await
            .unwrap();
    })
    .await
}

#[tokio::test]
async fn a_request_on_a_reused_connection_the_upstream_closed_is_sent_again() {
    let (upstream, connections) = one_request_per_connection().await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = TcpStream::connect(proxy).await.unwrap();
    for _ in 0..3 {
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let (head, body) = read_response(&mut client).await;
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
        assert_eq!(body, "ok");
        // Let the upstream's close arrive before the next request.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(connections.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_body_that_runs_until_close_is_passed_on_and_the_client_told() {
    let (upstream, _) = scripted_upstream(|mut stream| async move {
        read_head(&mut stream).await;
        stream
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, ")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stream.write_all(b"part two").await.unwrap();
    })
    .await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = connect_and_send(proxy, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    let answer = read_to_end(&mut client).await;
    assert!(answer.contains("connection: close\r\n"), "{answer}");
    assert!(answer.ends_with("\r\n\r\npart one, part two"), "{answer}");
}

#[tokio::test]
async fn chunked_answers_keep_their_chunks_and_trailers() {
    const BODY: &[u8] = b"4\r\nWiki\r\n5;note=x\r\npedia\r\n0\r\nChecksum: 42\r\n\r\n";
    let (upstream, _) = scripted_upstream(|mut stream| async move {
        loop {
            read_head(&mut stream).await;
            let head =
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Checksum\r\n\r\n";
            if stream.write_all(&[&head[..], BODY].concat()).await.is_err() {
                return;
            }
        }
    })
    .await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = TcpStream::connect(proxy).await.unwrap();
    for _ in 0..2 {
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let head = read_head(&mut client).await;
        assert_eq!(field(&head, "transfer-encoding"), Some("chunked"), "{head}");
        assert_eq!(read_exactly(&mut client, BODY.len()).await, BODY);
    }
}

#[tokio::test]
async fn a_garbled_upstream_answer_is_a_bad_gateway() {
    let (upstream, _) = scripted_upstream(|mut stream| async move {
        read_head(&mut stream).await;
        let _ = stream.write_all(b"SMTP ready\r\n\r\n").await;
    })
    .await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = connect_and_send(proxy, b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    let answer = read_to_end(&mut client).await;
    assert!(
        answer.starts_with("HTTP/1.1 502 Bad Gateway\r\n"),
        "{answer}"
    );
    assert!(answer.contains("invalid"), "{answer}");
}

#[tokio::test]
async fn an_injected_error_keeps_the_connection_when_the_body_is_in_hand() {
    let (upstream, probe) = start_upstream().await;
    let agent = Agent::new(AgentConfig::default());
    let proxy = sidecar_with_agent(upstream, agent.clone()).await;
    let only_fail = FaultSpec::try_new(
        FaultKind::Error {
            status: ErrorStatus::new(503).unwrap(),
            body: Some("payment is down".into()),
        },
        1.0,
        MatchRule {
            path_prefix: Some("/fail".into()),
            ..MatchRule::default()
        },
        None,
    )
    .expect("a valid fault");
    agent.put("fail", only_fail).unwrap();
    // A body that came whole with its head is skipped, and the next request on the connection goes through.
    let mut client = connect_and_send(proxy, b"POST /fail HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbodyGET / HTTP/1.1\r\nHost: a\r\n\r\n").await;
    let (head, body) = read_response(&mut client).await;
    assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
    assert_eq!(body, "payment is down");
    assert_eq!(field(&head, "x-tolerant-injected"), Some("error"));
    assert_eq!(field(&head, "connection"), None, "{head}");
    let (head, body) = read_response(&mut client).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(body, "hello");

    // An injected answer to HEAD has no body: the next answer on the connection starts right after its head.
    let mut client = connect_and_send(
        proxy,
        b"HEAD /fail HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    )
    .await;
    let head = read_head(&mut client).await;
    assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
    let (head, body) = read_response(&mut client).await;
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert_eq!(body, "hello");

    // A body still to come would have to be waited for: the answer closes the connection instead.
    let mut client = connect_and_send(
        proxy,
        b"POST /fail HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\npart",
    )
    .await;
    let answer = read_to_end(&mut client).await;
    assert!(answer.starts_with("HTTP/1.1 503 "), "{answer}");
    assert!(answer.contains("connection: close\r\n"), "{answer}");
    assert_eq!(probe.requests.load(Ordering::SeqCst), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threaded_sidecar_spreads_connections_and_answers_on_all_of_them() {
    let (upstream, probe) = start_upstream().await;
    let sidecar = bind_sidecar(upstream, Agent::new(AgentConfig::default())).await;
    let proxy = sidecar.proxy_address().unwrap();
    tokio::spawn(sidecar.serve_threaded(std::num::NonZeroUsize::new(3).unwrap()));
    let mut clients = Vec::new();
    for _ in 0..6 {
        clients.push(TcpStream::connect(proxy).await.unwrap());
    }
    for round in 0..3 {
        for client in &mut clients {
            client
                .write_all(format!("GET /status/20{round} HTTP/1.1\r\nHost: a\r\n\r\n").as_bytes())
                .await
                .unwrap();
        }
        for client in &mut clients {
            let (head, body) = read_response(client).await;
            assert!(head.starts_with(&format!("HTTP/1.1 20{round} ")), "{head}");
            assert_eq!(body, format!("status 20{round}"));
        }
    }
    assert_eq!(probe.requests.load(Ordering::SeqCst), 18);
    // Each client connection drives its own upstream connection.
    assert_eq!(probe.connections.load(Ordering::SeqCst), 6);
}

// Paused clock: the runtime jumps to the next timer whenever it has nothing else to do, so the deadlines below pass
// without waiting for them, and the elapsed (virtual) time is exact.
#[tokio::test(start_paused = true)]
async fn a_head_that_stops_halfway_gets_408_after_the_head_read_timeout() {
    let (upstream, probe) = start_upstream().await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = TcpStream::connect(proxy).await.unwrap();
    let started = tokio::time::Instant::now();
    client
        .write_all(b"GET / HTTP/1.1\r\nHost: a\r\nX-Trick")
        .await
        .unwrap();
    let mut received = Vec::new();
    client.read_to_end(&mut received).await.unwrap();
    let received = String::from_utf8(received).unwrap();
    assert!(received.starts_with("HTTP/1.1 408 "), "{received}");
    let waited = started.elapsed();
    assert!(waited >= agent::sidecar::HEADER_READ_TIMEOUT, "{waited:?}");
    assert!(waited < agent::sidecar::KEEP_ALIVE_TIMEOUT, "{waited:?}");
    assert_eq!(probe.requests.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn an_idle_keep_alive_connection_is_closed_within_two_idle_timeouts() {
    let (upstream, _) = start_upstream().await;
    let proxy = sidecar_in_front_of(upstream).await;
    let mut client = TcpStream::connect(proxy).await.unwrap();
    let idle_timeout = agent::sidecar::KEEP_ALIVE_TIMEOUT;
    // Requests keep the connection open past one timeout.
    for _ in 0..3 {
        tokio::time::sleep(idle_timeout / 2).await;
        client
            .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
            .await
            .unwrap();
        let (head, _) = read_response(&mut client).await;
        assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    }
    let last_request = tokio::time::Instant::now();
    let mut rest = Vec::new();
    client.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "{rest:?}");
    let idle = last_request.elapsed();
    assert!(
        idle >= idle_timeout && idle <= 2 * idle_timeout,
        "closed after {idle:?} idle"
    );
}
