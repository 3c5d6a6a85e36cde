//! The read-only event streams' one loop (`/_agent/stream`, every service's `/_breakers/stream`): each event
//! from a broadcast channel goes out as one JSON text until the client leaves, the source closes or the server
//! stops — and a client that does not take what it is sent is dropped. Its socket's buffers fill, the write
//! does not finish within the send timeout, and the loop ends ([`StreamEnd::Stalled`]), as the dashboard's `/ws`
//! drops a stalled client; a reader on the same channel is not held up by it (each has its own receiver).
//! Generic over the transport so tests drive it with channels.

use std::time::Duration;

use futures::{Sink, SinkExt, Stream, StreamExt};
use serde::Serialize;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

/// How long one write to a stream client may take before the client is dropped (the dashboard's `/ws` too).
pub const STREAM_SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a stream's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The client closed the socket (its incoming side ended).
    ClientLeft,
    /// A write did not complete within the send timeout: the client was dropped.
    Stalled,
    /// A write failed.
    SinkError,
    /// The event source went away.
    SourceClosed,
    /// `stop` completed (the server is shutting down).
    Stopped,
}

/// Forwards events as JSON texts; see the module documentation. A receiver that lagged gets `lagged(missed)`
/// sent in place of what it missed, when that gives an event.
pub async fn forward_json<T, Outgoing, Incoming>(
    mut events: broadcast::Receiver<T>,
    outgoing: &mut Outgoing,
    mut incoming: Incoming,
    send_timeout: Duration,
    lagged: impl Fn(u64) -> Option<T>,
    stop: impl Future<Output = ()>,
) -> StreamEnd
where
    T: Serialize + Clone,
    Outgoing: Sink<String> + Unpin,
    Incoming: Stream + Unpin,
{
    let mut stop = std::pin::pin!(stop);
    loop {
        let event = tokio::select! {
            received = events.recv() => match received {
                Ok(event) => event,
                Err(RecvError::Lagged(missed)) => match lagged(missed) {
                    Some(event) => event,
                    None => continue,
                },
                Err(RecvError::Closed) => return StreamEnd::SourceClosed,
            },
            message = incoming.next() => match message {
                Some(_) => continue,
                None => return StreamEnd::ClientLeft,
            },
            () = &mut stop => return StreamEnd::Stopped,
        };
        let Ok(text) = serde_json::to_string(&event) else {
            continue;
        };
        match tokio::time::timeout(send_timeout, outgoing.send(text)).await {
            Err(_) => return StreamEnd::Stalled,
            Ok(Err(_)) => return StreamEnd::SinkError,
            Ok(Ok(())) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::channel::mpsc;
    use std::future::pending;

    /// A sink that never takes anything: a client that stopped reading, its buffers full.
    struct Stuck;

    impl Sink<String> for Stuck {
        type Error = ();
        fn poll_ready(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), ()>> {
            std::task::Poll::Pending
        }
        fn start_send(self: std::pin::Pin<&mut Self>, _: String) -> Result<(), ()> {
            Err(())
        }
        fn poll_flush(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), ()>> {
            std::task::Poll::Pending
        }
        fn poll_close(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), ()>> {
            std::task::Poll::Pending
        }
    }

    /// The tests' send timeout.
    const TIMEOUT: Duration = Duration::from_secs(5);

    /// [`forward_json`] with [`TIMEOUT`] and nothing sent for a lag, until `stop`.
    async fn forward_until<Outgoing, Incoming>(
        events: broadcast::Receiver<u32>,
        outgoing: &mut Outgoing,
        incoming: Incoming,
        stop: impl Future<Output = ()>,
    ) -> StreamEnd
    where
        Outgoing: Sink<String> + Unpin,
        Incoming: Stream + Unpin,
    {
        forward_json(events, outgoing, incoming, TIMEOUT, |_| None, stop).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_does_not_read_is_dropped_and_a_reader_keeps_receiving() {
        let (sender, _) = broadcast::channel::<u32>(16);
        let stuck_events = sender.subscribe();
        let (_stuck_in, stuck_incoming) = mpsc::unbounded::<()>();
        let stuck = tokio::spawn(async move {
            forward_until(stuck_events, &mut Stuck, stuck_incoming, pending()).await
        });
        let reader_events = sender.subscribe();
        let (mut out, mut received) = mpsc::unbounded::<String>();
        let (_reader_in, reader_incoming) = mpsc::unbounded::<()>();
        let stop = tokio::time::sleep(Duration::from_secs(60));
        let reader = tokio::spawn(async move {
            forward_until(reader_events, &mut out, reader_incoming, stop).await
        });

        sender.send(1).unwrap();
        assert_eq!(received.next().await.as_deref(), Some("1"));
        // The stuck client's write never finishes: dropped once the send timeout has passed, not before.
        tokio::time::sleep(TIMEOUT - Duration::from_millis(1)).await;
        assert!(!stuck.is_finished());
        tokio::time::sleep(Duration::from_millis(2)).await;
        assert_eq!(stuck.await.unwrap(), StreamEnd::Stalled);
        // The reader is not held up by it.
        for n in 2..=40 {
            sender.send(n).unwrap();
            assert_eq!(received.next().await, Some(n.to_string()));
        }
        assert_eq!(reader.await.unwrap(), StreamEnd::Stopped);
    }

    #[tokio::test]
    async fn the_loop_ends_when_the_client_leaves_or_the_source_closes() {
        let (sender, _) = broadcast::channel::<u32>(4);
        let (mut out, _received) = mpsc::unbounded::<String>();
        let (client_in, incoming) = mpsc::unbounded::<()>();
        drop(client_in);
        let events = sender.subscribe();
        let end = forward_until(events, &mut out, incoming, pending()).await;
        assert_eq!(end, StreamEnd::ClientLeft);
        let events = sender.subscribe();
        drop(sender);
        let (_client_in, incoming) = mpsc::unbounded::<()>();
        let end = forward_until(events, &mut out, incoming, pending()).await;
        assert_eq!(end, StreamEnd::SourceClosed);
    }
}
