//! Runner: executes an experiment's plan against a testbed, one run after another — reset the
//! testbed, apply the condition's breaker config, apply its fault through the agent (renewing the
//! lease while the run lasts, [`crate::lease`]), drive load for warmup + duration, record what the observer
//! sees meanwhile (transitions, the agent's events, samples: [`crate::observe`]), remove the fault, and store
//! the run in one transaction.
//!
//! [`scope`] holds what one run started and ends it, [`recorder`] what a run keeps of the observations,
//! [`drive`] and [`stop`] the load and its stop condition, [`resume`] and [`preflight`] what happens before the
//! first run.

mod drive;
mod error;
mod preflight;
mod probes;
mod recorder;
pub mod replicas;
mod resume;
mod run;
mod scope;
mod setup_error;
mod spool;
mod stop;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use error::RunnerError;
pub use recorder::{JoinedLabels, Recording, RunRecorder, SampledLabels};
pub use resume::{ResumePoint, StartChoice, choose_start, latest_unfinished};
pub use setup_error::SetupError;
pub use stop::StopMonitor;

use crate::clock::now_ms;
use crate::lease::{ContainerStack, HeldBreakers, PodStack};
use crate::load::{self, LoadSettings, Workload};
use crate::observe::Observer;
use crate::sources::PushInbox;
use crate::spec::{ConditionFault, ExperimentSpec, Mix, PlannedRun};
use crate::store::{ExperimentId, RunId, Status, Store};
use crate::testbed::{AdminClient, Testbed};
use crate::workers::{LostShare, WorkerPool};

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
        /// Why the run was aborted or failed.
        reason: Option<String>,
    },
}

/// Runs experiments against one testbed and stores what they saw.
pub struct Runner {
    store: Store,
    testbed: Testbed,
    admin: AdminClient,
    /// Ends the run in progress (its scope ends as usual, nothing is stored) and every later one.
    cancel: CancellationToken,
    /// Where a copy of every closed second of load goes while a run drives it (the live dashboard).
    live_seconds: Option<load::SecondSink>,
    /// Pushed foreign breaker events; a run takes every one that arrives while it lasts.
    push_inbox: Option<PushInbox>,
    /// What sees the testbed during a run (shared with the dashboard when both run in one process).
    observer: Observer,
    /// The compose stack the testbed runs as, when it does: container faults and per-container samples.
    containers: Option<ContainerStack>,
    /// The Kubernetes namespace the testbed runs in, when it does: pod faults.
    pods: Option<PodStack>,
    /// Replicas an orchestrator starts, stops or replaces while runs go (Swarm, Kubernetes): the changes, and
    /// the roster its watch keeps (each run starts from the replicas running then).
    replica_changes: Option<(
        tokio::sync::broadcast::Sender<crate::roster::ReplicaChange>,
        Arc<parking_lot::Mutex<crate::roster::Roster>>,
    )>,
    /// The load workers a spec with `[load] workers` runs its users on.
    workers: Option<WorkerPool>,
}

/// How long a run waits for its load workers (the preflight before the first run, and a run after a worker
/// was lost) before it names the missing ones.
pub const WORKERS_WAIT: Duration = Duration::from_secs(120);

impl Runner {
    pub fn new(store: Store, testbed: Testbed) -> Self {
        let admin = AdminClient::new(testbed.token.clone());
        Runner {
            store,
            testbed,
            observer: Observer::new(admin.clone()),
            admin,
            cancel: CancellationToken::new(),
            live_seconds: None,
            push_inbox: None,
            containers: None,
            pods: None,
            replica_changes: None,
            workers: None,
        }
    }

    /// Runs against the pods of a Kubernetes namespace: container fault kinds become their pod equivalents.
    pub fn with_pods(mut self, pods: PodStack) -> Self {
        self.pods = Some(pods);
        self
    }

    /// Every run starts from the replicas `roster` runs then, and follows the ones `changes` announces while it
    /// lasts: recorded as events, each new one's transitions collected under its label (see
    /// `runner/replicas.rs`). The orchestrator's watch keeps both.
    pub fn with_replica_changes(
        mut self,
        changes: tokio::sync::broadcast::Sender<crate::roster::ReplicaChange>,
        roster: Arc<parking_lot::Mutex<crate::roster::Roster>>,
    ) -> Self {
        self.replica_changes = Some((changes, roster));
        self
    }

    /// The testbed as a run starts on it: its services as the orchestrator's roster has them now.
    fn current_testbed(&self) -> Testbed {
        match &self.replica_changes {
            Some((_, roster)) => {
                let running = roster.lock().running();
                Testbed {
                    services: crate::roster::current_services(&self.testbed.services, &running),
                    ..self.testbed.clone()
                }
            }
            None => self.testbed.clone(),
        }
    }

    /// Runs the users of a spec with `[load] workers` on `pool`'s load workers.
    pub fn with_workers(mut self, pool: WorkerPool) -> Self {
        self.workers = Some(pool);
        self
    }

    /// Takes the foreign breaker events pushed to `inbox` while a run lasts into that run.
    pub fn with_push_inbox(mut self, inbox: PushInbox) -> Self {
        self.push_inbox = Some(inbox);
        self
    }

    /// Sees the testbed through `observer` (one the dashboard watches too), instead of an observer of its own:
    /// the testbed is followed and sampled once, whoever watches.
    pub fn with_observer(mut self, observer: Observer) -> Self {
        self.observer = observer;
        self
    }

    /// Runs against the compose stack `containers`: container fault kinds become possible and every run
    /// stores each container's CPU, memory, network and modelled energy.
    pub fn with_containers(mut self, containers: ContainerStack) -> Self {
        self.containers = Some(containers);
        self
    }

    /// Runs end early when `cancel` is cancelled: the run in progress ends its scope (fault removed first,
    /// every task stopped), stores nothing, and returns [`RunnerError::Cancelled`]; no later run starts.
    pub fn with_cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
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
                if matches!(error, RunnerError::Cancelled) {
                    // Not a verdict: the unfinished run is redone by a resume.
                    self.store.mark_interrupted(experiment, now_ms()).await?;
                    self.store
                        .set_experiment_status(
                            experiment,
                            Status::Interrupted,
                            now_ms(),
                            Some("cancelled"),
                        )
                        .await?;
                } else {
                    self.store
                        .set_experiment_status(
                            experiment,
                            Status::Aborted,
                            now_ms(),
                            Some(&error.to_string()),
                        )
                        .await?;
                }
                return Err(error);
            }
        }
        self.store
            .set_experiment_status(experiment, Status::Finished, now_ms(), None)
            .await?;
        Ok(experiment)
    }

    /// Prepares the testbed for a condition: carts and breakers reset, the mode's config applied under a lease
    /// of `fault.lease`, renewed until the returned guard is restored or dropped.
    async fn prepare(
        &self,
        testbed: &Testbed,
        spec: &ExperimentSpec,
        planned: &PlannedRun,
    ) -> Result<HeldBreakers, RunnerError> {
        let config = spec.breaker_config_of(&planned.condition)?;
        // Services left out of `breaker.services` run with their breakers disabled, config otherwise kept.
        let disabled = config.clone().with_mode(breaker::Mode::Disabled);
        let mut configured = Vec::new();
        for (name, url) in &testbed.services {
            let offers = spec.offers_of(name.as_str());
            if offers.reset {
                self.admin.reset(url).await?;
            }
            if offers.breaker_config {
                let config = if spec.breaker.applies_to(name) {
                    &config
                } else {
                    &disabled
                };
                configured.push((name.clone(), url.clone(), config.clone()));
            }
        }
        Ok(HeldBreakers::push(&self.admin, configured, spec.fault.lease).await?)
    }
}

/// The load of the run at plan position `sequence` against `target` (its own seed, derived from the spec's and
/// the position): what the runner drives in-process and what each load worker builds its share from.
pub fn load_settings(
    spec: &ExperimentSpec,
    sequence: usize,
    target: std::net::SocketAddr,
) -> LoadSettings {
    LoadSettings {
        target,
        workload: match (&spec.load.custom, spec.load.mix) {
            (Some(custom), _) => Workload::Custom(std::sync::Arc::clone(custom)),
            (None, Mix::OnlineBoutique) => Workload::OnlineBoutique,
        },
        users: spec.load.users,
        think_time: spec.think_time(),
        rate: spec.load.rate,
        timeout: spec.load.timeout,
        warmup: spec.run_warmup(),
        duration: spec.run_duration(),
        seed: spec.seed ^ (sequence as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    }
}

/// A degraded run's reason: which workers were lost, how many users each took with it, and from which second.
fn lost_reason(lost: &[LostShare]) -> String {
    let parts: Vec<String> = lost
        .iter()
        .map(|share| {
            format!(
                "load worker `{}` lost: its {} users missing in seconds {}..{}",
                share.worker, share.users, share.from_second, share.to_second
            )
        })
        .collect();
    parts.join("; ")
}

/// The agent's fault document for a planned run; `None` when its kind acts on containers instead. The agent's
/// own rules check it (a parsed spec always passes them); the error names the agent's field.
pub fn fault_spec(
    spec: &ExperimentSpec,
    planned: &PlannedRun,
) -> Result<Option<agent::api::FaultSpec>, agent::api::InvalidFault> {
    let kind = match planned.condition.fault {
        ConditionFault::Error { status } => agent::api::FaultKind::Error { status, body: None },
        ConditionFault::Hang => agent::api::FaultKind::Hang,
        ConditionFault::Delay { delay, jitter } => agent::api::FaultKind::Delay { delay, jitter },
        ConditionFault::Reset => agent::api::FaultKind::Reset,
        ConditionFault::Pause
        | ConditionFault::Stop
        | ConditionFault::Kill { .. }
        | ConditionFault::Restart
        | ConditionFault::NetDelay { .. }
        | ConditionFault::NetLoss => {
            return Ok(None);
        }
    };
    agent::api::FaultSpec::try_new(
        kind,
        planned.condition.fault_rate,
        spec.fault.match_rule.clone(),
        Some(spec.fault.lease),
    )
    .map(Some)
}
