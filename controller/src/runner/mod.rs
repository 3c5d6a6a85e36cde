//! Runner: executes an experiment's plan against a testbed, one run after another — reset the
//! testbed, apply the condition's breaker config, apply its fault through the agent (renewing the
//! lease while the run lasts), drive load for warmup + duration, collect transitions and fault
//! events, remove the fault, and store the run in one transaction.

mod admin;
mod agent_stream;
mod preflight;
mod resume;
mod sampler;
mod stop;
mod task;
mod transitions;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde_json::json;

pub use admin::{ADMIN_CALL_TIMEOUT, AdminClient, AdminError};
pub use agent_stream::{AgentStream, parse_agent_event};
pub use resume::{ResumePoint, StartChoice, choose_start, latest_unfinished};
pub use sampler::Sampler;
pub use stop::StopMonitor;
pub use task::RunTask;
pub use transitions::{TransitionCollector, parse_transition};

use crate::load::{self, LoadConfig, Workload};
use crate::spec::{ExperimentSpec, FaultKind, Mix, PlannedRun};
use crate::store::{ExperimentId, FaultEventRecord, RunId, RunRecord, Status, Store, StoreError};

/// Where the testbed lives and how to talk to it.
#[derive(Debug, Clone)]
pub struct Testbed {
    /// The frontend the virtual users load.
    pub frontend: SocketAddr,
    /// Every service's base URL (`http://…`), by name: reset, breaker config, transition streams.
    pub services: Vec<(String, String)>,
    /// Base URL of the fault agent's control API.
    pub agent: String,
    /// Bearer token for admin and agent mutations.
    pub token: String,
}

impl Testbed {
    /// The testbed of an embedded stack started by this process.
    pub fn of_stack(stack: &boutique::RunningStack, token: impl Into<String>) -> Self {
        use boutique::ServiceName;
        Testbed {
            frontend: stack.addrs()[&ServiceName::Frontend],
            services: ServiceName::ALL
                .iter()
                .map(|service| (service.to_string(), stack.url(*service)))
                .collect(),
            agent: stack.url(ServiceName::Payment),
            token: token.into(),
        }
    }
}

/// The service whose agent the embedded stack exposes (`/_agent/...` on Payment).
pub const EMBEDDED_AGENT_SERVICE: &str = "payment";

/// Starts the ten boutique services in this process for a spec: the token is fresh and random,
/// the breakers start with the spec's config in its first mode.
pub async fn start_embedded_stack(
    spec: &ExperimentSpec,
) -> Result<(boutique::RunningStack, Testbed), RunnerError> {
    let injects = spec.fault.rates.iter().any(|rate| *rate > 0.0);
    if injects && spec.fault.target != EMBEDDED_AGENT_SERVICE {
        return Err(RunnerError::Testbed(format!(
            "fault.target: the embedded stack runs its agent in {EMBEDDED_AGENT_SERVICE} only, not in {}",
            spec.fault.target
        )));
    }
    let token = random_token();
    let config = boutique::StackConfig {
        breaker: spec.breaker_config(spec.breaker.modes[0]),
        token: Some(token.clone()),
        agent: agent::AgentConfig {
            token: Some(token.clone()),
            seed: spec.seed,
            ..agent::AgentConfig::default()
        },
        seed: spec.seed,
        ..boutique::StackConfig::default()
    };
    let stack = boutique::RunningStack::start(config)
        .await
        .map_err(|e| RunnerError::Testbed(e.to_string()))?;
    let testbed = Testbed::of_stack(&stack, token);
    Ok((stack, testbed))
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("storage: {0}")]
    Store(#[from] StoreError),
    #[error("testbed: {0}")]
    Testbed(String),
    #[error("testbed admin call: {0}")]
    Admin(#[from] AdminError),
    #[error("load: {0}")]
    Load(#[from] load::LoadError),
}

/// What the runner reports as it goes.
#[derive(Debug, Clone)]
pub enum Progress {
    RunStarted {
        run: RunId,
        planned: PlannedRun,
        total: usize,
    },
    RunFinished {
        run: RunId,
        planned: PlannedRun,
        total: usize,
        status: Status,
        availability: Option<f64>,
    },
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Runs experiments against one testbed and stores what they saw.
pub struct Runner {
    store: Store,
    testbed: Testbed,
    control: AdminClient,
    /// Where a copy of every closed second of load goes while a run drives it (the live dashboard).
    live_seconds: Option<load::SecondSink>,
}

impl Runner {
    pub fn new(store: Store, testbed: Testbed) -> Self {
        let control = AdminClient::new(testbed.token.clone());
        Runner {
            store,
            testbed,
            control,
            live_seconds: None,
        }
    }

    /// Also sends a copy of every closed second of load to `sink` as runs go (per-endpoint latency
    /// and outcomes for a live view); a closed receiver is ignored.
    pub fn with_live_seconds(mut self, sink: load::SecondSink) -> Self {
        self.live_seconds = Some(sink);
        self
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Stores the experiment and runs its whole plan in order.
    pub async fn run_experiment(
        &self,
        spec: &ExperimentSpec,
        progress: impl FnMut(Progress),
    ) -> Result<ExperimentId, RunnerError> {
        let experiment = self.store.create_experiment(spec, now_ms()).await?;
        self.store
            .set_experiment_status(experiment, Status::Running, now_ms(), None)
            .await?;
        self.run_remaining(spec, experiment, &BTreeSet::new(), progress)
            .await
    }

    /// Runs every plan position not in `done`, in plan order, then marks the experiment finished
    /// (or aborted with the error that stopped it). A run its stop condition aborts is an outcome,
    /// not an error: the plan goes on.
    pub async fn run_remaining(
        &self,
        spec: &ExperimentSpec,
        experiment: ExperimentId,
        done: &BTreeSet<usize>,
        mut progress: impl FnMut(Progress),
    ) -> Result<ExperimentId, RunnerError> {
        let plan = spec.plan();
        for planned in plan.iter().filter(|p| !done.contains(&p.sequence)) {
            if let Err(error) = self
                .run_one(spec, experiment, planned, plan.len(), &mut progress)
                .await
            {
                self.store
                    .set_experiment_status(
                        experiment,
                        Status::Aborted,
                        now_ms(),
                        Some(&error.to_string()),
                    )
                    .await?;
                return Err(error);
            }
        }
        self.store
            .set_experiment_status(experiment, Status::Finished, now_ms(), None)
            .await?;
        Ok(experiment)
    }

    /// Prepares the testbed for a condition: carts and breakers reset, the mode's config applied.
    async fn prepare(
        &self,
        spec: &ExperimentSpec,
        planned: &PlannedRun,
    ) -> Result<(), RunnerError> {
        let config = spec.breaker_config(planned.condition.breaker_mode);
        for (_, url) in &self.testbed.services {
            self.control.reset(url).await?;
            self.control.set_breakers(url, &config).await?;
        }
        Ok(())
    }

    /// One run: prepare, fault on, load, fault off, store.
    pub async fn run_one(
        &self,
        spec: &ExperimentSpec,
        experiment: ExperimentId,
        planned: &PlannedRun,
        total: usize,
        progress: &mut impl FnMut(Progress),
    ) -> Result<RunId, RunnerError> {
        self.prepare(spec, planned).await?;
        let service_urls: Vec<String> = self
            .testbed
            .services
            .iter()
            .map(|(_, url)| url.clone())
            .collect();
        // Subscribed before the run exists, so a failure leaves no run behind.
        let transitions = TransitionCollector::connect(&service_urls)
            .await
            .map_err(RunnerError::Testbed)?;
        // The agent's own account of the fault (optional: an agent without a stream is no error).
        let agent_stream = AgentStream::connect(&self.testbed.agent).await;

        let run = self
            .store
            .start_run(
                experiment,
                planned,
                spec.run_warmup(),
                spec.run_duration(),
                now_ms(),
            )
            .await?;
        progress(Progress::RunStarted {
            run,
            planned: *planned,
            total,
        });

        let fault_events = Arc::new(Mutex::new(Vec::new()));
        let fault_id = format!("experiment-{}-run-{}", experiment.0, run.0);
        let fault = (planned.condition.fault_rate > 0.0).then(|| fault_spec(spec, planned));
        let mut renewal = None;
        let mut abort_reason = None;
        let mut fault_applied = false;
        if let Some(fault) = &fault {
            match self
                .control
                .put_fault(&self.testbed.agent, &fault_id, fault)
                .await
            {
                Ok(()) => {
                    fault_applied = true;
                    fault_events.lock().push(fault_event(
                        "applied",
                        &fault_id,
                        fault.to_json_value(),
                    ));
                    renewal = Some(self.spawn_renewal(&fault_id, spec.fault.lease, &fault_events));
                }
                Err(error) => abort_reason = Some(format!("fault not applied: {error}")),
            }
        }

        let cart_url = self
            .testbed
            .services
            .iter()
            .find(|(name, _)| name == "cart")
            .map(|(_, url)| url.clone());
        let sampler = Sampler::start(
            self.control.clone(),
            cart_url,
            self.testbed.services.clone(),
            tokio::time::Instant::now(),
        );
        // Closed seconds feed the stop condition (if any); it ends the load early when it holds.
        let (second_sink, mut closed_seconds) =
            tokio::sync::mpsc::unbounded_channel::<load::SecondStats>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<String>();
        let mut monitor = spec.stop.as_ref().and_then(StopMonitor::new);
        let live_seconds = self.live_seconds.clone();
        let watcher = tokio::spawn(async move {
            let mut seconds = Vec::new();
            let mut stop_tx = Some(stop_tx);
            while let Some(second) = closed_seconds.recv().await {
                if let Some(live) = &live_seconds {
                    let _ = live.send(second.clone());
                }
                if let Some(reason) = monitor.as_mut().and_then(|m| m.observe(&second)) {
                    if let Some(stop_tx) = stop_tx.take() {
                        let _ = stop_tx.send(reason);
                    }
                }
                seconds.push(second);
            }
            seconds
        });
        let stop_reason = Arc::new(Mutex::new(None));
        let stop_signal = {
            let stop_reason = Arc::clone(&stop_reason);
            async move {
                match stop_rx.await {
                    Ok(reason) => *stop_reason.lock() = Some(reason),
                    // The watcher ended without a reason: never stop early.
                    Err(_) => std::future::pending::<()>().await,
                }
            }
        };
        let outcome = if abort_reason.is_none() {
            let config = LoadConfig {
                target: self.testbed.frontend,
                workload: match spec.load.mix {
                    Mix::OnlineBoutique => Workload::OnlineBoutique,
                },
                users: spec.load.users,
                think_time: spec.think_time(),
                rate: spec.load.rate,
                timeout: spec.load.timeout,
                warmup: spec.run_warmup(),
                duration: spec.run_duration(),
                seed: spec.seed ^ (planned.sequence as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            };
            Some(load::run_until(config, Some(second_sink), stop_signal).await)
        } else {
            drop(second_sink);
            drop(stop_signal);
            None
        };
        let (report, load_error) = match outcome {
            Some(Ok(report)) => (Some(report), None),
            Some(Err(error)) => (None, Some(error)),
            None => (None, None),
        };

        if let Some(renewal) = renewal {
            renewal.stop().await;
        }
        // Removed as soon as the load ends, a stop condition included.
        if fault_applied {
            match self
                .control
                .delete_fault(&self.testbed.agent, &fault_id)
                .await
            {
                Ok(()) => fault_events
                    .lock()
                    .push(fault_event("removed", &fault_id, json!({}))),
                Err(error) => fault_events.lock().push(fault_event(
                    "remove_failed",
                    &fault_id,
                    json!({ "error": error.to_string() }),
                )),
            }
        }
        let closed = watcher.await.unwrap_or_default();
        if let Some(reason) = stop_reason.lock().take() {
            abort_reason = Some(reason);
        }
        let energy_source = sampler.energy_source();
        let collector = sampler.finish().await;
        // Energy of the measured part (seconds after the warmup), labelled measured or modelled.
        let warmup_seconds = spec.run_warmup().as_secs_f64().ceil() as u64;
        let measured_energy: Vec<f64> = collector
            .iter()
            .filter(|sample| sample.second >= warmup_seconds)
            .filter_map(|sample| sample.energy_joules)
            .collect();
        let energy = (!measured_energy.is_empty())
            .then(|| (measured_energy.iter().sum::<f64>(), energy_source));
        let transitions = transitions.finish().await;
        match agent_stream {
            Ok(stream) => {
                let events = if fault_applied {
                    stream
                        .finish_after_removal(&fault_id, Duration::from_secs(1))
                        .await
                } else {
                    stream.finish().await
                };
                fault_events.lock().extend(events);
            }
            Err(error) => fault_events.lock().push(fault_event(
                "agent:stream_unavailable",
                "",
                json!({ "error": error }),
            )),
        }
        if let Some(error) = load_error {
            // The fault is off and nothing is stored; the run stays `running` until a resume marks
            // it interrupted.
            return Err(error.into());
        }

        let (endpoint_names, seconds, endpoints) = match report {
            Some(report) => (
                report.endpoints.iter().map(|e| e.name.clone()).collect(),
                closed,
                report.endpoints,
            ),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        let status = if abort_reason.is_some() {
            Status::Aborted
        } else {
            Status::Finished
        };
        let record = RunRecord {
            status,
            abort_reason,
            finished_at_ms: now_ms(),
            endpoint_names,
            seconds,
            endpoints,
            collector,
            transitions,
            fault_events: {
                let mut events = std::mem::take(&mut *fault_events.lock());
                // One timeline: the runner's control calls and the agent's events, by time.
                events.sort_by_key(|event| event.at_ms);
                events
            },
            energy,
        };
        let availability = record.outcomes().availability();
        self.store.finish_run(run, &record).await?;
        progress(Progress::RunFinished {
            run,
            planned: *planned,
            total,
            status,
            availability,
        });
        Ok(run)
    }

    /// Renews the fault's lease every third of its length until aborted.
    fn spawn_renewal(
        &self,
        fault_id: &str,
        lease: Duration,
        events: &Arc<Mutex<Vec<FaultEventRecord>>>,
    ) -> RunTask<()> {
        let control = self.control.clone();
        let agent_url = self.testbed.agent.clone();
        let fault_id = fault_id.to_owned();
        let events = Arc::clone(events);
        RunTask::spawn(async move {
            let period = lease / 3;
            loop {
                tokio::time::sleep(period).await;
                let event = match control.renew_fault(&agent_url, &fault_id).await {
                    Ok(()) => fault_event("renewed", &fault_id, json!({})),
                    Err(error) => fault_event(
                        "renew_failed",
                        &fault_id,
                        json!({ "error": error.to_string() }),
                    ),
                };
                events.lock().push(event);
            }
        })
    }
}

fn fault_event(event: &str, fault_id: &str, detail: serde_json::Value) -> FaultEventRecord {
    FaultEventRecord {
        at_ms: now_ms(),
        event: event.to_owned(),
        fault_id: fault_id.to_owned(),
        detail,
    }
}

/// The agent's fault document for a planned run.
pub fn fault_spec(spec: &ExperimentSpec, planned: &PlannedRun) -> agent::api::FaultSpec {
    let kind = match planned.condition.fault {
        FaultKind::Error { status } => agent::api::FaultKind::Error { status, body: None },
        FaultKind::Hang => agent::api::FaultKind::Hang,
        FaultKind::Delay { delay, jitter } => agent::api::FaultKind::Delay { delay, jitter },
        FaultKind::Reset => agent::api::FaultKind::Reset,
    };
    agent::api::FaultSpec {
        kind,
        rate: planned.condition.fault_rate,
        matcher: agent::api::MatchRule {
            method: spec.fault.match_rule.method.clone(),
            path_prefix: spec.fault.match_rule.path_prefix.clone(),
        },
        lease: Some(spec.fault.lease),
    }
}
