//! A scaled service on the machine's Docker Engine: the stack brought up with `--scale checkout=3`, a short
//! experiment through `tolerant run --compose` with Payment answering 500s, and then what the runner stored must
//! show the replicas apart — transitions of at least two checkout replicas under their own labels (`checkout`,
//! `checkout#2`, …) and orders taken by at least two replicas (their calls to Payment in their own `/metrics`,
//! sampled per replica), so the frontend spread its calls over them. Everything the test made is removed at the end.
//!
//! Without an engine the test is skipped, unless `CI` is set: then it fails.

use std::collections::BTreeSet;

use controller::store::{Status, Store};

mod common;

use common::compose::{Project, build_image, engine_and_compose, tolerant_with_token};
use controller::test_support::TempStore;

/// Checkouts only, at a fixed pace; Payment fails every charge; only Checkout's breakers act, tripping on two
/// failures and opening for a second, so every replica trips and probes a few times in the run.
const SPEC: &str = r#"
name = "replicas"
rounds = 1
duration = "8s"
warmup = "1s"
order = "fixed"
seed = 12

[load]
users = 20
rate = 30.0
timeout = "3s"

[[load.tasks]]
name = "checkout"
requests = [
  { method = "POST", path = "/cart", form = { product_id = "OLJCESPC7Z", quantity = "1" }, name = "add to cart" },
  { method = "POST", path = "/cart/checkout", name = "checkout", form = { email = "someone@example.com", street_address = "1600 Amphitheatre Parkway", zip_code = "94043", city = "Mountain View", state = "CA", country = "United States", credit_card_number = "4432801561520454", credit_card_expiration_month = "1", credit_card_expiration_year = "2039", credit_card_cvv = "672" } },
]

[fault]
target = "payment"
kind = "error"
rates = [1.0]
lease = "10s"

[breaker]
modes = ["enforce"]
services = ["checkout"]

[breaker.trip]
consecutive_failures = 2

[breaker.open]
base = "1s"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_replica_of_a_scaled_service_has_its_own_breakers_and_gets_calls() {
    let Some((engine, program)) = engine_and_compose().await else {
        return;
    };
    build_image();
    let scratch = TempStore::new("replicas");
    let db = scratch.location();
    let project = Project::new("replicas", program);
    project.run(&["up", "-d", "--scale", "checkout=3"]);
    let name = project.name.clone();
    let checkouts = engine.service(&name, "checkout").await.expect("checkout");
    assert_eq!(checkouts.len(), 3, "{checkouts:?}");
    project.wait_for_dashboard().await;

    std::fs::write(scratch.dir().join("replicas.toml"), SPEC).expect("write the spec");
    tolerant_with_token(
        scratch.dir(),
        &[
            "run",
            "replicas.toml",
            "--fresh",
            "--db",
            &db,
            "--compose",
            &name,
        ],
    );

    let store = Store::open(&db).await.expect("open the test database");
    let experiment = store
        .experiments()
        .await
        .expect("experiments")
        .into_iter()
        .find(|row| row.name == "replicas")
        .expect("the experiment is stored");
    let runs = store.runs(experiment.id).await.expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, Status::Finished, "{:?}", runs[0]);
    let run = runs[0].id;

    // Transitions of checkout->payment under each replica's own label and breaker name.
    let transitions = store.transitions(run).await.expect("transitions");
    let tripped: BTreeSet<(String, String)> = transitions
        .iter()
        .filter(|t| t.service.starts_with("checkout") && t.to == breaker::State::Open)
        .map(|t| (t.service.clone(), t.breaker.clone()))
        .collect();
    assert!(
        tripped.len() >= 2,
        "opens of fewer than two replicas: {tripped:?}"
    );
    for (service, breaker) in &tripped {
        assert_eq!(breaker, &format!("{service}->payment"), "{tripped:?}");
    }
    assert!(
        transitions
            .iter()
            .all(|t| !t.service.starts_with("frontend")),
        "the frontend's breakers were to be disabled: {transitions:?}"
    );

    // Every replica is sampled under its label; at least two took orders from the frontend (their own calls to
    // Payment, made or rejected, are counted only when an order reached them; health checks make none).
    let samples = store.samples(run).await.expect("samples");
    // The latest second the sampler read the services' `/metrics` in (the load's last seconds may have none).
    let metrics = samples
        .iter()
        .rev()
        .find_map(|sample| sample.collector.extra.as_ref()?.get("metrics")?.as_object())
        .expect("the services' metrics are sampled");
    let served: Vec<&String> = metrics
        .iter()
        .filter(|(label, _)| label.starts_with("checkout"))
        .filter(|(_, series)| {
            series.as_object().is_some_and(|series| {
                series.iter().any(|(name, value)| {
                    name.starts_with("boutique_dependency_calls_total")
                        && name.contains("checkout->payment")
                        && value.as_f64().is_some_and(|count| count > 0.0)
                })
            })
        })
        .map(|(label, _)| label)
        .collect();
    assert!(
        served.len() >= 2,
        "checkout calls reached fewer than two replicas: {served:?} of {:?}",
        metrics.keys().collect::<Vec<_>>()
    );
    store.close().await;

    drop(project);
    assert!(engine.stack(&name).await.expect("stack").is_empty());
}
