//! The dashboard against a client trickling its request head: closed after the head-read timeout (shortened
//! here), while a client that sends its head at once is served.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use controller::test_support::TempStore;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use web::{DashboardConfig, ExternalTestbed, RunningDashboard};

/// Sends a request head one byte every 100 ms; returns how long the server kept the connection open, or `None`
/// if it was still open after `patience`.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn trickle_head(addr: SocketAddr, patience: Duration) -> Option<Duration> {
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = b"GET / HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let started = Instant::now();
    for byte in head.iter() {
        if socket.write_all(&[*byte]).await.is_err() {
            return Some(started.elapsed());
        }
        let mut buffer = [0u8; 256];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(100), socket.read(&mut buffer)).await
        {
            return Some(started.elapsed());
        }
        if started.elapsed() > patience {
            return None;
        }
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_request_head_is_closed_after_the_head_read_timeout() {
    let dir = TempStore::new("web-slow-clients-test");
    let dashboard = RunningDashboard::start(DashboardConfig {
        bind: "127.0.0.1:0".parse().expect("addr"),
        database: dir.location(),
        token: Some("slow-test-token".into()),
        // Nobody listens there: nothing here runs an experiment.
        external: Some(ExternalTestbed {
            frontend: "127.0.0.1:9".parse().expect("addr"),
            services: Vec::new(),
            agent: "http://127.0.0.1:9".into(),
        }),
        head_read_timeout: Duration::from_millis(500),
        ..DashboardConfig::default()
    })
    .await
    .expect("dashboard starts");
    let addr = dashboard.addr();
    let open_for = trickle_head(addr, Duration::from_secs(5)).await;
    assert!(
        open_for.is_some_and(|open_for| open_for >= Duration::from_millis(500)),
        "kept open {open_for:?}"
    );
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    socket
        .write_all(b"GET /api/experiments HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    dashboard.shutdown().await;
}

#[tokio::test]
async fn a_head_read_timeout_out_of_bounds_is_refused_naming_the_field() {
    let error = RunningDashboard::start(DashboardConfig {
        bind: "127.0.0.1:0".parse().expect("addr"),
        head_read_timeout: Duration::ZERO,
        ..DashboardConfig::default()
    })
    .await
    .expect_err("refused");
    assert!(error.to_string().contains("head_read_timeout"), "{error}");
}
