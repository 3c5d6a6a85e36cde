//! One planned run from reset to store: its scope of leases, observers and load, the run's body, and the
//! load config of its plan position.

use super::drive::{Driven, Drivers, drive_load};
use super::scope::{RunScope, ScopeEnd};
use super::stop::StopMonitor;
use super::{
    Progress, Runner, RunnerError, WORKERS_WAIT, fault_spec, load_settings, lost_reason, replicas,
};
use crate::clock::now_ms;
use crate::load::{self, LoadConfig};
use crate::spec::{ExperimentSpec, PlannedRun};
use crate::store::{ExperimentId, RunId, RunRecord, Status};
use crate::testbed::Testbed;
use crate::workers::WorkersLoad;

impl Runner {
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
        // Changes are taken from before the roster is read: none falls between the two.
        let changes = (self.replica_changes.as_ref()).map(|(changes, _)| changes.subscribe());
        let testbed = self.current_testbed();
        let breakers = self.prepare(&testbed, spec, planned).await?;
        // Subscribed before the run exists, so a failure leaves no run behind (and restores the breakers).
        let mut scope = RunScope::open(
            &self.admin,
            &testbed,
            &|name| spec.offers_of(name),
            &self.observer,
            self.push_inbox.as_ref(),
        )
        .await?;
        scope.hold_breakers(breakers);
        if let Some(changes) = changes {
            let follows = replicas::ServiceFollows::new(
                testbed.services.iter().map(|(label, _)| label),
                &|name| spec.offers_of(name),
            );
            scope.follow_replicas(changes, follows);
        }
        // Foreign breakers: a baseline scrape of every source before the run exists.
        scope.follow_foreign(&spec.sources).await?;
        let started_at_ms = now_ms();
        let run = self
            .store
            .start_run(
                experiment,
                planned,
                spec.run_warmup(),
                spec.run_duration(),
                started_at_ms,
            )
            .await?;
        scope.spool_to(self.store.clone(), run);

        // From here the run exists: whatever ends the body, a panic included, ends the scope (fault
        // removed first) and the run is stored.
        let body = crate::panic::caught(self.run_body(
            &mut scope, &testbed, spec, load, experiment, planned, run, total, progress,
        ))
        .await;
        let ended = crate::panic::caught(scope.end()).await;

        let mut failures = Vec::new();
        let mut abort_reason = None;
        let mut report = None;
        let mut seconds = Vec::new();
        let mut lost = Vec::new();
        match body {
            Err(message) => failures.push(format!("the run panicked: {message}")),
            Ok((reason, None)) => abort_reason = reason,
            Ok((_, Some(Err(error)))) => failures.push(error.to_string()),
            Ok((reason, Some(Ok(driven)))) => {
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
                lost = driven.lost;
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
        // Read before the next run's reset: the agents keep ten minutes of buckets.
        let agents = [testbed.agent.as_str()];
        ended.fault_events.push(
            super::probes::probe_buckets_event(&self.admin, &agents, started_at_ms, now_ms()).await,
        );

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
        } else if !lost.is_empty() {
            (Status::Degraded, Some(lost_reason(&lost)))
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
            sources: ended.sources,
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
        testbed: &Testbed,
        spec: &ExperimentSpec,
        load: LoadConfig,
        experiment: ExperimentId,
        planned: &PlannedRun,
        run: RunId,
        total: usize,
        progress: &mut impl FnMut(Progress),
    ) -> (
        Option<String>,
        Option<Result<Driven, crate::workers::WorkersError>>,
    ) {
        let mut abort_reason = None;
        let injects = planned.condition.fault_rate > 0.0;
        if let Some(stack) = &self.containers {
            if let Err(reason) = scope.begin_containers(stack, spec, planned, run).await {
                abort_reason = Some(reason.to_string());
            }
        } else if let Some(pods) = &self.pods {
            if let Err(reason) = scope.begin_pods(pods, spec, planned).await {
                abort_reason = Some(reason.to_string());
            }
        } else if injects && planned.condition.fault.name().is_container() {
            abort_reason = Some(format!(
                "fault.kinds: `{}` acts on containers; run against the compose stack, a swarm stack or \
                 a Kubernetes namespace (tolerant run --compose PROJECT, --swarm STACK, --kubernetes NAMESPACE)",
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
        scope.start_sampler(testbed, &|name| spec.offers_of(name));
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
        let drivers = match (&spec.load.workers, &self.workers) {
            (Some(_), Some(pool)) => {
                if let Err(missing) = pool.wait_for_all(WORKERS_WAIT).await {
                    tracing::warn!("{missing}");
                }
                Drivers::Workers {
                    pool,
                    load: WorkersLoad {
                        run: run.0,
                        spec: spec.source.clone(),
                        sequence: planned.sequence,
                        target: load.settings().target.to_string(),
                        users: spec.load.users,
                        warmup: spec.run_warmup(),
                        duration: spec.run_duration(),
                        timeout: spec.load.timeout,
                        endpoint_names: load.settings().workload.endpoint_names(),
                        task_names: load.settings().workload.task_names(),
                    },
                }
            }
            (Some(_), None) => {
                return (None, Some(Err(crate::workers::WorkersError::NoPool)));
            }
            (None, _) => Drivers::InProcess,
        };
        let driven = drive_load(
            load,
            drivers,
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
        LoadConfig::try_from(load_settings(spec, planned.sequence, self.testbed.frontend))
    }
}
