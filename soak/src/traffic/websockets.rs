//! Dashboard websocket clients: [`READERS`] that read every frame (and connect again, after a second, when the
//! dashboard closes them) and [`STALLED`] that connect and never read, until the deadline.

use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

/// Clients reading every frame.
pub const READERS: usize = 40;
/// Clients that never read.
pub const STALLED: usize = 10;
/// How long a connection attempt may take.
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

/// What the clients saw: connections made, frames read, connections the dashboard refused or ended.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    pub connects: u64,
    pub frames: u64,
    pub refused: u64,
    pub closed: u64,
}

async fn reader(url: String, deadline: Instant) -> Seen {
    let mut seen = Seen::default();
    while Instant::now() < deadline {
        let connect = tokio_tungstenite::connect_async(url.as_str());
        match tokio::time::timeout(CONNECT_LIMIT, connect).await {
            Ok(Ok((mut socket, _))) => {
                seen.connects += 1;
                loop {
                    match tokio::time::timeout_at(deadline, socket.next()).await {
                        Err(_) => return seen,
                        Ok(Some(Ok(_))) => seen.frames += 1,
                        Ok(_) => break,
                    }
                }
                seen.closed += 1;
            }
            _ => seen.refused += 1,
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    seen
}

async fn stalled(url: String, deadline: Instant) -> Seen {
    let mut seen = Seen::default();
    let connect = tokio_tungstenite::connect_async(url.as_str());
    match tokio::time::timeout(CONNECT_LIMIT, connect).await {
        Ok(Ok((socket, _))) => {
            seen.connects += 1;
            tokio::time::sleep_until(deadline).await;
            drop(socket);
        }
        _ => seen.refused += 1,
    }
    seen
}

/// Runs every client until `deadline`; prints what they saw.
pub async fn run(url: String, deadline: Instant) -> anyhow::Result<()> {
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..READERS {
        clients.spawn(reader(url.clone(), deadline));
    }
    for _ in 0..STALLED {
        clients.spawn(stalled(url.clone(), deadline));
    }
    let mut total = Seen::default();
    while let Some(seen) = clients.join_next().await {
        let seen = seen?;
        total.connects += seen.connects;
        total.frames += seen.frames;
        total.refused += seen.refused;
        total.closed += seen.closed;
    }
    eprintln!(
        "websockets: {READERS} reading, {STALLED} never reading: {} connections, {} frames read, {} refused, {} closed by the dashboard",
        total.connects, total.frames, total.refused, total.closed
    );
    Ok(())
}
