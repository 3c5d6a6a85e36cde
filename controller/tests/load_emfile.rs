//! The load driver out of descriptors: with this process's soft limit lowered to a few above what it has
//! open, the virtual users cannot open their connections (`EMFILE`). Those requests are the driver's own
//! failures, counted apart with the reason, never the target's connection errors. (Its own test binary:
//! the limit is the whole process's.)

use std::time::Duration;

use controller::load::{LoadSettings, Workload, open_descriptors, run};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connects_without_a_descriptor_are_the_drivers_failures() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let open = open_descriptors().expect("/proc/self/fd");
    let before = getrlimit(Resource::Nofile);
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(open + 8),
            maximum: before.maximum,
        },
    )
    .expect("lower the soft limit");
    let report = run(
        LoadSettings {
            target: addr,
            workload: Workload::Fixed { path: "/".into() },
            users: 40,
            think_time: (Duration::ZERO, Duration::from_millis(10)),
            rate: None,
            timeout: Duration::from_secs(1),
            warmup: Duration::ZERO,
            duration: Duration::from_millis(500),
            seed: 1,
        }
        .try_into()
        .expect("valid load config"),
        None,
    )
    .await;
    setrlimit(Resource::Nofile, before).expect("restore the limit");

    let failures = &report.driver_failures;
    assert!(failures.count > 0, "{failures:?}");
    let first = failures.first.as_deref().unwrap_or("");
    assert!(first.contains("os error 24"), "EMFILE: {first}");
    assert_eq!(
        report.outcomes().connection_error,
        0,
        "a connect the driver could not make is not the target's connection error"
    );
}
