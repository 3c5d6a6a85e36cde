//! A `[[sources]]` source that does not answer is a blind spot of the run, not the end of the experiment: one
//! answering 503 when a run starts lets the run go on (it used to fail the run's setup and abort the experiment),
//! one that stops answering after its baseline is stored as blind, and either way the run's breaker opens and
//! time open are left out of the stats (not read as 0) with a statement saying in which runs and for how long. A
//! source that never answers at all fails the preflight naming its field.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::routing::get;
use controller::metric::{MetricKey, MetricName};
use controller::runner::{Runner, RunnerError};
use controller::store::Status;
use controller::target::ServiceId;
use controller::test_support::{self, TempStore};
use controller::testbed::Testbed;

/// A shop of the user's own whose `/metrics` answers 503 to request `n` (from 0) whenever `blind(n)`.
async fn shop(blind: fn(usize) -> bool) -> std::net::SocketAddr {
    let served = Arc::new(AtomicUsize::new(0));
    let router = Router::new()
        .route(
            "/metrics",
            get(move || {
                let n = served.fetch_add(1, Ordering::SeqCst);
                async move {
                    if blind(n) {
                        Err(http::StatusCode::SERVICE_UNAVAILABLE)
                    } else {
                        Ok("shop_breaker_state{breaker=\"upstream\"} 0\n")
                    }
                }
            }),
        )
        .fallback(|| async { "ok" });
    serve(router).await
}

async fn serve(router: Router) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    address
}

fn spec(shop: std::net::SocketAddr, agent: std::net::SocketAddr, source: &str) -> String {
    format!(
        r#"name = "blind-source"
rounds = 1
duration = "1s"
warmup = "0s"
order = "fixed"
seed = 1

[load]
users = 1
think_time = ["20ms", "40ms"]
target = "shop"

[[load.tasks]]
name = "home"
requests = [{{ path = "/" }}]

[fault]
target = "shop"
rates = [0.0]

[targets]
shop = {{ url = "http://{shop}", offers = [] }}
agent = "http://{agent}"

[[sources]]
kind = "prometheus"
url = "{source}"
preset = "gauge"
metric = "shop_breaker_state"
label = "breaker"
interval = "50ms"
service = "shop"
"#
    )
}

async fn runner_for(
    shop: std::net::SocketAddr,
    source: Option<&str>,
) -> (Runner, String, TempStore) {
    let agent = agent::Agent::new(
        agent::RawAgentConfig {
            token: Some("t".into()),
            ..agent::RawAgentConfig::default()
        }
        .build()
        .unwrap(),
    );
    let agent_address = serve(agent::fault_api::router(agent)).await;
    let source = source.map_or_else(|| format!("http://{shop}/metrics"), str::to_owned);
    let spec = spec(shop, agent_address, &source);
    let testbed = Testbed {
        frontend: shop,
        services: vec![(ServiceId::new("shop").unwrap(), format!("http://{shop}"))],
        agent: format!("http://{agent_address}"),
        token: "t".into(),
    };
    let db = TempStore::new("blind-source");
    let store = db.open().await;
    (Runner::new(store, testbed), spec, db)
}

/// What a run left: its store (and the directory it lives in), the experiment, what the preflight said.
type Ran = (
    controller::store::Store,
    controller::store::ExperimentId,
    Vec<String>,
    TempStore,
);

/// Runs the spec's one run.
async fn run(blind: fn(usize) -> bool) -> Ran {
    let (runner, spec, db) = runner_for(shop(blind).await, None).await;
    let spec = test_support::spec(&spec);
    let said = runner.check_spec_targets(&spec).await.expect("preflight");
    let experiment = runner
        .run_experiment(&spec, |_| {})
        .await
        .expect("the experiment goes on");
    let store = db.open().await;
    (store, experiment, said, db)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_answering_503_at_the_start_of_a_run_leaves_it_blind_not_aborted() {
    // The preflight's scrape is answered 503, then the run's baseline and the next three scrapes.
    let (store, experiment, said, _db) = run(|n| n < 5).await;
    assert!(
        said.iter()
            .any(|line| line.starts_with("sources[0].url") && line.contains("503")),
        "the preflight says so: {said:?}"
    );
    let runs = store.runs(experiment).await.unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, Status::Finished, "{:?}", runs[0]);
    assert_eq!(
        store.experiment(experiment).await.unwrap().unwrap().status,
        Status::Finished
    );
    let sources = store.run_sources(runs[0].id).await.unwrap();
    assert_eq!(sources.len(), 1);
    let health = &sources[0];
    assert_eq!(health.failures, 4, "{health:?}");
    assert!(
        health.scrapes > health.failures,
        "it answered afterwards: {health:?}"
    );
    assert_eq!(health.blind.len(), 1, "{health:?}");
    assert!(
        health.blind_ms() >= 150,
        "four scrapes 50 ms apart: {health:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_silent_after_its_baseline_is_blind_and_its_opens_are_not_zero() {
    // The preflight and the baseline are answered, nothing after.
    let (store, experiment, said, _db) = run(|n| n >= 2).await;
    assert!(
        said.iter().all(|line| !line.starts_with("sources")),
        "{said:?}"
    );
    let runs = store.runs(experiment).await.unwrap();
    assert_eq!(runs[0].status, Status::Finished, "{:?}", runs[0]);
    let health = &store.run_sources(runs[0].id).await.unwrap()[0];
    assert_eq!(health.failures, health.scrapes - 1, "{health:?}");
    assert!(
        health.blind_ms() >= 900,
        "blind for (nearly) all of the 1 s run: {health:?}"
    );

    let stats = controller::stats::load_experiment(&store, experiment)
        .await
        .unwrap();
    let statement = (stats.experiment.not_measured.iter())
        .map(|line| line.statement.as_str())
        .find(|line| line.contains("was blind"))
        .expect("a statement of the blind source");
    assert!(statement.contains("in 1 of 1 runs"), "{statement}");
    assert!(
        statement.contains(&format!("run {}: ", runs[0].id)),
        "{statement}"
    );
    let condition = &stats.conditions[0];
    for metric in [MetricName::BreakerOpens, MetricName::TimeOpenS] {
        assert!(
            condition.summary(&MetricKey::run(metric)).is_none(),
            "{metric:?} is left out, not 0"
        );
    }
    assert!(
        condition
            .summary(&MetricKey::run(MetricName::Availability))
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_that_never_answers_fails_the_preflight_naming_its_field() {
    let shop = shop(|_| false).await;
    let (runner, spec, _db) = runner_for(shop, Some("http://127.0.0.1:9/metrics")).await;
    let error = runner
        .check_spec_targets(&test_support::spec(&spec))
        .await
        .expect_err("nothing answers there");
    assert!(matches!(error, RunnerError::Testbed(_)), "{error:?}");
    let text = error.to_string();
    assert!(text.contains("sources[0].url: does not answer"), "{text}");
    assert!(text.contains("3 attempts"), "{text}");
}
