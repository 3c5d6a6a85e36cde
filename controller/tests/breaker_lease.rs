//! The breaker config a run pushes is leased: held while the run lives (renewed like the fault), restored to each
//! service's startup config when the run ends, and — when the controller vanishes mid-run without a word —
//! restored by the services themselves once the lease runs out.

use std::time::{Duration, Instant};

use boutique::ServiceName;
use boutique::breaker_lease::BreakerConfigView;
use controller::runner::Runner;
use controller::spec::ExperimentSpec;
use controller::store::Store;
use controller::test_support::{self, TempStore};
use controller::testbed::{AdminClient, Testbed, start_embedded_stack};

/// The stack starts with its breakers enforcing (the first mode of this spec).
const STACK: &str = r#"
name = "stack"
duration = "10s"
[load]
users = 1
[fault]
target = "payment"
rates = [0.0]
[breaker]
modes = ["enforce"]
"#;

/// A run with every breaker disabled, its config leased for 1 s (renewed every third).
fn disabled_run(duration: &str) -> ExperimentSpec {
    test_support::spec(&format!(
        r#"
name = "disabled"
rounds = 1
duration = "{duration}"
warmup = "0s"
[load]
users = 1
think_time = ["100ms", "200ms"]
[fault]
target = "payment"
rates = [0.0]
lease = "1s"
[breaker]
modes = ["disabled"]
"#
    ))
}

async fn view(admin: &AdminClient, testbed: &Testbed) -> BreakerConfigView {
    let checkout = &testbed
        .services
        .iter()
        .find(|(name, _)| name == ServiceName::Checkout.as_str())
        .expect("checkout")
        .1;
    admin
        .breaker_config(checkout)
        .await
        .expect("GET /_admin/breakers")
}

/// Polls checkout's config until `done` holds or `timeout` passes; returns the last view.
#[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
async fn wait_for(
    admin: &AdminClient,
    testbed: &Testbed,
    timeout: Duration,
    done: impl Fn(&BreakerConfigView) -> bool,
) -> BreakerConfigView {
    let deadline = Instant::now() + timeout;
    loop {
        let seen = view(admin, testbed).await;
        if done(&seen) || Instant::now() > deadline {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn leased_and_disabled(view: &BreakerConfigView) -> bool {
    view.config.mode() == breaker::Mode::Disabled && view.lease.is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_holds_its_config_past_the_lease_and_restores_the_startup_config_at_its_end() {
    let (stack, testbed) = start_embedded_stack(&test_support::spec(STACK))
        .await
        .unwrap();
    let admin = AdminClient::new(testbed.token.clone());
    let startup = view(&admin, &testbed).await;
    assert_eq!(startup.config.mode(), breaker::Mode::Enforce);
    assert_eq!(startup.lease, None);

    let db = TempStore::new("breaker-lease-end");
    let store = db.open().await;
    let runner = Runner::new(store.clone(), testbed.clone());
    let spec = disabled_run("4s");
    let run = tokio::spawn(async move { runner.run_experiment(&spec, |_| {}).await });

    let during = wait_for(
        &admin,
        &testbed,
        Duration::from_secs(10),
        leased_and_disabled,
    )
    .await;
    assert!(leased_and_disabled(&during), "{during:?}");
    assert_eq!(during.lease.unwrap().lease_ms, 1000);
    // Three leases later the run still holds it: renewed while the run lives.
    tokio::time::sleep(Duration::from_secs(3)).await;
    if !run.is_finished() {
        let later = view(&admin, &testbed).await;
        assert!(leased_and_disabled(&later), "{later:?}");
    }

    run.await.unwrap().unwrap();
    let after = view(&admin, &testbed).await;
    assert_eq!(after.config, startup.config, "restored at the run's end");
    assert_eq!(after.lease, None);
    store.close().await;
    stack.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_go_back_by_themselves_when_the_controller_vanishes_mid_run() {
    let (stack, testbed) = start_embedded_stack(&test_support::spec(STACK))
        .await
        .unwrap();
    let admin = AdminClient::new(testbed.token.clone());
    let startup = view(&admin, &testbed).await;

    // The controller lives in its own runtime, so it can be torn down like a killed process: its tasks stop
    // mid-await, nothing they would send on drop can go out.
    let controller = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let db = TempStore::new("breaker-lease-kill");
    controller.spawn({
        let testbed = testbed.clone();
        let location = db.location();
        async move {
            let store = Store::open(&location).await.unwrap();
            let runner = Runner::new(store, testbed);
            let _ = runner.run_experiment(&disabled_run("60s"), |_| {}).await;
        }
    });
    let during = wait_for(
        &admin,
        &testbed,
        Duration::from_secs(10),
        leased_and_disabled,
    )
    .await;
    assert!(leased_and_disabled(&during), "{during:?}");

    controller.shutdown_background();
    let orphaned = view(&admin, &testbed).await;
    assert!(
        leased_and_disabled(&orphaned),
        "nobody restored it: {orphaned:?}"
    );
    // The 1 s lease runs out without renewals: the service restores its startup config by itself.
    let after = wait_for(&admin, &testbed, Duration::from_secs(10), |view| {
        view.lease.is_none()
    })
    .await;
    assert_eq!(after.config, startup.config, "{after:?}");
    assert_eq!(after.lease, None);
    stack.shutdown().await;
}
