//! The hub: fans live events out to every dashboard websocket without ever waiting for one of them.
//!
//! Why this shape:
//!
//! * **Batching.** At 10,000 events/s and 100 browsers a per-event message would be a million websocket
//!   writes a second. Producers only append to a pending list ([`Hub::publish`], a short mutex push); a
//!   flusher turns the list into one JSON frame every `frame_interval` (or earlier when `max_events_per_frame`
//!   are waiting) and serializes it **once** for every client.
//! * **Bounded, per client.** Frames go through a `tokio::sync::broadcast` ring of `frames_buffered` entries.
//!   The ring is shared, so memory is bounded by `frames_buffered` frames whatever the number of clients, and
//!   each client can fall at most that far behind. A client that falls further *skips ahead*: it receives a
//!   fresh snapshot instead of the frames it missed ([`Next::Resync`]). A client whose socket does not take a
//!   frame within `send_timeout` is *dropped* (see [`socket::serve_client`]). Neither case touches the
//!   producers or the other clients: `broadcast::Sender::send` never waits.
//! * **Late joiners first see the current state.** Every event is folded into a [`LiveState`] (latest breaker
//!   states, the live window's last hour of transitions, samples, faults and annotations, progress) under the
//!   same lock that sends the frame, and a subscriber takes its snapshot and its receiver under that lock too, so the first
//!   frame after the snapshot is exactly the next one: no gap, no duplicate.
//! * **Order.** One flusher, one ring: every client sees frames in `frame` order and events in publish order.
//! * **Memory per client, in bytes.** A snapshot is serialized once per frame number and shared (`Utf8Bytes`
//!   is reference-counted `Bytes`) by every client that subscribes or resyncs before the next frame. A client's
//!   write batch (what sits in its socket's buffer until the kernel takes it) stops growing once it holds
//!   `client_buffer_bytes`: at most that plus one message per client, whatever the frames' sizes. Anonymous
//!   readers (no session, no token) are at most `anonymous_readers` at once ([`Hub::subscribe_anonymous`]);
//!   `/ws` answers 503 beyond.

#[cfg(test)]
mod bounds_tests;
mod event;
pub mod socket;
mod state;
mod status;
#[cfg(test)]
mod tests;
mod window;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use parking_lot::Mutex;
use tokio::sync::{Notify, broadcast};

pub use event::{
    Annotation, BreakerBoard, BreakerTile, ContainerStats, ContainerUse, EndpointSample,
    ExperimentChange, FaultChange, GameDayLoad, LATENCY_BUCKET_BOUNDS_US, LiveEvent, LiveSample,
    LoadWorkers, ModeChange, OutcomeCounts, PoolSample, RunProgress, TILE_WINDOW_S, TileConfig,
    TileWindow, bucketize,
};
pub use state::{BreakerLatest, HistoryLimits, LiveState};
pub use status::{ExperimentStatus, FaultChangeEvent};

/// Tuning of the hub.
#[derive(Debug, Clone, Copy)]
pub struct HubConfig {
    /// How often pending events become a frame.
    pub frame_interval: Duration,
    /// A frame is cut early once this many events are pending.
    pub max_events_per_frame: usize,
    /// Frames a client may fall behind before it skips ahead (shared ring; bounds memory).
    pub frames_buffered: usize,
    /// A socket that does not accept a frame within this long is dropped.
    pub send_timeout: Duration,
    /// Bytes a client's one write batch may hold (the first message of a batch always goes).
    pub client_buffer_bytes: usize,
    /// Readers without a session or token connected at once; `/ws` answers 503 beyond.
    pub anonymous_readers: usize,
    pub history: HistoryLimits,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            frame_interval: Duration::from_millis(25),
            max_events_per_frame: 1_000,
            frames_buffered: 128,
            send_timeout: Duration::from_secs(5),
            client_buffer_bytes: 1 << 20,
            anonymous_readers: 64,
            history: HistoryLimits::default(),
        }
    }
}

/// One websocket message: a JSON object serialized once and shared by every client.
///
/// `{"type":"events","frame":N,"events":[…]}` or `{"type":"snapshot","frame":N,"state":{…}}`, where a
/// snapshot's `frame` is the last frame already folded into its state.
#[derive(Debug, Clone)]
pub struct Frame {
    pub frame: u64,
    pub text: Utf8Bytes,
}

struct Shared {
    state: LiveState,
    frames: broadcast::Sender<Frame>,
    last_frame: u64,
    /// The snapshot of `last_frame`, once a client asked for it: shared by every client until the next frame.
    snapshot: Option<Frame>,
}

struct Inner {
    config: HubConfig,
    pending: Mutex<Vec<LiveEvent>>,
    flush_wanted: Notify,
    shared: Mutex<Shared>,
    clients: AtomicUsize,
    anonymous: AtomicUsize,
}

/// Cheap to clone; every clone is the same hub.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("config", &self.inner.config)
            .field("clients", &self.clients())
            .finish()
    }
}

/// What a subscriber gets next.
#[derive(Debug)]
pub enum Next {
    /// The next frame, in order.
    Frame(Frame),
    /// The client fell more than `frames_buffered` behind: `skipped` frames are gone; here is a fresh
    /// snapshot to continue from.
    Resync { snapshot: Frame, skipped: u64 },
    /// The hub is gone.
    Closed,
}

/// A client's view of the hub: its snapshot, then frames.
#[derive(Debug)]
pub struct Subscription {
    /// The state at the moment of subscribing (send this first).
    pub snapshot: Frame,
    frames: broadcast::Receiver<Frame>,
    hub: Hub,
    /// Counted among the anonymous readers.
    anonymous: bool,
}

impl Subscription {
    /// The hub's tuning (send timeout, buffer bytes).
    pub fn config(&self) -> &HubConfig {
        self.hub.config()
    }

    pub async fn next(&mut self) -> Next {
        match self.frames.recv().await {
            Ok(frame) => Next::Frame(frame),
            Err(broadcast::error::RecvError::Lagged(skipped)) => self.resync(skipped),
            Err(broadcast::error::RecvError::Closed) => Next::Closed,
        }
    }

    /// What is already waiting, without waiting (used to coalesce writes); `None` if nothing is.
    pub fn try_next(&mut self) -> Option<Next> {
        match self.frames.try_recv() {
            Ok(frame) => Some(Next::Frame(frame)),
            Err(broadcast::error::TryRecvError::Lagged(skipped)) => Some(self.resync(skipped)),
            Err(broadcast::error::TryRecvError::Closed) => Some(Next::Closed),
            Err(broadcast::error::TryRecvError::Empty) => None,
        }
    }

    fn resync(&mut self, skipped: u64) -> Next {
        let (snapshot, frames) = self.hub.snapshot_and_receiver();
        self.frames = frames;
        Next::Resync { snapshot, skipped }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.inner.clients.fetch_sub(1, Ordering::Relaxed);
        if self.anonymous {
            self.hub.inner.anonymous.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Hub {
    pub fn new(config: HubConfig) -> Hub {
        let (frames, _) = broadcast::channel(config.frames_buffered.max(1));
        Hub {
            inner: Arc::new(Inner {
                config,
                pending: Mutex::new(Vec::with_capacity(config.max_events_per_frame)),
                flush_wanted: Notify::new(),
                shared: Mutex::new(Shared {
                    state: LiveState::new(config.history),
                    frames,
                    last_frame: 0,
                    snapshot: None,
                }),
                clients: AtomicUsize::new(0),
                anonymous: AtomicUsize::new(0),
            }),
        }
    }

    pub fn config(&self) -> &HubConfig {
        &self.inner.config
    }

    /// Queues an event for the next frame. Never waits for clients; if no flusher keeps up and the queue
    /// reaches four frames' worth, this call flushes itself (bounded work, independent of clients).
    pub fn publish(&self, event: LiveEvent) {
        let pending_len = {
            let mut pending = self.inner.pending.lock();
            pending.push(event);
            pending.len()
        };
        let max = self.inner.config.max_events_per_frame.max(1);
        if pending_len >= 4 * max {
            self.flush();
        } else if pending_len >= max {
            self.inner.flush_wanted.notify_one();
        }
    }

    /// Turns every pending event into one frame and sends it; returns its number, or `None` if nothing was
    /// pending. The explicit step the flusher (and tests) call.
    pub fn flush(&self) -> Option<u64> {
        // Take the pending events under the frame lock, so two flushes (the flusher and an inline one)
        // can never send their frames in the opposite order of their events.
        let mut shared = self.inner.shared.lock();
        let events = std::mem::take(&mut *self.inner.pending.lock());
        if events.is_empty() {
            return None;
        }
        for event in &events {
            shared.state.apply(event);
        }
        shared.last_frame += 1;
        shared.snapshot = None;
        let frame = shared.last_frame;
        let text = events_json(frame, &events);
        // Err only means "no receivers": nothing to do.
        let _ = shared.frames.send(Frame {
            frame,
            text: Utf8Bytes::from(text),
        });
        Some(frame)
    }

    /// Flushes every `frame_interval`, or sooner when a full frame is pending, until the hub is dropped.
    pub fn spawn_flusher(&self) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(&self.inner);
        let interval = self.inner.config.frame_interval;
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let Some(inner) = weak.upgrade() else { return };
                let hub = Hub { inner };
                tokio::select! {
                    _ = ticker.tick() => {}
                    _ = hub.inner.flush_wanted.notified() => {}
                }
                hub.flush();
                // Do not hold the hub alive while sleeping.
                drop(hub);
            }
        })
    }

    /// Subscribes a client: the current state, then every later frame.
    pub fn subscribe(&self) -> Subscription {
        let (snapshot, frames) = self.snapshot_and_receiver();
        self.inner.clients.fetch_add(1, Ordering::Relaxed);
        Subscription {
            snapshot,
            frames,
            hub: self.clone(),
            anonymous: false,
        }
    }

    /// Subscribes a reader without a session or token, unless `anonymous_readers` are connected already
    /// (`None`: the caller answers 503).
    pub fn subscribe_anonymous(&self) -> Option<Subscription> {
        let cap = self.inner.config.anonymous_readers;
        self.inner
            .anonymous
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                (now < cap).then_some(now + 1)
            })
            .ok()?;
        let mut subscription = self.subscribe();
        subscription.anonymous = true;
        Some(subscription)
    }

    /// Connected anonymous readers.
    pub fn anonymous_readers(&self) -> usize {
        self.inner.anonymous.load(Ordering::Relaxed)
    }

    /// Connected subscriptions.
    pub fn clients(&self) -> usize {
        self.inner.clients.load(Ordering::Relaxed)
    }

    /// A copy of the current state (after the last flushed frame).
    pub fn state(&self) -> LiveState {
        self.inner.shared.lock().state.clone()
    }

    /// The latest breaker board (after the last flushed frame), without copying the rest of the state.
    pub fn board(&self) -> Option<BreakerBoard> {
        self.inner.shared.lock().state.board.clone()
    }

    /// The faults in force (after the last flushed frame), without copying the window's history.
    pub fn active_faults(&self) -> Vec<FaultChange> {
        let shared = self.inner.shared.lock();
        shared.state.active_faults.values().cloned().collect()
    }

    /// Where the running (or last) experiment's users run (after the last flushed frame).
    pub fn workers(&self) -> Option<LoadWorkers> {
        self.inner.shared.lock().state.workers.clone()
    }

    /// The snapshot of the last frame (serialized once per frame, shared by every client after) and a receiver of
    /// the frames after it, under one lock.
    fn snapshot_and_receiver(&self) -> (Frame, broadcast::Receiver<Frame>) {
        let mut shared = self.inner.shared.lock();
        let snapshot = match &shared.snapshot {
            Some(snapshot) => snapshot.clone(),
            None => {
                let snapshot = Frame {
                    frame: shared.last_frame,
                    text: Utf8Bytes::from(snapshot_json(shared.last_frame, &shared.state)),
                };
                shared.snapshot = Some(snapshot.clone());
                snapshot
            }
        };
        (snapshot, shared.frames.subscribe())
    }
}

fn events_json(frame: u64, events: &[LiveEvent]) -> String {
    frame_json("events", frame, "events", events, 64 + events.len() * 160)
}

fn snapshot_json(frame: u64, state: &LiveState) -> String {
    // The histories' JSON plus room for the rest.
    let histories = state.samples.bytes() + state.transitions.bytes() + state.faults.bytes();
    frame_json("snapshot", frame, "state", state, 4096 + histories)
}

/// `{"type":KIND,"frame":FRAME,FIELD:BODY}`, written straight into one buffer of `capacity` bytes.
fn frame_json(
    kind: &str,
    frame: u64,
    field: &str,
    body: &(impl serde::Serialize + ?Sized),
    capacity: usize,
) -> String {
    let mut out = Vec::with_capacity(capacity);
    // Writing into a Vec and serializing plain data into it cannot fail.
    std::io::Write::write_fmt(
        &mut out,
        format_args!("{{\"type\":\"{kind}\",\"frame\":{frame},\"{field}\":"),
    )
    .expect("a Vec takes every byte");
    serde_json::to_writer(&mut out, body).expect("live frames serialize");
    out.push(b'}');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}
