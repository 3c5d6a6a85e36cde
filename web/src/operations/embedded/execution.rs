//! Running an experiment (one at a time, resuming where it stopped) and aborting it.

use controller::clock::now_ms;
use controller::runner::{Progress, Runner, RunnerError};
use controller::spec::ExperimentSpec;
use controller::store::{ExperimentId, Status};
use tokio_util::sync::CancellationToken;

use super::{ActiveExperiment, EmbeddedOperations, store_failed};
use crate::hub::{ExperimentStatus, LiveEvent, RunProgress};
use crate::operations::OperationError;

/// Refuses a spec whose virtual users this process cannot hold (descriptors), naming `load.users`. Counted at
/// the embedded stack's cost per user: the dashboard cannot tell whether its targets run in its process.
fn check_users_fit(spec: &ExperimentSpec) -> Result<(), OperationError> {
    controller::load::check_users_fit(spec.load.users, spec.load.workers.is_some(), true)
        .map_err(|error| OperationError::Invalid(error.to_string()))
}

impl EmbeddedOperations {
    /// Validates and stores a spec; returns the new experiment's id.
    pub(super) async fn create_experiment(&self, spec_toml: String) -> Result<i64, OperationError> {
        let spec = ExperimentSpec::parse(&spec_toml)
            .map_err(|error| OperationError::Invalid(error.to_string()))?;
        check_users_fit(&spec)?;
        let id = self
            .inner
            .store
            .create_experiment(&spec, now_ms())
            .await
            .map_err(store_failed)?;
        self.publish_status(id.0, ExperimentStatus::Pending);
        Ok(id.0)
    }

    /// Starts experiment `id` on a task of its own, unless another one is running.
    pub(super) async fn start_now(&self, id: i64) -> Result<(), OperationError> {
        let row = self.experiment_row(id).await?;
        if row.status == Status::Finished {
            return Err(OperationError::Conflict(format!(
                "experiment {id} has finished already"
            )));
        }
        let spec = ExperimentSpec::parse(&row.spec_toml)
            .map_err(|error| OperationError::Invalid(format!("stored spec: {error}")))?;
        check_users_fit(&spec)?;
        self.refuse_if_running()?;
        // Listening before anything starts: a `workers_listen` taken is said to the one who started it.
        let pool = self.workers_pool(&spec).await?;
        let mut active = self.inner.active.lock();
        if let Some(running) = active.as_ref()
            && !running.task.is_finished()
        {
            return Err(Self::running_conflict(running.id));
        }
        // An experiment measures its own load only, and leases its own breaker config.
        self.stop_game_day_load();
        self.inner.modes.lock().release();
        let cancel = CancellationToken::new();
        let mut runner = self.runner(cancel.clone());
        if let Some(pool) = &pool {
            runner = runner.with_workers(pool.clone());
        }
        let operations = self.clone();
        let task = tokio::spawn(async move {
            // A panic that escaped the run's own catch (its progress report, the loop around it) must not
            // leave the experiment `running` with no task behind it.
            let executed = controller::panic::caught(super::workers::publishing_panel(
                &operations.inner.hub,
                id,
                pool,
                operations.execute(&runner, id, row.name, spec),
            ));
            if let Err(message) = executed.await {
                tracing::error!(experiment = id, message, "the experiment's runner panicked");
                let reason = format!("the experiment's runner panicked: {message}");
                if let Err(error) = operations.end_stranded(id, &reason).await {
                    tracing::warn!(experiment = id, %error, "ending the experiment after its panic");
                }
            }
        });
        *active = Some(ActiveExperiment { id, task, cancel });
        Ok(())
    }

    fn running_conflict(running: i64) -> OperationError {
        OperationError::Conflict(format!(
            "experiment {running} is running; abort it or wait for it to finish"
        ))
    }

    /// Refuses while another experiment runs.
    fn refuse_if_running(&self) -> Result<(), OperationError> {
        match self.inner.active.lock().as_ref() {
            Some(running) if !running.task.is_finished() => Err(Self::running_conflict(running.id)),
            _ => Ok(()),
        }
    }

    /// Stops the running experiment `id`: it is cancelled and, once its run has ended (fault removed,
    /// every task stopped), the agent is halted, the unfinished run marked interrupted and the experiment
    /// aborted. Returns only then.
    /// An experiment stored as `running` whose task has ended without marking it (nothing runs it any more)
    /// is aborted the same way, at once.
    pub(super) async fn abort_running(&self, id: i64) -> Result<(), OperationError> {
        let (active, another_runs) = {
            let mut active = self.inner.active.lock();
            match active.take() {
                Some(running) if running.id == id && !running.task.is_finished() => {
                    (Some(running), false)
                }
                other => {
                    let another_runs = other.as_ref().is_some_and(|o| !o.task.is_finished());
                    *active = other;
                    (None, another_runs)
                }
            }
        };
        match active {
            Some(active) => active.end().await,
            None => {
                let row = self.experiment_row(id).await?;
                if row.status != Status::Running {
                    return Err(OperationError::Conflict(format!(
                        "experiment {id} is neither running nor scheduled"
                    )));
                }
                if another_runs {
                    // Its faults are long gone (every run removes its own); halting the agent now would
                    // take the running experiment's fault away.
                    return self.mark_aborted(id, "aborted from the dashboard").await;
                }
            }
        }
        self.end_stranded(id, "aborted from the dashboard").await
    }

    /// Ends experiment `id` once nothing runs it any more: the agent halted, its unfinished run marked
    /// interrupted, the experiment aborted with `reason`.
    async fn end_stranded(&self, id: i64, reason: &str) -> Result<(), OperationError> {
        let halted = self.agent_halt().await;
        self.mark_aborted(id, reason).await?;
        halted
    }

    /// Marks experiment `id`'s unfinished run interrupted and the experiment aborted with `reason`.
    async fn mark_aborted(&self, id: i64, reason: &str) -> Result<(), OperationError> {
        let experiment = ExperimentId(id);
        self.inner
            .store
            .mark_interrupted(experiment, now_ms())
            .await
            .map_err(store_failed)?;
        self.inner
            .store
            .set_experiment_status(experiment, Status::Aborted, now_ms(), Some(reason))
            .await
            .map_err(store_failed)?;
        self.publish_status(id, ExperimentStatus::Aborted);
        Ok(())
    }

    /// Runs every plan position that has no terminal run yet (finished, or stopped by its stop condition: a
    /// verdict, not a crash), in plan order: prepared exactly as `tolerant run` resumes
    /// ([`controller::runner::Runner::prepare_resume`]: leftover faults cleared, a dead attempt marked interrupted).
    async fn execute(&self, runner: &Runner, id: i64, name: String, spec: ExperimentSpec) {
        let experiment = ExperimentId(id);
        let store = &self.inner.store;
        let done = match runner.prepare_resume(&spec, experiment).await {
            Ok(point) => point.done,
            Err(error) => {
                tracing::warn!(experiment = id, %error, "experiment could not start");
                return;
            }
        };
        self.publish_status(id, ExperimentStatus::Running);
        let plan = spec.plan();
        let total = plan.len();
        let run_length = spec.run_warmup() + spec.run_duration();
        let warmup_ms = spec.run_warmup().as_millis() as u64;
        // Said on the live page while the experiment runs, as the report says it after.
        let (not_measured, opens_not_measured) = RunProgress::not_measured_of(&spec);
        for planned in &plan {
            if done.contains(&planned.sequence) {
                continue;
            }
            let hub = self.inner.hub.clone();
            let name = name.clone();
            let not_measured = not_measured.clone();
            // The run's start, kept for its later progress events (the live timeline starts there).
            let mut run_started_ms = now_ms() as u64;
            let mut progress = move |progress: Progress| {
                if matches!(progress, Progress::RunStarted { .. }) {
                    run_started_ms = now_ms() as u64;
                }
                let (planned, phase, ends) = match &progress {
                    Progress::RunStarted { planned, .. } => (
                        planned,
                        ExperimentStatus::Running,
                        Some(now_ms() as u64 + run_length.as_millis() as u64),
                    ),
                    Progress::RunFinished {
                        planned, status, ..
                    } => (planned, ExperimentStatus::from(*status), None),
                };
                hub.publish(LiveEvent::Progress(RunProgress {
                    experiment_id: id,
                    experiment: name.clone(),
                    run: planned.sequence as u64 + 1,
                    runs: total as u64,
                    condition: planned.condition.label(),
                    round: u64::from(planned.round) + 1,
                    phase,
                    started_at_ms: run_started_ms,
                    ends_at_ms: ends,
                    measured_from_ms: Some(run_started_ms + warmup_ms),
                    not_measured: not_measured.clone(),
                    opens_not_measured,
                }));
            };
            if let Err(error) = runner
                .run_one(&spec, experiment, planned, total, &mut progress)
                .await
            {
                if matches!(error, RunnerError::Cancelled) {
                    // Ended from outside (an abort, a shutdown): whoever ended it marks it.
                    return;
                }
                let _ = store
                    .set_experiment_status(
                        experiment,
                        Status::Aborted,
                        now_ms(),
                        Some(&error.to_string()),
                    )
                    .await;
                self.publish_status(id, ExperimentStatus::Aborted);
                return;
            }
        }
        let _ = store
            .set_experiment_status(experiment, Status::Finished, now_ms(), None)
            .await;
        self.publish_status(id, ExperimentStatus::Finished);
    }
}
