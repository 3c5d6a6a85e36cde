//! Hub tests: snapshots for late joiners, order, bounded lag, stalled clients dropped without slowing anyone.

use controller::test_support;
use std::time::Duration;

use breaker::{Reason, State, TransitionDetail, TransitionEvent};
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use serde_json::Value;

use super::socket::{ClientEnd, ClientMessage, serve_client};
use super::*;

fn transition(breaker: &str, from: State, to: State, seq: u64) -> LiveEvent {
    LiveEvent::Transition(TransitionEvent {
        service: breaker.split("->").next().unwrap_or("frontend").to_owned(),
        breaker: breaker.to_owned(),
        from,
        to,
        reason: Reason::ConsecutiveFailures,
        detail: TransitionDetail::default(),
        at_ms: 1_000 + seq,
        seq,
        shadow: false,
        source: None,
    })
}

fn note(index: u64) -> LiveEvent {
    LiveEvent::Annotation(Annotation {
        at_ms: index,
        text: format!("n{index}"),
        ..Annotation::default()
    })
}

fn parse(frame: &Frame) -> Value {
    serde_json::from_str(frame.text.as_str()).expect("frame is JSON")
}

/// Annotation indices carried by an events frame.
fn notes_in(value: &Value) -> Vec<u64> {
    value["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .filter(|event| event["type"] == "annotation")
                .map(|event| event["at_ms"].as_u64().expect("at_ms"))
                .collect()
        })
        .unwrap_or_default()
}

fn small_hub(frames_buffered: usize) -> Hub {
    Hub::new(HubConfig {
        frames_buffered,
        max_events_per_frame: 100,
        send_timeout: Duration::from_secs(2),
        ..HubConfig::default()
    })
}

#[test]
fn flush_with_nothing_pending_sends_nothing() {
    let hub = small_hub(8);
    assert_eq!(hub.flush(), None);
    hub.publish(note(1));
    assert_eq!(hub.flush(), Some(1));
    assert_eq!(hub.flush(), None);
}

#[tokio::test]
async fn late_joiner_gets_the_current_state_then_exactly_the_next_frame() {
    let hub = small_hub(8);
    hub.publish(transition(
        "frontend->checkout",
        State::Closed,
        State::Open,
        1,
    ));
    hub.publish(transition(
        "checkout->payment",
        State::Closed,
        State::Open,
        1,
    ));
    hub.publish(transition(
        "checkout->payment",
        State::Open,
        State::HalfOpen,
        2,
    ));
    hub.publish(LiveEvent::Fault(FaultChange {
        at_ms: 5,
        event: FaultChangeEvent::Applied,
        fault_id: "f1".into(),
        target: "payment".into(),
        kind: "error".into(),
        rate: 1.0,
        ..FaultChange::default()
    }));
    assert_eq!(hub.flush(), Some(1));

    let mut late = hub.subscribe();
    let snapshot = parse(&late.snapshot);
    assert_eq!(snapshot["type"], "snapshot");
    assert_eq!(snapshot["frame"], 1);
    let state = &snapshot["state"];
    assert_eq!(state["breakers"]["frontend->checkout"]["state"], "open");
    assert_eq!(state["breakers"]["checkout->payment"]["state"], "half_open");
    assert_eq!(state["opens"], 2);
    assert_eq!(state["transitions"].as_array().map(Vec::len), Some(3));
    assert_eq!(state["active_faults"]["f1"]["rate"], 1.0);

    hub.publish(note(7));
    hub.flush();
    let Next::Frame(frame) = late.next().await else {
        panic!("expected a frame")
    };
    assert_eq!(frame.frame, 2, "the frame right after the snapshot");
    assert_eq!(notes_in(&parse(&frame)), vec![7]);
}

#[tokio::test]
async fn every_client_sees_every_event_in_publish_order() {
    let hub = small_hub(1_000);
    let mut first = hub.subscribe();
    let mut second = hub.subscribe();
    let mut published = 0;
    for batch in 0..50u64 {
        for _ in 0..=batch % 7 {
            hub.publish(note(published));
            published += 1;
        }
        hub.flush();
    }
    for subscription in [&mut first, &mut second] {
        let mut seen = Vec::new();
        let mut last_frame = 0;
        while let Some(next) = subscription.try_next() {
            let Next::Frame(frame) = next else {
                panic!("no lag expected")
            };
            assert_eq!(frame.frame, last_frame + 1, "frames consecutive");
            last_frame = frame.frame;
            seen.extend(notes_in(&parse(&frame)));
        }
        assert_eq!(seen, (0..published).collect::<Vec<_>>());
    }
}

#[tokio::test]
async fn a_client_that_falls_behind_skips_ahead_to_a_fresh_snapshot() {
    let hub = small_hub(4);
    let mut slow = hub.subscribe();
    for index in 0..10 {
        hub.publish(transition(
            "frontend->checkout",
            State::Closed,
            State::Open,
            index,
        ));
        hub.flush();
    }
    let Next::Resync { snapshot, skipped } = slow.next().await else {
        panic!("expected a resync")
    };
    assert_eq!(skipped, 6, "10 frames into a ring of 4");
    let value = parse(&snapshot);
    assert_eq!(value["type"], "snapshot");
    assert_eq!(value["frame"], 10);
    assert_eq!(value["state"]["opens"], 10, "the snapshot holds everything");
    hub.publish(note(1));
    hub.flush();
    let Next::Frame(frame) = slow.next().await else {
        panic!("expected a frame")
    };
    assert_eq!(frame.frame, 11, "continues right after the snapshot");
}

#[test]
fn publish_without_a_flusher_stays_bounded() {
    let hub = small_hub(4);
    let mut subscription = hub.subscribe();
    for index in 0..1_000 {
        hub.publish(note(index));
    }
    // 4 × max_events_per_frame pending trigger an inline flush: at most 399 remain pending.
    assert!(hub.inner.pending.lock().len() < 400);
    assert!(
        subscription.try_next().is_some(),
        "inline flushes sent frames"
    );
    assert!(hub.state().annotations.len() <= HistoryLimits::default().annotations);
}

#[test]
fn history_is_bounded_and_a_new_run_keeps_the_window() {
    let hub = Hub::new(HubConfig {
        history: HistoryLimits {
            transitions: 5,
            samples: 3,
            faults: 2,
            annotations: 2,
            mode_changes: 2,
            ..HistoryLimits::default()
        },
        ..HubConfig::default()
    });
    for index in 0..20 {
        hub.publish(transition(
            "checkout->payment",
            State::Closed,
            State::Open,
            index,
        ));
        hub.publish(note(index));
    }
    hub.flush();
    let state = hub.state();
    assert_eq!(state.transitions.len(), 5);
    assert_eq!(state.transitions.back().map(|t| t.seq), Some(19));
    assert_eq!(state.annotations.len(), 2);
    assert_eq!(state.opens, 20);

    hub.publish(progress(1, 1, ExperimentStatus::Running));
    hub.flush();
    let state = hub.state();
    assert_eq!(state.opens, 0, "a new run counts its own opens");
    assert_eq!(
        state.transitions.len(),
        5,
        "the window keeps the earlier transitions"
    );
    assert_eq!(
        state.breakers["checkout->payment"].state,
        State::Open,
        "latest states survive a new run"
    );
}

fn fault(event: FaultChangeEvent, at_ms: u64) -> LiveEvent {
    LiveEvent::Fault(FaultChange {
        at_ms,
        event,
        fault_id: "experiment-1-run-1".into(),
        target: "payment".into(),
        kind: "error".into(),
        rate: if event == FaultChangeEvent::Removed {
            0.0
        } else {
            1.0
        },
        ..FaultChange::default()
    })
}

fn board(at_ms: u64) -> LiveEvent {
    LiveEvent::Breakers(BreakerBoard {
        at_ms,
        breakers: Vec::new(),
    })
}

/// The window's content after an experiment ended, as a page loaded then gets it: the run's fault from its
/// put (applied before the run reported itself started), its transitions and seconds, then the next run's
/// beside them; aged out only once they are older than the window.
#[test]
fn a_late_joiner_after_the_experiment_gets_what_happened_in_the_window() {
    let hub = small_hub(8);
    hub.publish(fault(FaultChangeEvent::Applied, 900));
    hub.publish(progress(1, 1, ExperimentStatus::Running));
    hub.publish(transition(
        "checkout->payment",
        State::Closed,
        State::Open,
        1,
    ));
    hub.publish(fault(FaultChangeEvent::Renewed, 5_000));
    hub.publish(fault(FaultChangeEvent::Removed, 9_000));
    hub.publish(progress(1, 2, ExperimentStatus::Running));
    hub.publish(status(1, ExperimentStatus::Finished));
    hub.flush();
    let snapshot = parse(&hub.subscribe().snapshot);
    let state = &snapshot["state"];
    let events: Vec<(&str, u64)> = state["faults"]
        .as_array()
        .expect("faults")
        .iter()
        .map(|f| {
            (
                f["event"].as_str().unwrap_or(""),
                f["at_ms"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        events,
        vec![("applied", 900), ("renewed", 5_000), ("removed", 9_000)],
        "the fault from its put, across the next run's start"
    );
    assert_eq!(state["transitions"][0]["at_ms"], 1_001);
    assert_eq!(state["progress"]["phase"], "finished");

    // Sampled boards age the window: an hour after, nothing of it is left.
    let hour = HistoryLimits::default().window_ms;
    hub.publish(board(901 + hour));
    hub.flush();
    let state = hub.state();
    assert_eq!(
        state.faults.len(),
        2,
        "the put is older than the window now"
    );
    hub.publish(board(9_001 + hour));
    hub.flush();
    let state = hub.state();
    assert!(state.faults.is_empty() && state.transitions.is_empty());
    assert!(
        state.breakers.contains_key("checkout->payment"),
        "latest states stay"
    );
}

/// A second as the Online Boutique mix gives it: six endpoints with their buckets, pools of ten services.
fn boutique_second(at_ms: u64) -> LiveEvent {
    let endpoint = |name: &str| EndpointSample {
        name: name.into(),
        requests: 120,
        outcomes: OutcomeCounts {
            ok: 100,
            failed: 20,
            ..OutcomeCounts::default()
        },
        p50_us: 12_345,
        p95_us: 98_765,
        p99_us: 234_567,
        ok_p50_us: Some(11_111),
        failed_p50_us: Some(2_222),
        ok_p95_us: Some(88_888),
        failed_p95_us: Some(3_333),
        buckets: vec![10; LATENCY_BUCKET_BOUNDS_US.len() + 1],
    };
    LiveEvent::Sample(LiveSample {
        at_ms,
        second: at_ms / 1000,
        warmup: false,
        outcomes: OutcomeCounts {
            ok: 600,
            failed: 120,
            ..OutcomeCounts::default()
        },
        endpoints: controller::load::endpoint::NAMES
            .iter()
            .map(|name| endpoint(name))
            .collect(),
        cart_mean_items: Some(2.5),
        cart_p95_us: Some(45_678),
        pools: (0..10)
            .map(|i| PoolSample {
                service: format!("service{i}"),
                in_flight: 3,
                queued: 1,
                capacity: 256,
            })
            .collect(),
    })
}

/// Three hours of seconds and transitions: the snapshot holds the last hour (all of it, for the Online
/// Boutique mix's seconds) and no more, within its byte bounds, whatever ran before.
#[test]
fn the_snapshot_stays_a_window_long_and_byte_bounded_after_hours() {
    let hub = small_hub(8);
    let limits = HistoryLimits::default();
    let hours = 3 * limits.window_ms / 1000;
    for second in 1..=hours {
        let at_ms = second * 1000;
        hub.publish(boutique_second(at_ms));
        if second % 10 == 0 {
            let LiveEvent::Transition(mut flip) =
                transition("checkout->payment", State::Closed, State::Open, second)
            else {
                unreachable!("a transition")
            };
            flip.at_ms = at_ms;
            hub.publish(LiveEvent::Transition(flip));
        }
        if second % 100 == 0 {
            hub.flush();
        }
    }
    hub.flush();
    let state = hub.state();
    let newest = hours * 1000;
    let oldest = state.samples.front().map(|s| s.at_ms).unwrap_or(0);
    assert!(oldest >= newest - limits.window_ms, "{oldest}");
    assert_eq!(
        state.samples.len(),
        limits.samples,
        "an hour of the mix's seconds fits the byte bound"
    );
    assert!(state.samples.bytes() <= limits.sample_bytes);
    assert!(
        state
            .transitions
            .iter()
            .all(|t| t.at_ms >= newest - limits.window_ms)
    );
    let snapshot = hub.subscribe().snapshot.clone();
    let bound = limits.sample_bytes + 5 * limits.event_bytes + 64 * 1024;
    assert!(
        snapshot.text.len() <= bound,
        "{} bytes",
        snapshot.text.len()
    );
    eprintln!(
        "snapshot after {hours} s: {} seconds kept, {} bytes",
        state.samples.len(),
        snapshot.text.len()
    );
}

/// A forced-open mode's open is the operator's: on the lane, not among the opens after warmup.
#[test]
fn forced_opens_are_not_counted_as_opens() {
    let hub = small_hub(8);
    let LiveEvent::Transition(mut forced) =
        transition("checkout->payment", State::Closed, State::Open, 1)
    else {
        unreachable!("a transition")
    };
    forced.reason = Reason::Forced;
    hub.publish(LiveEvent::Transition(forced));
    hub.publish(transition("frontend->ad", State::Closed, State::Open, 2));
    hub.flush();
    let state = hub.state();
    assert_eq!(state.opens, 1, "the tripped one alone");
    assert_eq!(state.transitions.len(), 2, "both on the lanes");
}

/// A sink that accepts nothing, ever (a browser tab that stopped reading).
fn stalled_sink() -> (mpsc::Sender<Frame>, mpsc::Receiver<Frame>) {
    // Capacity 0 leaves one slot per sender: the snapshot fits, the next frame never does.
    mpsc::channel(0)
}

#[tokio::test(start_paused = true)]
async fn a_stalled_client_is_dropped_and_never_slows_the_producer_or_the_others() {
    let hub = small_hub(16);
    let send_timeout = hub.config().send_timeout;

    let (stalled_tx, _stalled_rx_never_read) = stalled_sink();
    let (_stalled_in_tx, stalled_in_rx) = mpsc::unbounded::<ClientMessage>();
    let stalled = tokio::spawn(serve_client(
        hub.subscribe(),
        stalled_tx,
        stalled_in_rx,
        send_timeout,
    ));

    let (live_tx, mut live_rx) = mpsc::unbounded::<Frame>();
    let (live_in_tx, live_in_rx) = mpsc::unbounded::<ClientMessage>();
    let live = tokio::spawn(serve_client(
        hub.subscribe(),
        live_tx.sink_map_err(|_| ()),
        live_in_rx,
        send_timeout,
    ));
    assert_eq!(hub.clients(), 2);

    // The producer: 200 frames of 50 events, one frame per 25 ms of (paused) time.
    let started = tokio::time::Instant::now();
    let mut published = 0;
    for _ in 0..200 {
        for _ in 0..50 {
            hub.publish(note(published));
            published += 1;
        }
        hub.flush();
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(200 * 25),
        "the producer never waited on a client"
    );

    // The stalled client was dropped after its send timeout; the producer ran past it.
    assert!(stalled.is_finished());
    assert_eq!(stalled.await.expect("task"), ClientEnd::Stalled);
    assert_eq!(hub.clients(), 1);

    // The live client got everything, in order (its snapshot first).
    live_in_tx
        .unbounded_send(ClientMessage::Close)
        .expect("live client still listening");
    assert_eq!(live.await.expect("task"), ClientEnd::Closed);
    let snapshot = live_rx.next().await.expect("snapshot");
    assert_eq!(parse(&snapshot)["type"], "snapshot");
    let mut seen = Vec::new();
    while let Some(frame) = live_rx.next().await {
        seen.extend(notes_in(&parse(&frame)));
    }
    assert_eq!(seen, (0..published).collect::<Vec<_>>());
    assert_eq!(hub.clients(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_flusher_cuts_frames_on_its_interval() {
    let hub = Hub::new(HubConfig {
        frame_interval: Duration::from_millis(25),
        ..HubConfig::default()
    });
    let flusher = hub.spawn_flusher();
    let mut subscription = hub.subscribe();
    hub.publish(note(1));
    hub.publish(note(2));
    let next = tokio::time::timeout(Duration::from_millis(30), subscription.next())
        .await
        .expect("a frame within one interval");
    let Next::Frame(frame) = next else {
        panic!("expected a frame")
    };
    assert_eq!(
        notes_in(&parse(&frame)),
        vec![1, 2],
        "batched into one frame"
    );
    drop(subscription);
    drop(hub);
    tokio::time::timeout(Duration::from_millis(100), flusher)
        .await
        .expect("flusher stops with the hub")
        .expect("flusher task");
}

fn progress(experiment_id: i64, run: u64, phase: ExperimentStatus) -> LiveEvent {
    LiveEvent::Progress(super::RunProgress {
        experiment_id,
        experiment: "outage".into(),
        run,
        runs: 4,
        condition: "error@1.00/enforce".into(),
        round: 1,
        phase,
        started_at_ms: 1_000,
        ends_at_ms: Some(9_000),
        measured_from_ms: None,
        not_measured: Vec::new(),
        opens_not_measured: false,
    })
}

fn status(experiment_id: i64, status: ExperimentStatus) -> LiveEvent {
    LiveEvent::Experiment(super::ExperimentChange {
        experiment_id,
        status,
        at_ms: 5_000,
    })
}

#[test]
fn an_aborted_or_finished_experiment_is_not_running_any_more_for_a_late_joiner() {
    for end in [ExperimentStatus::Aborted, ExperimentStatus::Finished] {
        let hub = small_hub(8);
        hub.publish(progress(3, 2, ExperimentStatus::Running));
        hub.publish(status(3, end));
        hub.flush();
        let snapshot = parse(&hub.subscribe().snapshot);
        assert_eq!(snapshot["state"]["progress"]["phase"], end.as_str());
        assert_eq!(snapshot["state"]["progress"]["ends_at_ms"], Value::Null);
        assert_eq!(
            snapshot["state"]["experiment_changes"][0]["status"],
            end.as_str()
        );
    }
    // Another experiment's status leaves the running one alone.
    let hub = small_hub(8);
    hub.publish(progress(3, 2, ExperimentStatus::Running));
    hub.publish(status(4, ExperimentStatus::Aborted));
    hub.flush();
    assert_eq!(
        hub.state().progress.expect("progress").phase,
        ExperimentStatus::Running
    );
}

#[test]
fn every_breaker_of_the_board_has_a_lane_before_any_transition() {
    let hub = small_hub(8);
    let tile = |name: &str, state: State| super::BreakerTile {
        name: name.into(),
        service: name.split("->").next().unwrap_or_default().into(),
        state,
        mode: breaker::Mode::Enforce,
        config: None,
        calls: 0,
        failures: 0,
        rejected: 0,
        opens: 0,
        window: super::TileWindow::default(),
        open_until_ms: None,
    };
    hub.publish(LiveEvent::Breakers(super::BreakerBoard {
        at_ms: 7_000,
        breakers: vec![
            tile("checkout->payment", State::Closed),
            tile("frontend->cart", State::Open),
        ],
    }));
    hub.flush();
    let state = hub.state();
    assert!(state.transitions.is_empty());
    assert_eq!(
        state.breakers.keys().cloned().collect::<Vec<_>>(),
        vec!["checkout->payment", "frontend->cart"]
    );
    assert_eq!(state.breakers["frontend->cart"].state, State::Open);
    assert_eq!(state.breakers["frontend->cart"].since_ms, 7_000);
    let snapshot = parse(&hub.subscribe().snapshot);
    assert_eq!(
        snapshot["state"]["board"]["breakers"][1]["name"],
        "frontend->cart"
    );
}

#[test]
fn a_foreign_breaker_keeps_its_source_for_the_lane_and_the_tile() {
    let hub = small_hub(8);
    let LiveEvent::Transition(mut foreign) = transition("inventory", State::Closed, State::Open, 1)
    else {
        unreachable!()
    };
    foreign.service = "shop".into();
    foreign.reason = Reason::Observed;
    foreign.source = Some("prometheus:http://127.0.0.1:9000/metrics".into());
    hub.publish(LiveEvent::Transition(foreign));
    hub.publish(transition("frontend->cart", State::Closed, State::Open, 2));
    // A board sample (the testbed's own breakers) neither drops nor rewrites the foreign one.
    hub.publish(LiveEvent::Breakers(super::BreakerBoard {
        at_ms: 9_000,
        breakers: Vec::new(),
    }));
    hub.flush();
    let state = hub.state();
    assert_eq!(
        state.breakers["inventory"].source.as_deref(),
        Some("prometheus:http://127.0.0.1:9000/metrics")
    );
    assert_eq!(state.breakers["inventory"].service, "shop");
    assert_eq!(state.breakers["frontend->cart"].source, None);
    let snapshot = parse(&hub.subscribe().snapshot);
    assert_eq!(
        snapshot["state"]["breakers"]["inventory"]["source"],
        "prometheus:http://127.0.0.1:9000/metrics"
    );
    assert!(snapshot["state"]["breakers"]["frontend->cart"]["source"].is_null());
    assert_eq!(
        snapshot["state"]["transitions"][0]["source"],
        "prometheus:http://127.0.0.1:9000/metrics"
    );
}

/// The live header counts opens as the results do: after the run's warmup, shadow ones included; the warmup's
/// apart (a breaker that tripped in the warmup and stayed open is 0 opens in the results).
#[test]
fn opens_are_counted_after_the_warmup_as_the_results_count_them() {
    let mut state = super::LiveState::new(HistoryLimits::default());
    state.apply(&LiveEvent::Progress(super::RunProgress {
        experiment_id: 1,
        experiment: "outage".into(),
        run: 1,
        runs: 1,
        condition: "error@1.00/enforce".into(),
        round: 1,
        phase: ExperimentStatus::Running,
        started_at_ms: 1_000,
        ends_at_ms: Some(10_000),
        measured_from_ms: Some(1_010),
        not_measured: Vec::new(),
        opens_not_measured: false,
    }));
    // seq 3 and 5: at 1 003 and 1 005 ms, in the warmup; seq 20 at 1 020 ms, measured.
    state.apply(&transition(
        "frontend->checkout",
        State::Closed,
        State::Open,
        3,
    ));
    state.apply(&transition(
        "checkout->payment",
        State::Closed,
        State::Open,
        5,
    ));
    state.apply(&transition(
        "checkout->payment",
        State::Open,
        State::HalfOpen,
        15,
    ));
    let mut shadow = transition("cart->redis", State::Closed, State::Open, 20);
    if let LiveEvent::Transition(event) = &mut shadow {
        event.shadow = true;
    }
    state.apply(&shadow);
    assert_eq!((state.opens, state.warmup_opens), (1, 2));
    let stored: Vec<controller::store::TransitionRecord> = state
        .transitions
        .iter()
        .map(controller::store::TransitionRecord::from_event)
        .collect();
    let (stored_opens, _) = controller::stats::breaker_time_open(&stored, 1_010, 10_000);
    assert_eq!(
        stored_opens, state.opens,
        "the results count the same opens"
    );
}

/// A running experiment whose targets offer nothing carries the report's not-measured statements to a page that
/// loads now, and says its opens are not measured (the header shows that, not 0); the embedded stack's carries none.
#[test]
fn a_running_experiment_says_what_its_targets_cannot_measure() {
    let plain = test_support::spec(
        "name = \"plain\"\nduration = \"10s\"\n[load]\nusers = 1\ntarget = \"shop\"\n[targets]\n\
         shop = { url = \"http://127.0.0.1:9\", offers = [] }\nagent = \"http://127.0.0.1:9\"\n",
    );
    let (not_measured, opens_not_measured) = super::RunProgress::not_measured_of(&plain);
    assert_eq!(not_measured, controller::stats::not_measured(&plain));
    assert!(opens_not_measured);
    let mut state = super::LiveState::new(HistoryLimits::default());
    state.apply(&LiveEvent::Progress(super::RunProgress {
        experiment_id: 1,
        experiment: "plain".into(),
        run: 1,
        runs: 1,
        condition: "none".into(),
        round: 1,
        phase: ExperimentStatus::Running,
        started_at_ms: 1_000,
        ends_at_ms: Some(11_000),
        measured_from_ms: Some(1_000),
        not_measured,
        opens_not_measured,
    }));
    let snapshot: serde_json::Value =
        serde_json::from_str(&serde_json::to_string(&state).expect("json")).expect("parse");
    let lines = snapshot["progress"]["not_measured"]
        .as_array()
        .expect("lines");
    assert!(
        lines.iter().any(|line| line
            .as_str()
            .is_some_and(|l| l.starts_with("cart sizes (cart inflation) were not measured"))),
        "{snapshot}"
    );
    assert_eq!(snapshot["progress"]["opens_not_measured"], true);

    let embedded = test_support::spec("name = \"e\"\nduration = \"10s\"\n[load]\nusers = 1\n");
    assert_eq!(
        super::RunProgress::not_measured_of(&embedded),
        (Vec::new(), false)
    );
}

#[test]
fn the_latest_container_second_is_in_the_snapshot_and_sent_as_a_containers_event() {
    let hub = Hub::new(HubConfig::default());
    let second = |at_ms: u64, cpu_percent: f64| {
        LiveEvent::Containers(ContainerStats {
            at_ms,
            containers: vec![ContainerUse {
                replica: "checkout#2".into(),
                service: "checkout".into(),
                cpu_percent,
                memory_bytes: 12 << 20,
                rx_bytes_per_s: 2_048.0,
                tx_bytes_per_s: 512.0,
                modelled_watts: 1.5,
            }],
        })
    };
    let mut early = hub.subscribe();
    hub.publish(second(1_000, 10.0));
    hub.publish(second(2_000, 30.0));
    hub.flush();
    let Some(Next::Frame(frame)) = early.try_next() else {
        panic!("a frame for the early subscriber")
    };
    let frame = parse(&frame);
    assert_eq!(frame["events"][0]["type"], "containers");
    assert_eq!(frame["events"][0]["containers"][0]["replica"], "checkout#2");

    let late = hub.subscribe();
    let state = &parse(&late.snapshot)["state"];
    assert_eq!(state["containers"]["at_ms"], 2_000);
    assert_eq!(state["containers"]["containers"][0]["cpu_percent"], 30.0);
    assert_eq!(state["containers"]["containers"][0]["modelled_watts"], 1.5);
}
