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
mod recorder;
mod resume;
mod scope;
mod setup_error;
mod stop;

use std::collections::BTreeSet;

use tokio_util::sync::CancellationToken;

pub use error::RunnerError;
pub use recorder::{Recording, RunRecorder, SampledLabels};
pub use resume::{ResumePoint, StartChoice, choose_start, latest_unfinished};
pub use setup_error::SetupError;
pub use stop::StopMonitor;

use drive::{Driven, drive_load};
use scope::{RunScope, ScopeEnd};

use crate::clock::now_ms;
use crate::lease::{ContainerStack, HeldBreakers};
use crate::load::{self, LoadConfig, LoadSettings, Workload};
use crate::observe::Observer;
use crate::sources::PushInbox;
use crate::spec::{ConditionFault, ExperimentSpec, Mix, PlannedRun};
use crate::store::{ExperimentId, RunId, RunRecord, Status, Store};
use crate::testbed::{AdminClient, Testbed};

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
}

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
        }
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
        spec: &ExperimentSpec,
        planned: &PlannedRun,
    ) -> Result<HeldBreakers, RunnerError> {
        let config = spec.breaker_config_of(&planned.condition)?;
        // Services left out of `breaker.services` run with their breakers disabled, config otherwise kept.
        let disabled = config.clone().with_mode(breaker::Mode::Disabled);
        let mut configured = Vec::new();
        for (name, url) in &self.testbed.services {
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
                configured.push((url.clone(), config.clone()));
            }
        }
        Ok(HeldBreakers::push(&self.admin, configured, spec.fault.lease).await?)
    }

    /// One run: prepare, open the run's scope (subscriptions), fault on, load, end the scope (fault off
    /// first, every task stopped), store. A cancelled run ends its scope the same way and stores nothing
    /// (it stays `running` until marked interrupted). A run that panicked — its own future, a request, a
    /// collector — or whose load generator failed ends its scope the same way and is stored as
    /// [`Status::Failed`] with the reason; the error then says so ([`RunnerError::RunFailed`]).
    pub async fn run_one(
        &self,
        spec: &ExperimentSpec,
        experiment: ExperimentId,
        planned: &PlannedRun,
        total: usize,
        progress: &mut impl FnMut(Progress),
    ) -> Result<RunId, RunnerError> {
        if self.cancel.is_cancelled() {
            return Err(RunnerError::Cancelled);
        }
        // Checked before anything is reset, put or stored.
        let load = self.load_config(spec, planned)?;
        let breakers = self.prepare(spec, planned).await?;
        // Subscribed before the run exists, so a failure leaves no run behind (and restores the breakers).
        let mut scope = RunScope::open(
            &self.admin,
            &self.testbed,
            &|name| spec.offers_of(name),
            &self.observer,
            self.push_inbox.as_ref(),
        )
        .await?;
        scope.hold_breakers(breakers);
        // Foreign breakers: a baseline scrape of every source before the run exists.
        scope.follow_foreign(&spec.sources).await?;
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

        // From here the run exists: whatever ends the body, a panic included, ends the scope (fault
        // removed first) and the run is stored.
        let body = crate::panic::caught(self.run_body(
            &mut scope, spec, load, experiment, planned, run, total, progress,
        ))
        .await;
        let ended = crate::panic::caught(scope.end()).await;

        let mut failures = Vec::new();
        let mut abort_reason = None;
        let mut report = None;
        let mut seconds = Vec::new();
        match body {
            Err(message) => failures.push(format!("the run panicked: {message}")),
            Ok((reason, None)) => abort_reason = reason,
            Ok((reason, Some(driven))) => {
                if driven.cancelled {
                    return Err(RunnerError::Cancelled);
                }
                abort_reason = driven.stop_reason.or(reason);
                let driven_report = driven.report;
                let driver = &driven_report.driver_failures;
                if driver.count > 0 {
                    failures.push(format!(
                        "load generator: {} request(s) failed in the driver itself, not in the system \
                         (first: {})",
                        driver.count,
                        driver.first.as_deref().unwrap_or("-")
                    ));
                }
                seconds = driven.seconds;
                report = Some(driven_report);
            }
        }
        let mut ended = match ended {
            Ok(ended) => ended,
            Err(message) => {
                failures.push(format!("ending the run panicked: {message}"));
                ScopeEnd::default()
            }
        };
        failures.extend(
            ended
                .panics
                .iter()
                .map(|message| format!("{message} (panicked)")),
        );
        if ended.missed > 0 {
            failures.push(format!(
                "the run's record missed {} observation(s): its recorder fell behind the observer",
                ended.missed
            ));
        }
        let container_samples = std::mem::take(&mut ended.container_samples);

        // Energy of the measured part (seconds after the warmup), labelled measured or modelled.
        let warmup_seconds = spec.run_warmup().as_secs_f64().ceil() as u64;
        let measured_energy: Vec<f64> = ended
            .samples
            .iter()
            .filter(|sample| sample.second >= warmup_seconds)
            .filter_map(|sample| sample.energy_joules)
            .collect();
        let energy = (!measured_energy.is_empty())
            .then(|| (measured_energy.iter().sum::<f64>(), ended.energy_source));
        let load_errors = report.as_ref().map_or(0, |r| r.driver_failures.count);
        let (endpoint_names, seconds, endpoints) = match report {
            Some(report) => (
                report.endpoints.iter().map(|e| e.name.clone()).collect(),
                seconds,
                report.endpoints,
            ),
            None => (Vec::new(), Vec::new(), Vec::new()),
        };
        let (status, reason) = if !failures.is_empty() {
            (Status::Failed, Some(failures.join("; ")))
        } else if abort_reason.is_some() {
            (Status::Aborted, abort_reason)
        } else {
            (Status::Finished, None)
        };
        let record = RunRecord {
            status,
            abort_reason: reason.clone(),
            load_errors,
            finished_at_ms: now_ms(),
            endpoint_names,
            seconds,
            endpoints,
            collector: ended.samples,
            transitions: ended.transitions,
            events: ended.fault_events,
            energy,
        };
        let availability = record.outcomes().availability();
        self.store.finish_run(run, &record).await?;
        self.store
            .insert_container_samples(run, &container_samples)
            .await?;
        progress(Progress::RunFinished {
            run,
            planned: *planned,
            total,
            status,
            availability,
            reason: reason.clone(),
        });
        match (status, reason) {
            (Status::Failed, Some(reason)) => Err(RunnerError::RunFailed { run, reason }),
            _ => Ok(run),
        }
    }

    /// The part of a run that may panic without taking the run's end with it: its container fault and
    /// agent fault on, sampling, reported started, the load driven. Returns why the run was aborted
    /// before its load (a fault that could not be applied) and what driving the load gave.
    #[allow(clippy::too_many_arguments)]
    async fn run_body(
        &self,
        scope: &mut RunScope,
        spec: &ExperimentSpec,
        load: LoadConfig,
        experiment: ExperimentId,
        planned: &PlannedRun,
        run: RunId,
        total: usize,
        progress: &mut impl FnMut(Progress),
    ) -> (Option<String>, Option<Driven>) {
        let mut abort_reason = None;
        let injects = planned.condition.fault_rate > 0.0;
        if let Some(stack) = &self.containers {
            if let Err(reason) = scope.begin_containers(stack, spec, planned, run).await {
                abort_reason = Some(reason.to_string());
            }
        } else if injects && planned.condition.fault.name().is_container() {
            abort_reason = Some(format!(
                "fault.kinds: `{}` acts on containers; run against the compose stack \
                 (tolerant run --compose PROJECT)",
                planned.condition.fault.name().as_str()
            ));
        }
        let mut scheduled = None;
        let agent_fault = match (injects, &abort_reason) {
            (true, None) => fault_spec(spec, planned).unwrap_or_else(|error| {
                abort_reason = Some(format!("fault.{error}"));
                None
            }),
            _ => None,
        };
        if let (true, None, Some(fault)) = (injects, &abort_reason, agent_fault) {
            let fault_id = format!("experiment-{}-run-{}", experiment.0, run.0);
            if spec.written_schedule_of(&planned.condition).is_some() {
                scheduled = Some((fault_id, fault));
            } else if let Err(reason) = scope.apply_fault(&fault_id, &fault, spec.fault.lease).await
            {
                abort_reason = Some(reason.to_string());
            }
        }
        scope.start_sampler(&self.testbed, &|name| spec.offers_of(name));
        // A scheduled fault counts its periods from here, as the load counts its seconds.
        if let (Some((fault_id, fault)), None) = (scheduled, &abort_reason) {
            scope.schedule_fault(
                &fault_id,
                fault,
                spec.fault.lease,
                spec.fault_periods_of(&planned.condition),
            );
        }
        // Reported once the faults are on (a scheduled one's periods counted), just before the load starts (or the run ends without load).
        progress(Progress::RunStarted {
            run,
            planned: *planned,
            total,
        });
        if abort_reason.is_some() {
            return (abort_reason, None);
        }
        let driven = drive_load(
            load,
            spec.stop.as_ref().and_then(StopMonitor::new),
            self.live_seconds.clone(),
            &self.cancel,
        )
        .await;
        (None, Some(driven))
    }

    /// The load of one planned run (its own seed, derived from the spec's and the plan position).
    fn load_config(
        &self,
        spec: &ExperimentSpec,
        planned: &PlannedRun,
    ) -> Result<LoadConfig, load::LoadError> {
        LoadConfig::try_from(LoadSettings {
            target: self.testbed.frontend,
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
            seed: spec.seed ^ (planned.sequence as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        })
    }
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
