//! Samples the testbed once per second during a run: cart sizes (Cart's `/_admin/cart-stats`),
//! every service's worker pool (`/_pool`), and this process's CPU time and energy (RAPL or the
//! CPU-time model, labelled), stored with the load driver's per-second figures.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::time::Instant;

use super::admin::AdminClient;
use super::task::RunTask;
use crate::energy::{CpuModel, EnergyMeter, EnergySource, POWERCAP_ROOT};
use crate::store::CollectorSample;

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
        control: AdminClient,
        cart_url: Option<String>,
        services: Vec<(String, String)>,
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
                    let mut sample = sample(&control, cart_url.as_deref(), &services, second).await;
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
    pub async fn finish(self) -> Vec<CollectorSample> {
        self.task.stop().await;
        std::mem::take(&mut *self.samples.lock())
    }
}

async fn get_json(control: &AdminClient, url: &str) -> Option<Value> {
    let body = control
        .call(Method::GET, url, None, Bytes::new())
        .await
        .ok()?;
    serde_json::from_slice(&body).ok()
}

async fn sample(
    control: &AdminClient,
    cart_url: Option<&str>,
    services: &[(String, String)],
    second: u64,
) -> CollectorSample {
    let mut sample = CollectorSample {
        second,
        ..CollectorSample::default()
    };
    if let Some(cart_url) = cart_url {
        if let Some(stats) = get_json(control, &format!("{cart_url}/_admin/cart-stats")).await {
            sample.cart_mean_items = stats.get("mean_items").and_then(Value::as_f64);
            sample.carts = stats.get("carts").and_then(Value::as_u64);
        }
    }
    let mut pools = Map::new();
    let mut metrics = Map::new();
    let (mut in_flight, mut queued, mut seen) = (0u64, 0u64, false);
    for (name, url) in services {
        if let Some(pool) = get_json(control, &format!("{url}/_pool")).await {
            in_flight += pool.get("in_flight").and_then(Value::as_u64).unwrap_or(0);
            queued += pool.get("queued").and_then(Value::as_u64).unwrap_or(0);
            seen = true;
            pools.insert(name.clone(), pool);
        }
        if let Ok(text) = control
            .call(Method::GET, &format!("{url}/metrics"), None, Bytes::new())
            .await
        {
            metrics.insert(
                name.clone(),
                Value::Object(prometheus_samples(&String::from_utf8_lossy(&text))),
            );
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

/// The samples of a Prometheus text exposition as `"name{labels}" → value` (comments and lines that
/// are not `series value [timestamp]` are skipped).
fn prometheus_samples(text: &str) -> Map<String, Value> {
    let mut samples = Map::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // The series may hold spaces inside quoted label values: split after the closing brace.
        let (series, rest) = match line.rfind('}') {
            Some(brace) => (&line[..=brace], &line[brace + 1..]),
            None => match line.split_once(char::is_whitespace) {
                Some((series, rest)) => (series, rest),
                None => continue,
            },
        };
        let Some(value) = rest
            .split_whitespace()
            .next()
            .and_then(|value| value.parse::<f64>().ok())
        else {
            continue;
        };
        if let Some(number) = serde_json::Number::from_f64(value) {
            samples.insert(series.trim().to_owned(), Value::Number(number));
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::prometheus_samples;

    #[test]
    fn prometheus_text_becomes_series_and_values() {
        let text = "# HELP boutique_pool_in_flight Requests being served.\n\
                    # TYPE boutique_pool_in_flight gauge\n\
                    boutique_pool_in_flight{service=\"cart\"} 3\n\
                    boutique_http_requests_total{service=\"cart\",route=\"GET /a b\"} 41 1700000000\n\
                    plain_total 7\n\
                    broken_line\n\
                    not_a_number{a=\"b\"} many\n";
        let samples = prometheus_samples(text);
        assert_eq!(samples.len(), 3, "{samples:?}");
        assert_eq!(samples["boutique_pool_in_flight{service=\"cart\"}"], 3.0);
        assert_eq!(
            samples["boutique_http_requests_total{service=\"cart\",route=\"GET /a b\"}"],
            41.0
        );
        assert_eq!(samples["plain_total"], 7.0);
    }
}
