//! Per-container CPU, memory and network from the engine's stats, read once a second, and energy attributed
//! per container by its share of the stack's CPU time (modelled: see [`samples_between`]); one sampler
//! ([`StatsSampler`]) for a run's samples and the dashboard's live panel.

use std::sync::Arc;
use std::time::Duration;

use bollard::container::StatsOptions;
use futures::StreamExt;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{Deployment, DockerError, Engine, StackContainer};
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

/// Where a [`StatsSampler`]'s readings come from: the engine, or a fake in tests.
pub trait StatsSource: Send + Sync {
    /// Every container of `deployment`.
    fn list(
        &self,
        deployment: &Deployment,
    ) -> impl Future<Output = Result<Vec<StackContainer>, DockerError>> + Send;
    /// One reading of each running container of `containers`.
    fn read(
        &self,
        containers: &[StackContainer],
    ) -> impl Future<Output = Result<Vec<ContainerReading>, DockerError>> + Send;
}

impl StatsSource for Engine {
    async fn list(&self, deployment: &Deployment) -> Result<Vec<StackContainer>, DockerError> {
        self.containers(deployment).await
    }

    async fn read(
        &self,
        containers: &[StackContainer],
    ) -> Result<Vec<ContainerReading>, DockerError> {
        self.read_stats(containers).await
    }
}

/// Which containers a [`StatsSampler`] reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Watched {
    /// These, throughout (a run's, found when it started).
    Fixed(Vec<StackContainer>),
    /// `project`'s (a compose project's or a swarm stack's), listed at the first read and again every `relist` reads (replicas come
    /// and go).
    Project { project: Deployment, relist: u32 },
}

/// The samples of the interval between two consecutive readings, and how long it lasted.
#[derive(Debug, Clone, PartialEq)]
pub struct SampledInterval {
    pub samples: Vec<ContainerSampleRecord>,
    pub elapsed: Duration,
}

/// Reads containers' counters again and again and turns each two consecutive readings into the samples of the
/// interval between them ([`samples_between`]), numbered from 1. The run's samples and the dashboard's live
/// panel both come from it.
#[derive(Debug)]
pub struct StatsSampler<S> {
    source: S,
    watched: Watched,
    containers: Vec<StackContainer>,
    /// Reads tried so far (a failed one included): when the list is due again.
    reads: u32,
    previous: Option<(Instant, Vec<ContainerReading>)>,
    /// The last interval's number.
    second: u32,
    model: CpuModel,
    cpus: usize,
}

impl<S: StatsSource> StatsSampler<S> {
    /// A sampler whose energy is modelled by `model` over a machine of `cpus` CPUs.
    pub fn new(source: S, watched: Watched, model: CpuModel, cpus: usize) -> Self {
        let containers = match &watched {
            Watched::Fixed(containers) => containers.clone(),
            Watched::Project { .. } => Vec::new(),
        };
        StatsSampler {
            source,
            watched,
            containers,
            reads: 0,
            previous: None,
            second: 0,
            model,
            cpus,
        }
    }

    /// A sampler modelling this machine's power over its CPUs.
    pub fn for_this_machine(source: S, watched: Watched) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::new(source, watched, CpuModel::for_this_machine(), cpus)
    }

    /// Reads once, now: the list first when it is due (when listing fails, the error goes to `on_error` and the
    /// last list is read), then the counters. Answers the interval since the previous successful read; `None`
    /// at the first read, and when reading failed (the error to `on_error`; the previous reading is kept).
    pub async fn read(
        &mut self,
        on_error: &mut impl FnMut(DockerError),
    ) -> Option<SampledInterval> {
        let read = self.reads;
        self.reads = self.reads.wrapping_add(1);
        if let Watched::Project { project, relist } = &self.watched
            && read % (*relist).max(1) == 0
        {
            match self.source.list(project).await {
                Ok(containers) => self.containers = containers,
                Err(error) => on_error(error),
            }
        }
        let readings = match self.source.read(&self.containers).await {
            Ok(readings) => readings,
            Err(error) => {
                on_error(error);
                return None;
            }
        };
        let now = Instant::now();
        let interval = self.previous.as_ref().map(|(then, before)| {
            self.second += 1;
            let elapsed = now - *then;
            SampledInterval {
                samples: samples_between(
                    before,
                    &readings,
                    elapsed,
                    self.second,
                    self.model,
                    self.cpus,
                ),
                elapsed,
            }
        });
        self.previous = Some((now, readings));
        interval
    }

    /// Reads every `period` (a read that overruns delays the next), handing each interval to `on_interval` and
    /// each engine error to `on_error`, until the future is dropped.
    pub async fn run(
        mut self,
        period: Duration,
        mut on_interval: impl FnMut(SampledInterval),
        mut on_error: impl FnMut(DockerError),
    ) {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Some(interval) = self.read(&mut on_error).await {
                on_interval(interval);
            }
        }
    }
}

/// Engine errors a run keeps (the first few).
const KEPT_ERRORS: usize = 16;

/// Samples a run's containers every period until stopped; the samples are numbered from 1.
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
        let sampler = StatsSampler::for_this_machine(engine, Watched::Fixed(containers));
        let task = {
            let (samples, errors) = (Arc::clone(&samples), Arc::clone(&errors));
            tokio::spawn(sampler.run(
                period,
                move |interval| samples.lock().extend(interval.samples),
                move |error| {
                    let mut errors = errors.lock();
                    if errors.len() < KEPT_ERRORS {
                        errors.push(error.to_string());
                    }
                },
            ))
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
