//! One client's websocket loop, generic over `Sink`/`Stream` so tests drive it with plain channels and the
//! server drives it with an axum `WebSocket`.

use std::time::Duration;

use futures::{Sink, SinkExt, Stream, StreamExt};

use super::{Frame, Next, Subscription};

/// Frames already waiting that are written together before one flush.
const COALESCE_FRAMES: usize = 32;

/// What the client sent us (only its end matters: the dashboard's socket is one-way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientMessage {
    Close,
    Other,
}

/// Why a client's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientEnd {
    /// The client closed the socket (or its stream ended).
    Closed,
    /// A write did not complete within the send timeout: the client was dropped.
    Stalled,
    /// The socket failed.
    SinkError,
    /// The hub shut down.
    HubGone,
}

/// Sends the snapshot, then every frame, until the client leaves, stalls or the hub goes away. A client
/// that falls too far behind gets a fresh snapshot and continues from there. One write batch takes frames
/// already waiting until it holds the hub's `client_buffer_bytes` (the rest wait in the shared ring).
pub async fn serve_client<S, R>(
    mut subscription: Subscription,
    mut sink: S,
    mut incoming: R,
    send_timeout: Duration,
) -> ClientEnd
where
    S: Sink<Frame> + Unpin,
    R: Stream<Item = ClientMessage> + Unpin,
{
    let buffer_bytes = subscription.hub.config().client_buffer_bytes;
    let snapshot = subscription.snapshot.clone();
    match tokio::time::timeout(send_timeout, sink.send(snapshot)).await {
        Err(_) => return ClientEnd::Stalled,
        Ok(Err(_)) => return ClientEnd::SinkError,
        Ok(Ok(())) => {}
    }
    loop {
        let next = tokio::select! {
            biased;
            message = incoming.next() => match message {
                None | Some(ClientMessage::Close) => return ClientEnd::Closed,
                Some(ClientMessage::Other) => continue,
            },
            next = subscription.next() => next,
        };
        let first = match next {
            Next::Frame(frame) => frame,
            Next::Resync { snapshot, .. } => snapshot,
            Next::Closed => return ClientEnd::HubGone,
        };
        let written = tokio::time::timeout(send_timeout, async {
            let mut batch_bytes = first.text.len();
            sink.feed(first).await?;
            for _ in 0..COALESCE_FRAMES {
                if batch_bytes >= buffer_bytes {
                    break;
                }
                let frame = match subscription.try_next() {
                    Some(Next::Frame(frame)) => frame,
                    Some(Next::Resync { snapshot, .. }) => snapshot,
                    Some(Next::Closed) | None => break,
                };
                batch_bytes += frame.text.len();
                sink.feed(frame).await?;
            }
            sink.flush().await
        })
        .await;
        match written {
            Err(_) => return ClientEnd::Stalled,
            Ok(Err(_)) => return ClientEnd::SinkError,
            Ok(Ok(())) => {}
        }
    }
}
