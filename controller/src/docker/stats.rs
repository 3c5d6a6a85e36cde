//! Per-container CPU, memory and network from the engine's stats, read once a second, and energy attributed
//! per container by its share of the stack's CPU time (modelled: see [`samples_between`]).

use std::sync::Arc;
use std::time::Duration;

use bollard::container::StatsOptions;
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use super::{DockerError, Engine, StackContainer};
use crate::energy::CpuModel;
use crate::store::ContainerSampleRecord;

/// Cumulative counters of one container at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerReading {
    pub container: String,
    pub service: String,
    pub replica: u32,
    /// CPU time used since the container started, in nanoseconds.
    pub cpu_ns: u64,
    pub memory_bytes: u64,
    /// Bytes received and sent since the container started, over every network.
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

impl Engine {
    /// One reading of each container that is running (a stopped one has no stats and is left out).
    pub async fn read_stats(
        &self,
        containers: &[StackContainer],
    ) -> Result<Vec<ContainerReading>, DockerError> {
        let reads = containers.iter().map(|container| async move {
            let mut stream = self.docker.stats(
                &container.id,
                Some(StatsOptions {
                    stream: false,
                    one_shot: true,
                }),
            );
            let stats = match stream.next().await {
                Some(Ok(stats)) => stats,
                Some(Err(source)) => return Err(self.failed("stats", &container.name, source)),
                None => return Ok(None),
            };
            // A stopped container answers with empty counters.
            if stats.cpu_stats.cpu_usage.total_usage == 0 {
                return Ok(None);
            }
            let (rx_bytes, tx_bytes) = stats
                .networks
                .unwrap_or_default()
                .values()
                .fold((0, 0), |(rx, tx), network| {
                    (rx + network.rx_bytes, tx + network.tx_bytes)
                });
            Ok(Some(ContainerReading {
                container: container.name.clone(),
                service: container.service.clone(),
                replica: container.number,
                cpu_ns: stats.cpu_stats.cpu_usage.total_usage,
                memory_bytes: stats.memory_stats.usage.unwrap_or(0),
                rx_bytes,
                tx_bytes,
            }))
        });
        let readings = futures::future::join_all(reads).await;
        let mut out = Vec::with_capacity(readings.len());
        for reading in readings {
            if let Some(reading) = reading? {
                out.push(reading);
            }
        }
        Ok(out)
    }
}

/// The samples of one interval from two readings `elapsed` apart: CPU seconds and bytes are the deltas
/// (a container that restarted in between starts from its new counters), memory is the newer reading.
///
/// Energy is modelled: the machine's power at the stack's CPU utilisation (`model`, the same linear curve as
/// the run's energy), over `elapsed`, split between the containers by their share of the stack's CPU time.
/// A container seen only in the newer reading has no delta yet and is left out.
pub fn samples_between(
    before: &[ContainerReading],
    after: &[ContainerReading],
    elapsed: Duration,
    second: u32,
    model: CpuModel,
    cpus: usize,
) -> Vec<ContainerSampleRecord> {
    let delta = |now: u64, then: u64| now.checked_sub(then).unwrap_or(now);
    let mut samples: Vec<ContainerSampleRecord> = after
        .iter()
        .filter_map(|now| {
            let then = before.iter().find(|then| then.container == now.container)?;
            Some(ContainerSampleRecord {
                second,
                container: now.container.clone(),
                service: now.service.clone(),
                replica: now.replica,
                cpu_seconds: delta(now.cpu_ns, then.cpu_ns) as f64 / 1e9,
                memory_bytes: now.memory_bytes,
                rx_bytes: delta(now.rx_bytes, then.rx_bytes),
                tx_bytes: delta(now.tx_bytes, then.tx_bytes),
                energy_joules: 0.0,
            })
        })
        .collect();
    let busy: f64 = samples.iter().map(|sample| sample.cpu_seconds).sum();
    let seconds = elapsed.as_secs_f64();
    if busy > 0.0 && seconds > 0.0 {
        let utilisation = busy / (seconds * cpus.max(1) as f64);
        let joules = model.watts(utilisation) * seconds;
        for sample in &mut samples {
            sample.energy_joules = joules * sample.cpu_seconds / busy;
        }
    }
    samples
}

/// Samples a stack's containers once a second until stopped; the samples are numbered from 1.
#[derive(Debug)]
pub struct ContainerSampler {
    samples: Arc<Mutex<Vec<ContainerSampleRecord>>>,
    errors: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl ContainerSampler {
    /// Starts sampling `containers` every `period`.
    pub fn start(engine: Engine, containers: Vec<StackContainer>, period: Duration) -> Self {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let task = {
            let (samples, errors) = (Arc::clone(&samples), Arc::clone(&errors));
            let model = CpuModel::for_this_machine();
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(period);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut previous: Option<(tokio::time::Instant, Vec<ContainerReading>)> = None;
                let mut second = 0u32;
                loop {
                    ticks.tick().await;
                    let readings = match engine.read_stats(&containers).await {
                        Ok(readings) => readings,
                        Err(error) => {
                            let mut errors = errors.lock();
                            if errors.len() < 16 {
                                errors.push(error.to_string());
                            }
                            continue;
                        }
                    };
                    let now = tokio::time::Instant::now();
                    if let Some((then, before)) = &previous {
                        second += 1;
                        let interval =
                            samples_between(before, &readings, now - *then, second, model, cpus);
                        samples.lock().extend(interval);
                    }
                    previous = Some((now, readings));
                }
            })
        };
        ContainerSampler {
            samples,
            errors,
            task,
        }
    }

    /// Stops sampling; returns the samples and the engine errors met (the first few).
    pub fn stop(self) -> (Vec<ContainerSampleRecord>, Vec<String>) {
        self.task.abort();
        let samples = std::mem::take(&mut *self.samples.lock());
        let errors = std::mem::take(&mut *self.errors.lock());
        (samples, errors)
    }
}
