//! Samples the testbed once per second during a run: cart sizes (Cart's `/_admin/cart-stats`),
//! every service's worker pool (`/_pool`), and this process's CPU time and energy (RAPL or the
//! CPU-time model, labelled), stored with the load driver's per-second figures.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::admin::AdminClient;
use super::prometheus::prometheus_samples;
use super::task::RunTask;
use crate::energy::{CpuModel, EnergyMeter, EnergySource, POWERCAP_ROOT};
use crate::store::CollectorSample;
use crate::target::ServiceId;

/// Periodic sampling of one run; stop it with [`Sampler::finish`].
pub struct Sampler {
    samples: Arc<Mutex<Vec<CollectorSample>>>,
    task: RunTask<()>,
    energy_source: EnergySource,
}

impl Sampler {
    /// Starts sampling at `start + 1 s, + 2 s, …`; the sample taken at `start + (k + 1) s` is
    /// labelled second `k` (the second it closes), like the load driver's seconds.
    pub fn start(
        admin: AdminClient,
        cart_url: Option<String>,
        services: Vec<(ServiceId, String)>,
        start: Instant,
    ) -> Self {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let mut meter = EnergyMeter::detect(
            std::path::Path::new(POWERCAP_ROOT),
            CpuModel::for_this_machine(),
        );
        let energy_source = meter.source();
        // The first reading is the baseline.
        let _ = meter.sample(Duration::ZERO);
        let task = {
            let samples = Arc::clone(&samples);
            RunTask::spawn(async move {
                let mut second = 0u64;
                let mut last = Instant::now();
                loop {
                    tokio::time::sleep_until(start + Duration::from_secs(second + 1)).await;
                    let now = Instant::now();
                    let energy = meter.sample(now - last).ok();
                    last = now;
                    let mut sample = sample(&admin, cart_url.as_deref(), &services, second).await;
                    sample.energy_joules = energy.map(|e| e.joules);
                    sample.cpu_seconds = energy.map(|e| e.cpu_seconds);
                    samples.lock().push(sample);
                    second += 1;
                }
            })
        };
        Sampler {
            samples,
            task,
            energy_source,
        }
    }

    /// Whether the energy figures are measured (RAPL) or modelled.
    pub fn energy_source(&self) -> EnergySource {
        self.energy_source
    }

    /// Stops sampling and returns the samples taken.
    /// Stops sampling; returns the samples and, if the sampling task had panicked, its message.
    pub async fn finish(self) -> (Vec<CollectorSample>, Option<String>) {
        let panicked = self.task.stop().await;
        (std::mem::take(&mut *self.samples.lock()), panicked)
    }
}

async fn sample(
    admin: &AdminClient,
    cart_url: Option<&str>,
    services: &[(ServiceId, String)],
    second: u64,
) -> CollectorSample {
    let mut sample = CollectorSample {
        second,
        ..CollectorSample::default()
    };
    if let Some(cart_url) = cart_url
        && let Ok(stats) = admin.cart_stats(cart_url).await
    {
        sample.cart_mean_items = Some(stats.mean_items);
        sample.carts = Some(stats.carts as u64);
    }
    let mut pools = Map::new();
    let mut metrics = Map::new();
    let (mut in_flight, mut queued, mut seen) = (0u64, 0u64, false);
    for (name, url) in services {
        if let Ok(pool) = admin.pool(url).await {
            in_flight += pool.in_flight as u64;
            queued += pool.queued as u64;
            seen = true;
            pools.insert(name.to_string(), json!(pool));
        }
        if let Ok(text) = admin.get_text(&format!("{url}/metrics")).await {
            metrics.insert(name.to_string(), Value::Object(prometheus_samples(&text)));
        }
    }
    if seen {
        sample.pool_in_flight = Some(in_flight);
        sample.pool_queued = Some(queued);
    }
    if seen || !metrics.is_empty() {
        sample.extra = Some(json!({ "pools": pools, "metrics": metrics }));
    }
    sample
}
