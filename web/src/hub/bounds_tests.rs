//! The hub's memory per client: one snapshot shared by every client between two frames, and a client's write
//! batch bounded in bytes whatever the frames waiting for it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Sink;
use parking_lot::Mutex;

use super::socket::{ClientMessage, serve_client};
use super::*;

fn big_note(index: u64, bytes: usize) -> LiveEvent {
    LiveEvent::Annotation(Annotation {
        at_ms: index,
        text: "x".repeat(bytes),
        ..Annotation::default()
    })
}

#[test]
fn every_client_between_two_frames_shares_one_snapshot() {
    let hub = Hub::new(HubConfig::default());
    hub.publish(big_note(1, 10_000));
    hub.flush();
    let subscriptions: Vec<Subscription> = (0..300).map(|_| hub.subscribe()).collect();
    let first = subscriptions[0].snapshot.text.as_str().as_ptr();
    for subscription in &subscriptions {
        assert_eq!(
            subscription.snapshot.text.as_str().as_ptr(),
            first,
            "one serialized snapshot, shared"
        );
    }
    hub.publish(big_note(2, 10));
    hub.flush();
    let after = hub.subscribe();
    assert_ne!(after.snapshot.text.as_str().as_ptr(), first);
    assert_eq!(after.snapshot.frame, 2, "a new frame, a new snapshot");
    assert!(after.snapshot.text.as_str().contains("\"at_ms\":2"));
}

/// A sink that takes every frame and records the bytes of each batch between two flushes.
#[derive(Clone, Default)]
struct BatchRecorder {
    current: Arc<Mutex<usize>>,
    batches: Arc<Mutex<Vec<usize>>>,
}

impl Sink<Frame> for BatchRecorder {
    type Error = ();
    fn poll_ready(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        Poll::Ready(Ok(()))
    }
    fn start_send(self: Pin<&mut Self>, frame: Frame) -> Result<(), ()> {
        *self.current.lock() += frame.text.len();
        Ok(())
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        let bytes = std::mem::take(&mut *self.current.lock());
        if bytes > 0 {
            self.batches.lock().push(bytes);
        }
        Poll::Ready(Ok(()))
    }
    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Result<(), ()>> {
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn a_write_batch_stops_at_the_client_buffer_bytes() {
    let budget = 32 * 1024;
    let hub = Hub::new(HubConfig {
        client_buffer_bytes: budget,
        frames_buffered: 256,
        ..HubConfig::default()
    });
    let subscription = hub.subscribe();
    // 40 frames of about 10 KB each wait before the client writes anything.
    for index in 0..40 {
        hub.publish(big_note(index, 10_000));
        hub.flush();
    }
    let largest_frame = 10_200;
    let sink = BatchRecorder::default();
    let (closer, incoming) = futures::channel::mpsc::unbounded::<ClientMessage>();
    let served = tokio::spawn(serve_client(
        subscription,
        sink.clone(),
        incoming,
        std::time::Duration::from_secs(5),
    ));
    while sink.batches.lock().iter().sum::<usize>() < 40 * 10_000 {
        tokio::task::yield_now().await;
    }
    drop(closer);
    let _ = served.await;
    let batches = sink.batches.lock().clone();
    assert!(batches.len() > 2, "{batches:?}");
    for bytes in &batches {
        assert!(
            *bytes < budget + largest_frame,
            "a batch of {bytes} bytes over a budget of {budget}: {batches:?}"
        );
    }
}
