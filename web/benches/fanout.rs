//! Fan-out benchmark: N events/s through the hub to M websocket clients over loopback, some never reading.
//!
//! The parent process is "the controller": hub, flusher, producer and the real `/ws` handler. The clients run
//! in a child process (this binary with `--clients`) so the parent's CPU figure (from /proc/self/stat, the
//! same counters as getrusage RUSAGE_SELF) is the controller's alone. Each event carries its send time in µs
//! (in `seq`); a client takes, per frame, the age of the frame's *first* (oldest) event — an upper bound of
//! every event's delivery latency in that frame — and checks that frame numbers never skip.
//!
//! `cargo bench -p web --bench fanout -- [--rate 10000] [--clients 100] [--stalled 10] [--seconds 20]
//!  [--max-events-per-frame 1000] [--frame-ms 25] [--snapshot-bytes N] [--anonymous] [--linger S]`
//!
//! The readers' memory (issue 26 item 6): `--snapshot-bytes` fills the live window with annotations before
//! anyone connects, so every client's first frame is a snapshot that large; `--anonymous` serves `/ws` as it
//! serves a reader without a session (at most `anonymous_readers` at once, the rest answered 503); `--linger`
//! samples the controller's RSS for S more seconds after the clients have left.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use breaker::{Reason, State, TransitionDetail, TransitionEvent};
use futures::StreamExt;
use tokio::io::AsyncReadExt;
use web::hub::{Hub, HubConfig, LiveEvent};

#[derive(Debug, Clone)]
struct Args {
    rate: u64,
    clients: usize,
    stalled: usize,
    seconds: u64,
    max_events_per_frame: usize,
    frame_ms: u64,
    snapshot_bytes: u64,
    anonymous: bool,
    linger: u64,
    child_url: Option<String>,
}

fn parse_args() -> Args {
    let mut args = Args {
        rate: 10_000,
        clients: 100,
        stalled: 10,
        seconds: 20,
        max_events_per_frame: 1_000,
        frame_ms: 25,
        snapshot_bytes: 0,
        anonymous: false,
        linger: 0,
        child_url: None,
    };
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let mut index = 0;
    while index < raw.len() {
        let value = raw.get(index + 1).cloned().unwrap_or_default();
        let number = || {
            value
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("{}: expected a number", raw[index]))
        };
        match raw[index].as_str() {
            "--rate" => args.rate = number(),
            "--clients" => args.clients = number() as usize,
            "--stalled" => args.stalled = number() as usize,
            "--seconds" => args.seconds = number(),
            "--max-events-per-frame" => args.max_events_per_frame = number() as usize,
            "--frame-ms" => args.frame_ms = number(),
            "--snapshot-bytes" => args.snapshot_bytes = number(),
            "--linger" => args.linger = number(),
            "--anonymous" => {
                args.anonymous = true;
                index += 1;
                continue;
            }
            "--child" => args.child_url = Some(value.clone()),
            // cargo bench passes --bench; ignore anything else without a value.
            _ => {
                index += 1;
                continue;
            }
        }
        index += 2;
    }
    args
}

// Frame latency across processes needs the wall clock in microseconds (`now_ms` is too coarse).
#[allow(clippy::disallowed_methods)]
fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

/// utime + stime of this process, seconds (Linux /proc, 100 Hz ticks).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the command name: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    (ticks(11) + ticks(12)) as f64 / 100.0
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn event(now_us: u64, index: u64) -> LiveEvent {
    const BREAKERS: [&str; 4] = [
        "frontend->checkout",
        "checkout->payment",
        "frontend->cart",
        "frontend->currency",
    ];
    let breaker = BREAKERS[(index % 4) as usize];
    LiveEvent::Transition(TransitionEvent {
        service: breaker.split("->").next().unwrap_or("frontend").to_owned(),
        breaker: breaker.to_owned(),
        from: State::Closed,
        to: if index % 2 == 0 {
            State::Open
        } else {
            State::Closed
        },
        reason: Reason::ConsecutiveFailures,
        detail: TransitionDetail {
            failures: Some(5),
            ..TransitionDetail::default()
        },
        at_ms: now_us / 1_000,
        seq: now_us,
        shadow: false,
        source: None,
    })
}

fn main() {
    let args = parse_args();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    match args.child_url.clone() {
        Some(url) => runtime.block_on(clients(args, url)),
        None => runtime.block_on(controller(args)),
    }
}

#[allow(clippy::disallowed_methods)] // a bench measures wall time
async fn controller(args: Args) {
    let hub = Hub::new(HubConfig {
        frame_interval: Duration::from_millis(args.frame_ms),
        max_events_per_frame: args.max_events_per_frame,
        ..HubConfig::default()
    });
    let _flusher = hub.spawn_flusher();
    let anonymous = args.anonymous;
    let rss_empty = rss_kib();
    let notes = args.snapshot_bytes.div_ceil(10_000);
    for index in 0..notes {
        hub.publish(LiveEvent::Annotation(web::hub::Annotation {
            at_ms: index,
            text: "x".repeat(10_000),
            ..web::hub::Annotation::default()
        }));
    }
    hub.flush();
    let snapshot_len = hub.subscribe().snapshot.text.len();
    let rss_with_snapshot = rss_kib();
    let app = axum::Router::new()
        // The hub's client loop as `/ws` serves it: every client counted as a logged-in one, or with
        // `--anonymous` as a reader without a session (capped, 503 beyond the cap).
        .route(
            "/ws",
            axum::routing::get(
                move |axum::extract::State(hub): axum::extract::State<Hub>,
                      upgrade: axum::extract::ws::WebSocketUpgrade| async move {
                    use axum::response::IntoResponse;
                    let subscription = if anonymous {
                        hub.subscribe_anonymous()
                    } else {
                        Some(hub.subscribe())
                    };
                    match subscription {
                        Some(subscription) => upgrade
                            .on_upgrade(move |socket| async move {
                                let _ = web::live::serve_socket(socket, subscription).await;
                            })
                            .into_response(),
                        None => axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response(),
                    }
                },
            ),
        )
        .with_state(hub.clone());
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });

    let exe = std::env::current_exe().expect("current exe");
    let mut child = tokio::process::Command::new(exe)
        .args([
            "--child",
            &format!("ws://{addr}/ws"),
            "--clients",
            &args.clients.to_string(),
            "--stalled",
            &args.stalled.to_string(),
            "--seconds",
            &args.seconds.to_string(),
        ])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn clients");

    // Wait (bounded) for every client to connect.
    let connect_deadline = Instant::now() + Duration::from_secs(20);
    while hub.clients() < args.clients && Instant::now() < connect_deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let connected = hub.clients();
    let rss_start = rss_kib();
    let cpu_start = cpu_seconds();
    let wall_start = Instant::now();

    // Producer: rate events/s in 1 ms ticks.
    let per_tick = (args.rate / 1_000).max(1);
    let mut ticker = tokio::time::interval(Duration::from_millis(1));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let total_ticks = args.seconds * 1_000;
    let mut published = 0u64;
    let mut rss_max = rss_start;
    let mut rss_samples = Vec::new();
    for tick in 0..total_ticks {
        ticker.tick().await;
        let now = unix_us();
        for _ in 0..per_tick {
            hub.publish(event(now, published));
            published += 1;
        }
        if tick % 500 == 0 {
            let rss = rss_kib();
            rss_max = rss_max.max(rss);
            rss_samples.push(rss);
        }
    }
    let wall = wall_start.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_start;
    let clients_left = hub.clients();

    let mut output = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ =
            tokio::time::timeout(Duration::from_secs(30), stdout.read_to_string(&mut output)).await;
    }
    let _ = child.wait().await;
    let rss_clients_gone = rss_kib();
    let mut rss_linger = Vec::new();
    for _ in 0..args.linger {
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss_linger.push(rss_kib() / 1024);
    }

    println!("fanout benchmark");
    println!(
        "  rate {} ev/s, {} clients ({} never read), {} s, frame {} ms / max {} events",
        args.rate,
        args.clients,
        args.stalled,
        args.seconds,
        args.frame_ms,
        args.max_events_per_frame
    );
    println!("  connected {connected}, still connected at the end {clients_left}");
    println!(
        "  published {published} events in {wall:.2} s = {:.0} ev/s",
        published as f64 / wall
    );
    println!(
        "  controller CPU {cpu:.2} s over {wall:.2} s = {:.2} cores",
        cpu / wall
    );
    println!(
        "  controller RSS start {} MiB, max {} MiB, samples (MiB) {:?}",
        rss_start / 1024,
        rss_max / 1024,
        rss_samples.iter().map(|kib| kib / 1024).collect::<Vec<_>>()
    );
    println!(
        "  snapshot {snapshot_len} bytes; RSS empty {} MiB, with the snapshot {} MiB, after the clients left {} MiB, \
         then each second (MiB) {rss_linger:?}; {} clients still counted",
        rss_empty / 1024,
        rss_with_snapshot / 1024,
        rss_clients_gone / 1024,
        hub.clients()
    );
    print!("{output}");
}

#[allow(clippy::disallowed_methods)] // a bench measures wall time
async fn clients(args: Args, url: String) {
    let live = args.clients.saturating_sub(args.stalled);
    let mut stalled_sockets = Vec::new();
    let mut refused = 0usize;
    for _ in 0..args.stalled {
        match tokio_tungstenite::connect_async(&url).await {
            Ok((socket, _)) => stalled_sockets.push(socket), // never read
            Err(_) => refused += 1, // beyond the anonymous readers' cap: 503
        }
    }
    println!(
        "  never-reading clients: {} connected, {refused} refused",
        stalled_sockets.len()
    );
    let deadline = Instant::now() + Duration::from_secs(args.seconds + 3);
    let mut tasks = Vec::new();
    for _ in 0..live {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            // Beyond the anonymous readers' cap a reader is refused (503) too: it counts as no frames.
            let Ok((mut socket, _)) = tokio_tungstenite::connect_async(&url).await else {
                return None;
            };
            let mut latencies_us: Vec<u64> = Vec::new();
            let mut frames = 0u64;
            let mut gaps = 0u64;
            let mut last_frame = None::<u64>;
            let mut bytes = 0u64;
            loop {
                let remaining = deadline.saturating_duration_since(Instant::now());
                let Ok(Some(Ok(message))) = tokio::time::timeout(remaining, socket.next()).await
                else {
                    break;
                };
                let tokio_tungstenite::tungstenite::Message::Text(text) = message else {
                    continue;
                };
                let now = unix_us();
                bytes += text.len() as u64;
                let text = text.as_str();
                let frame = number_after(text, "\"frame\":").unwrap_or(0);
                if text.starts_with("{\"type\":\"snapshot\"") {
                    if last_frame.is_some() {
                        gaps += 1; // a resync: this client fell behind
                    }
                } else {
                    if let Some(last) = last_frame
                        && frame != last + 1
                    {
                        gaps += 1;
                    }
                    frames += 1;
                    if let Some(sent_us) = number_after(text, "\"seq\":") {
                        latencies_us.push(now.saturating_sub(sent_us));
                    }
                }
                last_frame = Some(frame);
            }
            Some((latencies_us, frames, gaps, bytes))
        }));
    }
    let mut all = Vec::new();
    let mut frames = Vec::new();
    let mut gaps = 0;
    let mut bytes = 0;
    let mut live_refused = 0usize;
    for task in tasks {
        let Some((latencies, client_frames, client_gaps, client_bytes)) =
            task.await.expect("client")
        else {
            live_refused += 1;
            continue;
        };
        all.extend(latencies);
        frames.push(client_frames);
        gaps += client_gaps;
        bytes += client_bytes;
    }
    drop(stalled_sockets);
    all.sort_unstable();
    let pct = |p: f64| {
        if all.is_empty() {
            0.0
        } else {
            all[((all.len() as f64 * p) as usize).min(all.len() - 1)] as f64 / 1_000.0
        }
    };
    println!(
        "  live clients {live} ({live_refused} refused): frames per client min {} max {}, gaps/resyncs {gaps}, {:.1} MB received",
        frames.iter().min().copied().unwrap_or(0),
        frames.iter().max().copied().unwrap_or(0),
        bytes as f64 / 1e6
    );
    println!(
        "  delivery latency of each frame's oldest event (ms): p50 {:.1}, p99 {:.1}, p99.9 {:.1}, max {:.1} (n = {})",
        pct(0.50),
        pct(0.99),
        pct(0.999),
        pct(1.0),
        all.len()
    );
}

fn number_after(text: &str, key: &str) -> Option<u64> {
    let start = text.find(key)? + key.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
