//! The report's per-container section: the compose stack's stored per-container samples (one row per container
//! per second, every finished run of the experiment) summed up per service — mean CPU of one container, its
//! peak memory, the bytes it moved and its modelled energy.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::store::ContainerSampleRecord;

/// One service's containers over the experiment's runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContainerUsage {
    pub service: String,
    /// Containers (replicas) seen.
    pub containers: usize,
    /// Container-seconds sampled.
    pub seconds: usize,
    /// Mean CPU of one container over its sampled seconds, in percent of one core.
    pub mean_cpu_percent: f64,
    /// Highest memory any of its containers used in a second.
    pub peak_memory_bytes: u64,
    /// Bytes received and sent, over every network, summed over its containers.
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    /// Modelled: the machine's modelled power at the stack's CPU use, split by CPU share (see
    /// [`crate::docker::stats::samples_between`]).
    pub modelled_energy_joules: f64,
}

/// Per service, in name order; empty without samples.
pub fn container_usage(samples: &[ContainerSampleRecord]) -> Vec<ContainerUsage> {
    let mut by_service: BTreeMap<&str, (ContainerUsage, Vec<&str>)> = BTreeMap::new();
    for sample in samples {
        let (usage, containers) = by_service.entry(&sample.service).or_insert_with(|| {
            (
                ContainerUsage {
                    service: sample.service.clone(),
                    containers: 0,
                    seconds: 0,
                    mean_cpu_percent: 0.0,
                    peak_memory_bytes: 0,
                    rx_bytes: 0,
                    tx_bytes: 0,
                    modelled_energy_joules: 0.0,
                },
                Vec::new(),
            )
        });
        if !containers.contains(&sample.container.as_str()) {
            containers.push(&sample.container);
        }
        usage.seconds += 1;
        // Summed here, divided by the seconds below.
        usage.mean_cpu_percent += sample.cpu_seconds * 100.0;
        usage.peak_memory_bytes = usage.peak_memory_bytes.max(sample.memory_bytes);
        usage.rx_bytes = usage.rx_bytes.saturating_add(sample.rx_bytes);
        usage.tx_bytes = usage.tx_bytes.saturating_add(sample.tx_bytes);
        usage.modelled_energy_joules += sample.energy_joules;
    }
    by_service
        .into_values()
        .map(|(mut usage, containers)| {
            usage.containers = containers.len();
            usage.mean_cpu_percent /= usage.seconds.max(1) as f64;
            usage
        })
        .collect()
}

fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1024.0 * 1024.0))
}

/// The *Containers* section, when there is any usage.
pub fn containers_table(out: &mut String, usage: &[ContainerUsage]) {
    if usage.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Containers\n");
    let _ = writeln!(
        out,
        "Per service, over every run's per-container samples (once a second, from the Docker Engine's \
         stats). Energy is **modelled**: the machine's modelled power at the stack's CPU use, split \
         between containers by their share of CPU time.\n"
    );
    let _ = writeln!(
        out,
        "| service | containers | container-seconds | mean CPU % (one container) | peak memory (MiB) | \
         network in (MiB) | network out (MiB) | energy, modelled (J) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for row in usage {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {} | {} | {} | {:.1} |",
            row.service,
            row.containers,
            row.seconds,
            row.mean_cpu_percent,
            mib(row.peak_memory_bytes),
            mib(row.rx_bytes),
            mib(row.tx_bytes),
            row.modelled_energy_joules
        );
    }
    let _ = writeln!(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(container: &str, service: &str, cpu: f64, memory: u64) -> ContainerSampleRecord {
        ContainerSampleRecord {
            second: 1,
            container: container.into(),
            service: service.into(),
            replica: 1,
            cpu_seconds: cpu,
            memory_bytes: memory,
            rx_bytes: 1024 * 1024,
            tx_bytes: 512 * 1024,
            energy_joules: 2.0,
        }
    }

    #[test]
    fn samples_are_summed_up_per_service_with_energy_labelled_modelled() {
        let samples = [
            sample("shop_checkout_1", "checkout", 0.10, 30 << 20),
            sample("shop_checkout_2", "checkout", 0.30, 50 << 20),
            sample("shop_checkout_1", "checkout", 0.20, 40 << 20),
            sample("shop_payment_1", "payment", 0.05, 20 << 20),
        ];
        let usage = container_usage(&samples);
        assert_eq!(usage.len(), 2);
        let checkout = &usage[0];
        assert_eq!(checkout.service, "checkout");
        assert_eq!((checkout.containers, checkout.seconds), (2, 3));
        assert!(
            (checkout.mean_cpu_percent - 20.0).abs() < 1e-9,
            "{checkout:?}"
        );
        assert_eq!(checkout.peak_memory_bytes, 50 << 20);
        assert_eq!(checkout.rx_bytes, 3 * 1024 * 1024);
        assert!((checkout.modelled_energy_joules - 6.0).abs() < 1e-9);

        let mut out = String::new();
        containers_table(&mut out, &usage);
        assert!(out.contains("## Containers"));
        assert!(out.contains("energy, modelled (J)"));
        assert!(
            out.contains("| checkout | 2 | 3 | 20.0 | 50.0 | 3.0 | 1.5 | 6.0 |"),
            "{out}"
        );
        assert!(
            out.contains("| payment | 1 | 1 | 5.0 | 20.0 | 1.0 | 0.5 | 2.0 |"),
            "{out}"
        );

        let mut empty = String::new();
        containers_table(&mut empty, &container_usage(&[]));
        assert!(empty.is_empty());
    }
}
