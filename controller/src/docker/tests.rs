//! Tests of what needs no engine: parsing container actions, turning readings into samples and the sampler's
//! loop over a fake engine. The engine
//! itself is exercised by the root package's container test (`tests/containers.rs`).

use std::time::Duration;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::discovery::{StackContainer, replica_of_container, replica_urls};
use super::stats::{
    ContainerReading, SampledInterval, StatsSampler, StatsSource, Watched, samples_between,
};
use super::{Deployment, DockerError};
use crate::actions::ContainerAction;
use crate::energy::CpuModel;

fn reading(container: &str, cpu_ns: u64, rx_bytes: u64) -> ContainerReading {
    ContainerReading {
        container: container.into(),
        service: container.trim_end_matches(char::is_numeric).into(),
        replica: 1,
        cpu_ns,
        memory_bytes: 5_000_000,
        rx_bytes,
        tx_bytes: rx_bytes / 2,
    }
}

#[test]
fn actions_parse_by_name_with_their_parameters() {
    assert_eq!(
        ContainerAction::parse("fault.kinds", "pause", None, None).unwrap(),
        ContainerAction::Pause
    );
    assert_eq!(
        ContainerAction::parse("fault.kinds", "kill", None, None).unwrap(),
        ContainerAction::Kill {
            signal: "SIGKILL".into()
        }
    );
    assert_eq!(
        ContainerAction::parse("fault.kinds", "kill", Some("term"), None).unwrap(),
        ContainerAction::Kill {
            signal: "SIGTERM".into()
        }
    );
    let bad_signal = ContainerAction::parse("fault.signal", "kill", Some("SIGFOO"), None)
        .unwrap_err()
        .to_string();
    assert!(bad_signal.starts_with("fault.signal: "), "{bad_signal}");
    let no_network = ContainerAction::parse("fault.network", "disconnect", None, None)
        .unwrap_err()
        .to_string();
    assert!(no_network.starts_with("fault.network: "), "{no_network}");
    let unknown = ContainerAction::parse("fault.kinds", "freeze", None, None)
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("`freeze`") && unknown.contains("pause"),
        "{unknown}"
    );
    // Recorded actions read back as they were written (the ledger keeps them as JSON).
    let disconnect = ContainerAction::Disconnect {
        network: "shop_boutique".into(),
        aliases: vec!["payment".into()],
    };
    let json = serde_json::to_string(&disconnect).unwrap();
    assert_eq!(
        serde_json::from_str::<ContainerAction>(&json).unwrap(),
        disconnect
    );
}

#[test]
fn samples_are_deltas_and_energy_is_split_by_cpu_share() {
    let model = CpuModel {
        idle_watts: 2.0,
        max_watts: 10.0,
    };
    let before = [
        reading("cart1", 1_000_000_000, 100),
        reading("payment1", 3_000_000_000, 1_000),
    ];
    let after = [
        reading("cart1", 1_250_000_000, 400),
        reading("payment1", 3_750_000_000, 1_500),
        // New since the last reading: no delta yet.
        reading("ad1", 9_000_000_000, 10),
    ];
    let samples = samples_between(&before, &after, Duration::from_secs(1), 7, model, 2);
    assert_eq!(samples.len(), 2);
    assert!(samples.iter().all(|sample| sample.second == 7));
    let cart = &samples[0];
    let payment = &samples[1];
    assert_eq!(
        (cart.container.as_str(), payment.container.as_str()),
        ("cart1", "payment1")
    );
    assert!((cart.cpu_seconds - 0.25).abs() < 1e-9);
    assert!((payment.cpu_seconds - 0.75).abs() < 1e-9);
    assert_eq!((cart.rx_bytes, cart.tx_bytes), (300, 150));
    // One busy CPU of two: the machine at 50 % draws 6 W; over 1 s that is 6 J, split 1:3.
    let total = cart.energy_joules + payment.energy_joules;
    assert!((total - 6.0).abs() < 1e-9, "{total}");
    assert!((payment.energy_joules - 3.0 * cart.energy_joules).abs() < 1e-9);
}

#[test]
fn a_restarted_container_counts_from_its_new_counters_and_idle_gets_no_energy() {
    let model = CpuModel::for_cpus(2);
    let before = [reading("cart1", 5_000_000_000, 9_000)];
    let after = [reading("cart1", 200_000_000, 100)];
    let samples = samples_between(&before, &after, Duration::from_secs(1), 1, model, 2);
    assert!((samples[0].cpu_seconds - 0.2).abs() < 1e-9);
    assert_eq!(samples[0].rx_bytes, 100);
    let idle = samples_between(&after, &after, Duration::from_secs(1), 2, model, 2);
    assert_eq!((idle[0].cpu_seconds, idle[0].energy_joules), (0.0, 0.0));
}

fn container(service: &str, number: u32, state: &str, ip: Option<[u8; 4]>) -> StackContainer {
    StackContainer {
        id: format!("{service}{number}"),
        name: format!("shop_{service}_{number}"),
        service: service.into(),
        number,
        state: state.into(),
        addresses: ip
            .map(|ip| ("shop_boutique".to_owned(), std::net::IpAddr::from(ip)))
            .into_iter()
            .collect(),
    }
}

#[test]
fn every_running_replica_is_followed_under_its_own_label() {
    let containers = [
        container("cart", 1, "running", Some([10, 0, 0, 2])),
        container("checkout", 1, "exited", Some([10, 0, 0, 3])),
        container("checkout", 2, "running", Some([10, 0, 0, 4])),
        container("checkout", 3, "running", Some([10, 0, 0, 5])),
        container("checkout", 4, "running", None),
        container("checkout", 5, "running", Some([10, 0, 0, 6])),
    ];
    assert_eq!(
        replica_urls(&containers, 8080),
        [
            ("cart", "http://10.0.0.2:8080"),
            ("checkout", "http://10.0.0.4:8080"),
            ("checkout#3", "http://10.0.0.5:8080"),
            ("checkout#5", "http://10.0.0.6:8080"),
        ]
        .map(|(label, url)| (label.to_owned(), url.to_owned()))
    );
}

#[test]
fn a_recorded_container_names_its_replica() {
    assert_eq!(
        replica_of_container("checkout", "shop_checkout_1"),
        "checkout"
    );
    assert_eq!(
        replica_of_container("checkout", "shop_checkout_2"),
        "checkout#2"
    );
    assert_eq!(
        replica_of_container("checkout", "shop-checkout-3"),
        "checkout#3"
    );
    assert_eq!(replica_of_container("payment", "payment"), "payment");
}

/// An engine whose project gains a replica at each listing and whose containers burn 0.5 CPU-seconds per read;
/// read `fail_read` (counted from 0) fails.
#[derive(Clone)]
struct FakeEngine {
    lists: Arc<AtomicU32>,
    reads: Arc<AtomicU32>,
    fail_read: u32,
}

impl StatsSource for FakeEngine {
    async fn list(&self, project: &Deployment) -> Result<Vec<StackContainer>, DockerError> {
        assert_eq!(project, &Deployment::Compose("shop".into()));
        let listed = self.lists.fetch_add(1, Ordering::SeqCst) + 1;
        Ok((1..=listed)
            .map(|number| container("checkout", number, "running", None))
            .collect())
    }

    async fn read(
        &self,
        containers: &[StackContainer],
    ) -> Result<Vec<ContainerReading>, DockerError> {
        let read = self.reads.fetch_add(1, Ordering::SeqCst);
        if read == self.fail_read {
            return Err(DockerError::Invalid {
                field: "stats".into(),
                message: "engine hiccup".into(),
            });
        }
        Ok(containers
            .iter()
            .map(|container| reading(&container.name, u64::from(read + 1) * 500_000_000, 0))
            .collect())
    }
}

/// Each sample of an interval as (container, interval number).
fn numbered(interval: &SampledInterval) -> Vec<(&str, u32)> {
    let samples = interval.samples.iter();
    samples.map(|s| (s.container.as_str(), s.second)).collect()
}

#[tokio::test(start_paused = true)]
async fn the_sampler_reads_each_period_relists_when_due_and_survives_a_failed_read() {
    let engine = FakeEngine {
        lists: Arc::new(AtomicU32::new(0)),
        reads: Arc::new(AtomicU32::new(0)),
        fail_read: 2,
    };
    let watched = Watched::Project {
        project: Deployment::Compose("shop".into()),
        relist: 2,
    };
    let sampler = StatsSampler::new(engine.clone(), watched, CpuModel::for_cpus(2), 2);
    let (intervals, mut received) = tokio::sync::mpsc::unbounded_channel::<SampledInterval>();
    let (errors, mut failed) = tokio::sync::mpsc::unbounded_channel::<String>();
    let task = tokio::spawn(sampler.run(
        Duration::from_secs(1),
        move |interval| intervals.send(interval).unwrap(),
        move |error| errors.send(error.to_string()).unwrap(),
    ));
    let started = tokio::time::Instant::now();

    // Read 0 (listed: one replica) gives no interval; read 1, a second later, the first.
    let first = received.recv().await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(first.elapsed, Duration::from_secs(1));
    assert_eq!(numbered(&first), [("shop_checkout_1", 1)]);
    assert!((first.samples[0].cpu_seconds - 0.5).abs() < 1e-9);

    // Read 2 lists again (two replicas now) and fails: said, and the interval after it spans both seconds.
    assert!(failed.recv().await.unwrap().contains("engine hiccup"));
    let second = received.recv().await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(second.elapsed, Duration::from_secs(2));
    // The new replica has no earlier reading yet: left out of this interval, in the next.
    assert_eq!(numbered(&second), [("shop_checkout_1", 2)]);
    let third = received.recv().await.unwrap();
    assert_eq!(third.samples.len(), 2);
    assert_eq!(
        engine.lists.load(Ordering::SeqCst),
        3,
        "listed at reads 0, 2 and 4"
    );
    task.abort();
}
