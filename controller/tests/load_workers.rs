//! Load workers over loopback, in this process: three `run_worker` tasks connect to a pool, drive one run's
//! users against an axum server, and the merged seconds hold exactly their requests; a worker killed mid-run
//! leaves its users missing from the seconds it did not send; a wrong token, a duplicate name, a wrong version
//! and a late worker are refused with their reason; the pool's view (the dashboard's panel) shows each worker's
//! users, rate and lag while the run goes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use controller::load::{SecondStats, Workload, deserialize_histogram, new_histogram};
use controller::spec::ExperimentSpec;
use controller::test_support;
use controller::workers::{
    WorkerError, WorkerOptions, WorkerPool, WorkersLoad, WorkersRun, run_until, run_worker,
    worker::connect,
};
use futures::{SinkExt, StreamExt};

const TOKEN: &str = "worker-test-token";

/// Answers `/item` after 1–4 ms (by a counter), so latencies spread over several buckets.
async fn serve(served: Arc<AtomicU64>) -> SocketAddr {
    let app = Router::new().route(
        "/item",
        get(move || {
            let served = Arc::clone(&served);
            async move {
                let n = served.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1 + n % 4)).await;
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn spec(users: u32, workers: u32, duration: &str) -> ExperimentSpec {
    test_support::spec(&format!(
        r#"
name = "workers"
duration = "{duration}"

[load]
users = {users}
think_time = ["5ms", "20ms"]
workers = {workers}
workers_listen = "127.0.0.1:0"

[[load.tasks]]
name = "item"
requests = [ {{ method = "GET", path = "/item" }} ]
"#
    ))
}

fn options(pool: &WorkerPool, name: &str, capacity: u32) -> WorkerOptions {
    WorkerOptions {
        controller: pool.url(),
        token: TOKEN.to_owned(),
        name: name.to_owned(),
        capacity,
        target: None,
    }
}

fn load_of(spec: &ExperimentSpec, target: SocketAddr) -> WorkersLoad {
    let workload = Workload::Custom(spec.load.custom.clone().unwrap());
    WorkersLoad {
        run: 1,
        spec: spec.source.clone(),
        sequence: 0,
        target: target.to_string(),
        users: spec.load.users,
        warmup: spec.run_warmup(),
        duration: spec.run_duration(),
        timeout: spec.load.timeout,
        endpoint_names: workload.endpoint_names(),
        task_names: workload.task_names(),
    }
}

/// Drives `load` on the pool, killing the worker task `kill.0` after `kill.1` if given; the closed seconds and
/// the run.
async fn drive(
    pool: &WorkerPool,
    load: &WorkersLoad,
    kill: Option<(tokio::task::JoinHandle<Result<(), WorkerError>>, Duration)>,
) -> (Vec<SecondStats>, WorkersRun) {
    let (sink, mut seconds) = tokio::sync::mpsc::unbounded_channel();
    let killer = async {
        if let Some((worker, after)) = kill {
            tokio::time::sleep(after).await;
            worker.abort();
        }
    };
    let (run, ()) = tokio::join!(run_until(pool, load, sink, std::future::pending()), killer);
    let mut closed = Vec::new();
    while let Some(second) = seconds.recv().await {
        closed.push(second);
    }
    (closed, run.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_workers_drive_one_run_and_their_seconds_merge_exactly() {
    let served = Arc::new(AtomicU64::new(0));
    let target = serve(Arc::clone(&served)).await;
    let spec = spec(9, 3, "3s");
    let pool = WorkerPool::listen("127.0.0.1:0".parse().unwrap(), 3, TOKEN.to_owned())
        .await
        .unwrap();
    let workers: Vec<_> = [("w1", 2), ("w2", 3), ("w3", 4)]
        .into_iter()
        .map(|(name, capacity)| {
            let options = options(&pool, name, capacity);
            tokio::spawn(async move { run_worker(&options).await })
        })
        .collect();
    pool.wait_for_all(Duration::from_secs(10)).await.unwrap();
    let (seconds, run) = drive(&pool, &load_of(&spec, target), None).await;

    assert!(run.lost.is_empty(), "{:?}", run.lost);
    assert_eq!(seconds.len(), 3, "one merged second per second of the run");
    // Users split by stated capacity; each drove requests.
    let users: Vec<(String, u32)> = (run.shares.iter())
        .map(|s| (s.worker.clone(), s.users))
        .collect();
    assert_eq!(
        users,
        vec![("w1".into(), 2), ("w2".into(), 3), ("w3".into(), 4)]
    );
    assert!(
        run.shares.iter().all(|s| s.requests > 0),
        "{:?}",
        run.shares
    );
    // The merged run's request count is the sum of the workers' counts, exactly, in the totals and in the
    // seconds. (A request completing in the instant the run ends is in a driver's totals but in no closed
    // second, as in one process: at most one per user.)
    let workers_sum: u64 = run.shares.iter().map(|s| s.requests).sum();
    assert_eq!(run.report.outcomes().total(), workers_sum);
    let in_seconds: u64 = seconds.iter().map(|s| s.outcomes().total()).sum();
    let workers_seconds: u64 = run.shares.iter().map(|s| s.in_seconds).sum();
    assert_eq!(in_seconds, workers_seconds);
    assert!(workers_sum - in_seconds <= 9, "{workers_sum} {in_seconds}");
    // Requests still in flight at the end were served but are counted nowhere.
    assert!(served.load(Ordering::Relaxed) >= workers_sum);
    // The merged seconds' histograms hold every request of the seconds (their p95 against the raw samples is
    // checked in the merge's unit tests, where the samples are known).
    let endpoint = &run.report.endpoints[0];
    let mut all = new_histogram();
    for second in &seconds {
        for e in &second.endpoints {
            all.add(deserialize_histogram(&e.histogram_v2).unwrap())
                .unwrap();
        }
    }
    assert_eq!(all.len(), in_seconds);
    assert!(endpoint.stats.latency.len() - all.len() <= 9);
    assert!(run.report.tasks[0].1 > 0);

    pool.finish();
    for worker in workers {
        worker.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_is_missing_from_the_seconds_it_did_not_send() {
    let target = serve(Arc::new(AtomicU64::new(0))).await;
    let spec = spec(6, 2, "4s");
    let pool = WorkerPool::listen("127.0.0.1:0".parse().unwrap(), 2, TOKEN.to_owned())
        .await
        .unwrap();
    let kept = {
        let options = options(&pool, "kept", 3);
        tokio::spawn(async move { run_worker(&options).await })
    };
    let killed = {
        let options = options(&pool, "killed", 3);
        tokio::spawn(async move { run_worker(&options).await })
    };
    pool.wait_for_all(Duration::from_secs(10)).await.unwrap();
    // Killed 2.2 s after the run starts (its start is half a second after the assignment).
    let (seconds, run) = drive(
        &pool,
        &load_of(&spec, target),
        Some((killed, Duration::from_millis(2_700))),
    )
    .await;

    assert_eq!(seconds.len(), 4);
    assert_eq!(run.lost.len(), 1, "{:?}", run.lost);
    let lost = &run.lost[0];
    assert_eq!(
        (lost.worker.as_str(), lost.users, lost.to_second),
        ("killed", 3, 4)
    );
    // It had sent its seconds 0 and 1 (closed at 1 s and 2 s), not second 2.
    assert_eq!(lost.from_second, 2, "{lost:?}");
    let killed_share = run.shares.iter().find(|s| s.worker == "killed").unwrap();
    let kept_share = run.shares.iter().find(|s| s.worker == "kept").unwrap();
    let in_seconds: u64 = seconds.iter().map(|s| s.outcomes().total()).sum();
    assert_eq!(in_seconds, killed_share.in_seconds + kept_share.in_seconds);
    // The killed worker counts with what it sent and nothing after.
    assert_eq!(killed_share.requests, killed_share.in_seconds);
    assert_eq!(
        run.report.outcomes().total(),
        killed_share.requests + kept_share.requests
    );
    let before: u64 = seconds[..2].iter().map(|s| s.outcomes().total()).sum();
    let after: u64 = seconds[2..].iter().map(|s| s.outcomes().total()).sum();
    assert!(
        after < before * 3 / 4,
        "half the users are gone from second 2: {before} then {after}"
    );
    // The dashboard's panel: the kept worker connected (between runs: no users), the killed one lost with its
    // users missing from the second after its last.
    let view = pool.view();
    assert_eq!((view.wanted, view.connected), (2, 1), "{view:?}");
    let row = |name: &str| view.workers.iter().find(|w| w.name == name).unwrap();
    assert_eq!((row("kept").users, row("kept").lost_from_second), (0, None));
    assert_eq!(
        (
            row("killed").capacity,
            row("killed").users,
            row("killed").lost_from_second
        ),
        (3, 3, Some(2))
    );
    pool.finish();
    kept.await.unwrap().unwrap();
}

/// Sends a hello of its own making and returns the controller's answer.
async fn hello_answer(pool: &WorkerPool, hello: serde_json::Value) -> String {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = pool.url().into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    socket
        .send(tokio_tungstenite::tungstenite::Message::text(
            hello.to_string(),
        ))
        .await
        .unwrap();
    match socket.next().await {
        Some(Ok(message)) => message.into_text().unwrap().to_string(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_token_duplicate_late_and_other_version_are_refused_with_a_reason() {
    let pool = WorkerPool::listen("127.0.0.1:0".parse().unwrap(), 2, TOKEN.to_owned())
        .await
        .unwrap();
    let refused = |result: Result<_, WorkerError>| match result {
        Err(WorkerError::Refused(reason)) => reason,
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("admitted"),
    };
    let mut wrong = options(&pool, "a", 10);
    wrong.token = "not-the-token".to_owned();
    assert!(refused(connect(&wrong).await).contains("401"));

    let first = connect(&options(&pool, "a", 10)).await.unwrap();
    let duplicate = refused(connect(&options(&pool, "a", 10)).await);
    assert!(duplicate.starts_with("duplicate"), "{duplicate}");
    let version = hello_answer(
        &pool,
        serde_json::json!({"type": "hello", "name": "b", "version": "0.0.0-other", "capacity": 5}),
    )
    .await;
    assert!(version.contains("version 0.0.0-other differs"), "{version}");
    let no_capacity = hello_answer(
        &pool,
        serde_json::json!({"type": "hello", "name": "b", "version": controller::workers::wire::VERSION, "capacity": 0}),
    )
    .await;
    assert!(no_capacity.contains("capacity: 0"), "{no_capacity}");
    let second = connect(&options(&pool, "b", 10)).await.unwrap();
    let late = refused(connect(&options(&pool, "c", 10)).await);
    assert!(late.starts_with("late"), "{late}");
    assert_eq!(pool.statuses().len(), 2);

    // A worker gone frees its place; the missing one is named by a bounded wait.
    drop(second);
    tokio::time::timeout(Duration::from_secs(5), async {
        while pool.statuses().len() != 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    let missing = pool
        .wait_for_all(Duration::from_millis(100))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("1 of 2 workers connected") && missing.contains("missing: worker 2 of 2"),
        "{missing}"
    );
    drop(first);
}

/// The workers' port throttles wrong tokens per address as every other token port does (429 with `Retry-After`
/// once over the allowance), and the right token still connects from that address.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_at_the_workers_port_are_throttled_and_the_right_one_still_passes() {
    use tokio_tungstenite::tungstenite::Error as WsError;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let pool = WorkerPool::listen("127.0.0.1:0".parse().unwrap(), 1, TOKEN.to_owned())
        .await
        .unwrap();
    let mut statuses = Vec::new();
    let mut retry_after = None;
    for _ in 0..20 {
        let mut request = pool.url().into_client_request().unwrap();
        request
            .headers_mut()
            .insert("authorization", "Bearer guess".parse().unwrap());
        match tokio_tungstenite::connect_async(request).await {
            Err(WsError::Http(response)) => {
                statuses.push(response.status().as_u16());
                if let Some(value) = response.headers().get(http::header::RETRY_AFTER) {
                    retry_after = Some(value.to_str().unwrap().to_owned());
                }
            }
            other => panic!("a guess was not refused: {other:?}"),
        }
    }
    assert_eq!(statuses[0], 401, "{statuses:?}");
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
    assert!(retry_after.is_some(), "429 says when to try again");
    let worker = connect(&options(&pool, "a", 10)).await;
    assert!(
        worker.is_ok(),
        "the right token passes from a locked address"
    );
}

/// What the dashboard's panel reads, while a run goes: each worker with its share of the users, the requests of
/// the last second it sent and how far behind it is; between runs its users, rate and lag are back to 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_view_shows_each_workers_users_rate_and_lag_while_the_run_goes() {
    let target = serve(Arc::new(AtomicU64::new(0))).await;
    let spec = spec(7, 2, "4s");
    let pool = WorkerPool::listen("127.0.0.1:0".parse().unwrap(), 2, TOKEN.to_owned())
        .await
        .unwrap();
    let workers: Vec<_> = [("small", 2), ("large", 5)]
        .into_iter()
        .map(|(name, capacity)| {
            let options = options(&pool, name, capacity);
            tokio::spawn(async move { run_worker(&options).await })
        })
        .collect();
    pool.wait_for_all(Duration::from_secs(10)).await.unwrap();
    let before = pool.view();
    assert!(before.workers.iter().all(|w| w.users == 0), "{before:?}");

    let (done, ended) = tokio::sync::watch::channel(false);
    let watcher = {
        let pool = pool.clone();
        let mut ended = ended;
        tokio::spawn(async move {
            let mut views = Vec::new();
            loop {
                views.push(pool.view());
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                    _ = ended.changed() => break views,
                }
            }
        })
    };
    let (_, run) = drive(&pool, &load_of(&spec, target), None).await;
    done.send(true).unwrap();
    let views = watcher.await.unwrap();

    assert!(run.lost.is_empty(), "{:?}", run.lost);
    let share = |name: &str| run.shares.iter().find(|s| s.worker == name).unwrap();
    assert_eq!((share("small").users, share("large").users), (2, 5));
    let row = |view: &controller::workers::WorkersView, name: &str| {
        view.workers
            .iter()
            .find(|w| w.name == name)
            .cloned()
            .unwrap()
    };
    // While the run goes, each row holds the worker's share; its rate is one second's requests, never more than
    // all it drove.
    let running: Vec<_> = (views.iter())
        .filter(|view| view.workers.iter().any(|w| w.users > 0))
        .collect();
    assert!(!running.is_empty(), "the run was seen going: {views:?}");
    for view in &running {
        assert_eq!((view.wanted, view.connected), (2, 2));
        assert_eq!((row(view, "small").users, row(view, "large").users), (2, 5));
        for name in ["small", "large"] {
            let status = row(view, name);
            assert!(
                status.requests_per_second <= share(name).requests,
                "{status:?}"
            );
            assert!(status.lag_seconds <= 5, "{status:?}");
            assert_eq!(status.lost_from_second, None);
        }
    }
    // Every worker's seconds reached the panel: some view shows both with requests and up to date.
    assert!(
        running
            .iter()
            .any(|view| ["small", "large"].iter().all(|name| {
                let status = row(view, name);
                status.requests_per_second > 0 && status.lag_seconds <= 1
            })),
        "{running:?}"
    );
    // Between runs: no users, no rate, no lag.
    let after = pool.view();
    for status in &after.workers {
        assert_eq!(
            (status.users, status.requests_per_second, status.lag_seconds),
            (0, 0, 0),
            "{after:?}"
        );
    }
    pool.finish();
    for worker in workers {
        worker.await.unwrap().unwrap();
    }
}
