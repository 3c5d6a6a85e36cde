//! [`Operations`] over the controller's real parts: experiments in the [`Store`], runs by the controller's
//! [`Runner`] (one at a time, resumable: finished plan positions are skipped), results from
//! `controller::stats` and `controller::report`, faults and breaker modes through the testbed's admin and
//! fault APIs.
//!
//! One job per module: [`schedule`] (queued starts and their timers, kept in the store's `scheduled_starts`),
//! [`execution`] (running an experiment, aborting it), [`streams`] (the dashboard's watch on the controller's
//! observer, published into the hub), [`sampling`] (the once-a-second live sample, made of the observer's and
//! the load driver's seconds from [`load_seconds`]), [`results`] (the results page), [`testbed`] (game-day
//! actions: faults, breaker modes, halt), [`mode_lease`] (the game day's mode switches under a lease), [`workers`] (an experiment's load workers and their live panel) and
//! [`annotations`].
//!
//! Annotations are stored in the experiment database, tied to the experiment (and run) running when they are
//! written; new operations put the latest stored ones back into the hub, so a restarted dashboard shows them.

mod annotations;
mod board;
mod containers;
mod execution;
mod gameday_load;
mod load_seconds;
mod mode_lease;
mod pods;
mod replay;
mod results;
mod sampling;
mod schedule;
mod streams;
mod testbed;
mod workers;

use std::collections::BTreeMap;
use std::sync::Arc;

use controller::clock::now_ms;
use controller::lease::ContainerStack;
use controller::load::SecondSink;
use controller::observe::Observer;
use controller::runner::Runner;
use controller::sources::PushInbox;
use controller::store::{AnnotationRow, ExperimentId, ExperimentRow, Status, Store, StoreError};
use controller::target::ServiceId;
use controller::testbed::{AdminClient, Testbed};
use parking_lot::Mutex;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;

use super::{
    AnnotationEntry, AnnotationRequest, ExperimentSummary, FaultRequest, OperationError,
    OperationFuture, Operations, Results,
};
use crate::hub::{ExperimentChange, ExperimentStatus, Hub, LiveEvent};
use load_seconds::LoadSeconds;

/// The service whose agent the embedded stack runs.
pub use controller::testbed::EMBEDDED_AGENT_SERVICE as AGENT_SERVICE;
pub use mode_lease::GAME_DAY_MODE_LEASE;

struct Inner {
    store: Store,
    testbed: Testbed,
    hub: Hub,
    client: AdminClient,
    /// Where the runs' closed seconds go for the live view.
    live_seconds: SecondSink,
    /// What sees the testbed: the live feeds and the runs watch through this one observer.
    observer: Observer,
    /// The experiment being run.
    active: Mutex<Option<ActiveExperiment>>,
    /// Queued starts: experiment → (due time, timer task).
    schedule: Mutex<BTreeMap<i64, (i64, AbortHandle)>>,
    /// The game day's background load, when on.
    game_day_load: Mutex<Option<RunningLoad>>,
    /// The load driver's seconds closed since the last live sample (filled while a run drives load).
    load_seconds: Arc<Mutex<Option<LoadSeconds>>>,
    /// Foreign breaker events pushed to `POST /api/breaker-events`; the running run takes them too.
    push_inbox: PushInbox,
    /// The compose project the testbed runs as, on a reachable engine (container faults, per-container
    /// stats); `None` for the embedded stack or without an engine.
    containers: Option<ContainerStack>,
    /// The game day's container faults in force: id → the task that undoes it at the end of its lease.
    container_faults: Mutex<BTreeMap<i64, AbortHandle>>,
    /// The orchestrator the testbed runs on, when it does (Swarm, Kubernetes).
    orchestrator: Orchestrator,
    /// The game day's pod faults in force (on Kubernetes).
    pod_faults: Mutex<PodFaults>,
    /// The game day's leased breaker-mode switches and their renewal.
    modes: Mutex<mode_lease::GameDayModes>,
}

/// The load running now and the token that stops it.
struct RunningLoad {
    cancel: CancellationToken,
    /// Its virtual users (their descriptors are given back when it is replaced).
    users: u32,
}

/// One game-day pod fault in force.
#[derive(Debug)]
struct GameDayPodFault {
    pod: String,
    replica: String,
    lease: controller::kubernetes::fault::PodLease,
    /// The task that undoes it at the end of its lease.
    expiry: tokio::task::AbortHandle,
}

/// The game day's pod faults by id (ids count from 1 in this process).
#[derive(Debug, Default)]
struct PodFaults {
    next: i64,
    in_force: BTreeMap<i64, GameDayPodFault>,
}

/// What an orchestrator gives the dashboard's runs: a Kubernetes namespace's pod faults, and the replica
/// changes its watch sends with the roster it keeps (a run starts from the replicas running then and follows
/// the ones that join). The caller keeps the watch and the sweep running.
#[derive(Debug, Clone, Default)]
pub struct Orchestrator {
    pub pods: Option<controller::lease::PodStack>,
    pub replicas: Option<(
        tokio::sync::broadcast::Sender<controller::roster::ReplicaChange>,
        Arc<Mutex<controller::roster::Roster>>,
    )>,
}

/// The experiment being run: its task, and the token that ends it (the run in progress ends its scope).
struct ActiveExperiment {
    id: i64,
    task: JoinHandle<()>,
    cancel: CancellationToken,
}

impl ActiveExperiment {
    /// Cancels the experiment and waits until its task has ended: the run in progress has removed its
    /// fault and stopped everything it started.
    async fn end(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }
}

/// Cheap to clone.
#[derive(Clone)]
pub struct EmbeddedOperations {
    inner: Arc<Inner>,
}

/// The testbed (an agent, a service) failed behind the controller.
fn failed(error: impl std::fmt::Display) -> OperationError {
    OperationError::Failed(error.to_string())
}

/// The controller itself failed (database, report rendering).
fn internal(error: impl std::fmt::Display) -> OperationError {
    OperationError::Internal(error.to_string())
}

/// A refused field stays a bad request (it names the field); anything else is the controller's own failure.
fn store_failed(error: StoreError) -> OperationError {
    match error {
        StoreError::Invalid { .. } => OperationError::Invalid(error.to_string()),
        other => internal(other),
    }
}

fn entry_of(row: &AnnotationRow) -> AnnotationEntry {
    AnnotationEntry {
        id: row.id.0,
        at_ms: row.at_ms,
        text: row.text.clone(),
        author: row.author.clone(),
        experiment_id: row.experiment_id.map(|id| id.0),
        run_id: row.run_id.map(|id| id.0),
    }
}

fn summary_of(
    row: &ExperimentRow,
    finished: Option<i64>,
    scheduled: Option<i64>,
) -> ExperimentSummary {
    let status = if scheduled.is_some() && row.status == Status::Pending {
        ExperimentStatus::Scheduled
    } else {
        row.status.into()
    };
    ExperimentSummary {
        id: row.id.0,
        name: row.name.clone(),
        status,
        planned_runs: row.planned_runs,
        finished_runs: finished,
        created_at_ms: row.created_at_ms,
        started_at_ms: row.started_at_ms,
        finished_at_ms: row.finished_at_ms,
        scheduled_at_ms: scheduled,
        abort_reason: row.abort_reason.clone(),
    }
}

impl EmbeddedOperations {
    /// Re-arms every stored scheduled start, and marks experiments left `running` by a previous process as
    /// `interrupted` (their unfinished run is discarded; a start resumes them).
    pub async fn new(store: Store, testbed: Testbed, hub: Hub) -> Result<Self, OperationError> {
        Self::with_containers(store, testbed, hub, None).await
    }

    /// As [`EmbeddedOperations::new`], over a testbed that runs as the compose project `containers`: runs
    /// and the game day may use container faults, and runs store per-container samples. The caller keeps
    /// the leases' sweep running ([`controller::docker::ContainerLeases::spawn_watchdog`]).
    pub async fn with_containers(
        store: Store,
        testbed: Testbed,
        hub: Hub,
        containers: Option<ContainerStack>,
    ) -> Result<Self, OperationError> {
        Self::orchestrated(store, testbed, hub, containers, Orchestrator::default()).await
    }

    /// As [`EmbeddedOperations::with_containers`], on an orchestrator: runs use its pod faults and follow its
    /// replicas.
    pub async fn orchestrated(
        store: Store,
        testbed: Testbed,
        hub: Hub,
        containers: Option<ContainerStack>,
        orchestrator: Orchestrator,
    ) -> Result<Self, OperationError> {
        for experiment in store.experiments().await.map_err(store_failed)? {
            if experiment.status == Status::Running {
                store
                    .mark_interrupted(experiment.id, now_ms())
                    .await
                    .map_err(store_failed)?;
                store
                    .set_experiment_status(
                        experiment.id,
                        Status::Interrupted,
                        now_ms(),
                        Some("the controller stopped while it ran"),
                    )
                    .await
                    .map_err(store_failed)?;
            }
        }
        let (load_seconds, live_seconds) = load_seconds::collect_load_seconds();
        let push_inbox = PushInbox::default();
        let operations = EmbeddedOperations {
            inner: Arc::new(Inner {
                client: AdminClient::new(testbed.token.clone()),
                live_seconds,
                observer: Observer::new(AdminClient::new(testbed.token.clone())),
                load_seconds,
                push_inbox,
                store,
                testbed,
                hub,
                active: Mutex::new(None),
                schedule: Mutex::new(BTreeMap::new()),
                game_day_load: Mutex::new(None),
                containers,
                container_faults: Mutex::new(BTreeMap::new()),
                orchestrator,
                pod_faults: Mutex::new(PodFaults::default()),
                modes: Mutex::default(),
            }),
        };
        operations.rearm_scheduled().await?;
        operations.restore_annotations().await?;
        Ok(operations)
    }

    /// Game-day mode switches are held by `lease` from now on ([`mode_lease::GAME_DAY_MODE_LEASE`] unless set).
    pub fn set_mode_lease(&self, lease: std::time::Duration) {
        self.inner.modes.lock().set_lease(lease);
    }

    /// Where `POST /api/breaker-events` puts pushed foreign breaker events.
    pub fn push_inbox(&self) -> PushInbox {
        self.inner.push_inbox.clone()
    }

    /// Ends the running experiment without marking it (a process shutting down: the unfinished run is
    /// redone on the next start) once its run has removed its fault and stopped its tasks, and disarms
    /// the timers (their rows stay for the next process).
    pub async fn stop_active(&self) {
        self.stop_game_day_load();
        self.inner.modes.lock().release();
        self.disarm_all();
        let active = self.inner.active.lock().take();
        if let Some(active) = active {
            active.end().await;
        }
    }

    /// The compose project the testbed runs as, with its engine and fault leases, when the dashboard
    /// reaches one.
    pub fn containers(&self) -> Option<&ContainerStack> {
        self.inner.containers.as_ref()
    }

    /// A runner over the testbed that ends when `cancel` is cancelled.
    fn runner(&self, cancel: CancellationToken) -> Runner {
        let runner = Runner::new(self.inner.store.clone(), self.inner.testbed.clone())
            .with_live_seconds(self.inner.live_seconds.clone())
            .with_observer(self.inner.observer.clone())
            .with_push_inbox(self.inner.push_inbox.clone())
            .with_cancel(cancel);
        let mut runner = match &self.inner.containers {
            Some(containers) => runner.with_containers(containers.clone()),
            None => runner,
        };
        if let Some(pods) = &self.inner.orchestrator.pods {
            runner = runner.with_pods(pods.clone());
        }
        if let Some((changes, roster)) = &self.inner.orchestrator.replicas {
            runner = runner.with_replica_changes(changes.clone(), Arc::clone(roster));
        }
        runner
    }

    fn publish_status(&self, id: i64, status: ExperimentStatus) {
        self.inner
            .hub
            .publish(LiveEvent::Experiment(ExperimentChange {
                experiment_id: id,
                status,
                at_ms: now_ms() as u64,
            }));
    }

    async fn experiment_row(&self, id: i64) -> Result<ExperimentRow, OperationError> {
        self.inner
            .store
            .experiment(ExperimentId(id))
            .await
            .map_err(store_failed)?
            .ok_or(OperationError::NotFound(id))
    }
}

impl Operations for EmbeddedOperations {
    fn experiments(&self) -> OperationFuture<'_, Vec<ExperimentSummary>> {
        Box::pin(async move {
            let scheduled = self.scheduled();
            let rows = self.inner.store.experiments().await.map_err(store_failed)?;
            let mut list = Vec::with_capacity(rows.len());
            for row in rows {
                let finished = self
                    .inner
                    .store
                    .finished_plan_indices(row.id)
                    .await
                    .map_err(store_failed)?
                    .len() as i64;
                list.push(summary_of(
                    &row,
                    Some(finished),
                    scheduled.get(&row.id.0).copied(),
                ));
            }
            Ok(list)
        })
    }

    fn create(&self, spec_toml: String) -> OperationFuture<'_, i64> {
        Box::pin(self.create_experiment(spec_toml))
    }

    fn spec(&self, id: i64) -> OperationFuture<'_, String> {
        Box::pin(async move { Ok(self.experiment_row(id).await?.spec_toml) })
    }

    fn start(&self, id: i64, at_ms: Option<i64>) -> OperationFuture<'_, ()> {
        Box::pin(async move {
            match at_ms {
                Some(at) if at > now_ms() => self.schedule_start(id, at).await,
                _ => {
                    self.unschedule(id).await?;
                    self.start_now(id).await
                }
            }
        })
    }

    fn abort(&self, id: i64) -> OperationFuture<'_, ()> {
        Box::pin(async move {
            if self.unschedule(id).await? {
                self.publish_status(id, ExperimentStatus::Pending);
                return Ok(());
            }
            self.abort_running(id).await
        })
    }

    fn results(&self, id: i64) -> OperationFuture<'_, Results> {
        Box::pin(self.results_of(id))
    }

    fn report(&self, id: i64, format: controller::report::Format) -> OperationFuture<'_, String> {
        Box::pin(self.report_of(id, format))
    }

    fn run_timeline(
        &self,
        experiment: i64,
        run: i64,
    ) -> OperationFuture<'_, Option<crate::operations::RunTimeline>> {
        Box::pin(self.run_timeline_of(experiment, run))
    }

    fn run_figures(
        &self,
        experiment: i64,
        run: i64,
    ) -> OperationFuture<'_, Option<crate::operations::RunFigures>> {
        Box::pin(self.run_figures_of(experiment, run))
    }

    fn halt(&self) -> OperationFuture<'_, ()> {
        Box::pin(self.agent_halt())
    }

    fn set_fault(&self, request: FaultRequest) -> OperationFuture<'_, ()> {
        Box::pin(self.put_fault(request))
    }

    fn clear_fault(&self, target: ServiceId, id: String) -> OperationFuture<'_, ()> {
        Box::pin(self.delete_fault(target, id))
    }

    fn faults(&self) -> OperationFuture<'_, super::AgentFaults> {
        Box::pin(self.agent_faults())
    }

    fn validate(&self, id: i64) -> OperationFuture<'_, controller::stats::ValidationReport> {
        Box::pin(self.validation_of(id))
    }

    fn set_breaker_mode(&self, request: super::ModeRequest) -> OperationFuture<'_, ()> {
        Box::pin(self.switch_breaker_mode(request))
    }

    fn mode_lease(&self) -> std::time::Duration {
        self.inner.modes.lock().lease()
    }

    fn set_load(&self, load: Option<super::LoadRequest>) -> OperationFuture<'_, ()> {
        Box::pin(async move { self.set_game_day_load(load).await })
    }

    fn services(&self) -> Vec<ServiceId> {
        self.inner
            .testbed
            .services
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn containers(&self) -> OperationFuture<'_, Option<Vec<crate::operations::ContainerLine>>> {
        Box::pin(self.container_lines())
    }

    fn set_container_fault(
        &self,
        request: crate::operations::ContainerFaultRequest,
    ) -> OperationFuture<'_, i64> {
        Box::pin(self.apply_container_fault(request))
    }

    fn clear_container_fault(&self, id: i64) -> OperationFuture<'_, ()> {
        Box::pin(self.remove_container_fault(id))
    }

    fn annotate(&self, request: AnnotationRequest) -> OperationFuture<'_, AnnotationEntry> {
        Box::pin(self.store_annotation(request))
    }

    fn annotations(&self, experiment: i64) -> OperationFuture<'_, Vec<AnnotationEntry>> {
        Box::pin(self.annotations_of(experiment))
    }

    fn latest_annotations(&self, limit: usize) -> OperationFuture<'_, Vec<AnnotationEntry>> {
        Box::pin(self.latest_annotations_of(limit))
    }
}
