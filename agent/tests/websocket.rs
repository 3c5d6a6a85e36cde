//! `GET /_agent/stream` over a real websocket: applied, removed and expired events arrive as JSON text.

use std::time::Duration;

use agent::api::{AgentEvent, ErrorStatus, FaultKind, FaultSpec, MatchRule, RemovalReason};
use agent::{Agent, AgentConfig};
use futures::StreamExt;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::Message;

const PATIENCE: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_carries_applied_removed_and_expired_events() {
    let agent = Agent::new(AgentConfig::default());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = agent::fault_api::router(agent.clone());
    tokio::spawn(async move { axum::serve(listener, router).await });

    let (mut socket, _) = tokio_tungstenite::connect_async(format!("ws://{address}/_agent/stream"))
        .await
        .unwrap();
    let mut next_event = async || -> AgentEvent {
        loop {
            let message = tokio::time::timeout(PATIENCE, socket.next())
                .await
                .expect("no event in time")
                .expect("stream ended")
                .unwrap();
            if let Message::Text(text) = message {
                return serde_json::from_str(&text).unwrap();
            }
        }
    };

    agent
        .put("gone", FaultSpec::error(500, 1.0).expect("a valid fault"))
        .unwrap();
    agent.remove("gone").unwrap();
    let short = FaultSpec::try_new(
        FaultKind::Error {
            status: ErrorStatus::new(500).unwrap(),
            body: None,
        },
        1.0,
        MatchRule::default(),
        Some(Duration::from_millis(200)),
    )
    .expect("a valid fault");
    agent.put("short", short).unwrap();

    assert!(
        matches!(next_event().await, AgentEvent::Applied { id, renewed: false, .. } if id == "gone")
    );
    assert!(matches!(
        next_event().await,
        AgentEvent::Removed { id, reason: RemovalReason::Deleted, .. } if id == "gone"
    ));
    assert!(
        matches!(next_event().await, AgentEvent::Applied { id, lease_ms: 200, .. } if id == "short")
    );
    let expired = next_event().await;
    assert!(
        matches!(expired, AgentEvent::Expired { ref id, .. } if id == "short"),
        "{expired:?}"
    );
}
