//! The tower layer inside an axum app served on loopback: what a client sees for reset and hang faults when no
//! socket is reachable from the layer (hyper closes the connection before any response byte is written).

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use agent::api::{FaultKind, FaultSpec, MatchRule};
use agent::{Agent, AgentConfig, RawAgentConfig};
use axum::Router;
use axum::routing::get;
use common::PATIENCE;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn serve_app(agent: &Agent) -> SocketAddr {
    let app = Router::new()
        .route("/charge", get(|| async { "charged" }))
        .layer(agent::FaultLayer::new(agent.clone()))
        .merge(agent::fault_api::router(agent.clone()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

/// One raw GET; returns the bytes read before the server closed (or the read error's kind).
async fn raw_get(address: SocketAddr, path: &str) -> Result<Vec<u8>, std::io::ErrorKind> {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut received = Vec::new();
    let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut received))
        .await
        .expect("the server neither answered nor closed");
    read.map(|_| received).map_err(|error| error.kind())
}

fn fault(kind: FaultKind) -> FaultSpec {
    FaultSpec::try_new(kind, 1.0, MatchRule::default(), None).expect("a valid fault")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_faults_the_app_answers() {
    let agent = Agent::new(AgentConfig::default());
    let address = serve_app(&agent).await;
    let answer = raw_get_with_close(address, "/charge").await;
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("charged"), "{answer}");
    assert_eq!(agent.requests_seen(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_in_the_layer_closes_the_connection_before_any_response_byte() {
    let agent = Agent::new(AgentConfig::default());
    agent.put("r", fault(FaultKind::Reset)).unwrap();
    let address = serve_app(&agent).await;
    // hyper had buffered the head but drops it with the connection: an orderly close, zero bytes.
    assert_eq!(raw_get(address, "/charge").await, Ok(Vec::new()));
    // The control API behind the same server still answers.
    let listed = raw_get_with_close(address, "/_agent/faults").await;
    assert!(listed.starts_with("HTTP/1.1 200 OK"), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::disallowed_methods)] // waits on a real socket: wall time is what it measures
async fn a_hang_in_the_layer_closes_the_connection_at_the_hold_cap() {
    let hold_cap = Duration::from_millis(300);
    let agent = Agent::new(
        RawAgentConfig {
            max_hold: hold_cap,
            ..RawAgentConfig::default()
        }
        .build()
        .expect("a valid agent config"),
    );
    agent.put("h", fault(FaultKind::Hang)).unwrap();
    let address = serve_app(&agent).await;
    let started = std::time::Instant::now();
    let received = raw_get(address, "/charge").await.unwrap_or_default();
    assert!(started.elapsed() >= hold_cap);
    assert!(
        received.is_empty(),
        "got {:?}",
        String::from_utf8_lossy(&received)
    );
    assert_eq!(agent.requests_held(), 0);
}

async fn raw_get_with_close(address: SocketAddr, path: &str) -> String {
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
