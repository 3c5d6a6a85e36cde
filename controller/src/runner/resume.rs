//! Resuming an experiment whose controller died (SIGKILL included): faults cleared on the agent
//! first, the unfinished attempt marked `interrupted` (it never wrote data: a run's rows are
//! committed in one transaction at its end), then only the plan positions without a terminal run
//! are run, in plan order. A terminal run is a finished one or one its stop condition aborted (a
//! verdict on that position, not a crash); a position never started, or only `interrupted` by a
//! dying controller, runs again. The store's unique index keeps a position finished at most once.

use std::collections::BTreeSet;

use crate::spec::ExperimentSpec;
use crate::store::{ExperimentId, ExperimentRow, Status, Store, StoreError};

use super::{Progress, Runner, RunnerError};
use crate::clock::now_ms;

/// Where a resumed experiment stands before its remaining runs start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumePoint {
    pub experiment: ExperimentId,
    /// Faults the agent still held (left by the dead controller) and removed.
    pub faults_cleared: u64,
    /// Attempts found `running` and marked `interrupted`.
    pub interrupted: u64,
    /// Plan positions that already have a terminal run — finished, or aborted by the stop
    /// condition — which are skipped.
    pub done: BTreeSet<usize>,
    /// How many of `done` have no finished run, only one the stop condition aborted.
    pub stopped: usize,
    /// Plan positions in all.
    pub total: usize,
}

impl ResumePoint {
    /// Plan positions still to run.
    pub fn remaining(&self) -> usize {
        self.total.saturating_sub(self.done.len())
    }
}

/// The latest stored experiment of this spec (same name and same spec text) when it is unfinished
/// (`pending`, `running` or `interrupted`) — what `tolerant run` resumes. An aborted or finished
/// latest experiment means a fresh one.
pub async fn latest_unfinished(
    store: &Store,
    spec: &ExperimentSpec,
) -> Result<Option<ExperimentRow>, StoreError> {
    let latest = store
        .experiments()
        .await?
        .into_iter()
        .filter(|row| row.name == spec.name && row.spec_toml == spec.source)
        .max_by_key(|row| row.id.0);
    Ok(latest.filter(|row| {
        matches!(
            row.status,
            Status::Pending | Status::Running | Status::Interrupted
        )
    }))
}

/// What `tolerant run` does with a spec: resume a stored experiment, or start a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartChoice {
    /// Continue this stored experiment (its terminal plan positions are skipped).
    Resume(ExperimentId),
    /// A new experiment running the whole plan; stored ones are left as they are.
    Fresh,
}

/// `fresh` (`tolerant run --fresh`) always means a new experiment; otherwise the spec's
/// [`latest_unfinished`] experiment is resumed when there is one.
pub async fn choose_start(
    store: &Store,
    spec: &ExperimentSpec,
    fresh: bool,
) -> Result<StartChoice, StoreError> {
    if fresh {
        return Ok(StartChoice::Fresh);
    }
    Ok(match latest_unfinished(store, spec).await? {
        Some(row) => StartChoice::Resume(row.id),
        None => StartChoice::Fresh,
    })
}

impl Runner {
    /// Carries out a [`StartChoice`]: a new experiment through its whole plan, or
    /// [`Runner::prepare_resume`] and then the stored one's remaining positions. `resumed` sees
    /// where a resumed experiment stands before any of its runs starts.
    pub async fn start(
        &self,
        spec: &ExperimentSpec,
        choice: StartChoice,
        resumed: impl FnOnce(&ResumePoint),
        progress: impl FnMut(Progress),
    ) -> Result<ExperimentId, RunnerError> {
        match choice {
            StartChoice::Fresh => self.run_experiment(spec, progress).await,
            StartChoice::Resume(experiment) => {
                let point = self.prepare_resume(spec, experiment).await?;
                resumed(&point);
                self.run_remaining(spec, experiment, &point.done, progress)
                    .await
            }
        }
    }

    /// Gets a stored experiment ready to continue: every fault on the agent removed, `running`
    /// attempts marked `interrupted`, the experiment `running` again. Nothing is run yet.
    pub async fn prepare_resume(
        &self,
        spec: &ExperimentSpec,
        experiment: ExperimentId,
    ) -> Result<ResumePoint, RunnerError> {
        // Before anything else: a fault the dead controller left must not outlive it.
        let faults_cleared = self.admin.halt(&self.testbed.agent).await?;
        // Nor the breaker config it pushed (its lease ends it anyway, this ends it now; a service that cannot
        // restore is no reason not to resume: the next run pushes its own config).
        for (name, url) in &self.testbed.services {
            if spec.offers_of(name.as_str()).breaker_config {
                if let Err(error) = self.admin.restore_breakers(url).await {
                    tracing::warn!(service = %name, %error, "restoring the breaker config before resuming failed");
                }
            }
        }
        let interrupted = self.store.mark_interrupted(experiment, now_ms()).await?;
        self.store
            .set_experiment_status(experiment, Status::Running, now_ms(), None)
            .await?;
        let done: BTreeSet<usize> = self
            .store
            .terminal_plan_indices(experiment)
            .await?
            .into_iter()
            .collect();
        let finished = self.store.finished_plan_indices(experiment).await?.len();
        Ok(ResumePoint {
            experiment,
            faults_cleared,
            interrupted,
            stopped: done.len().saturating_sub(finished),
            done,
            total: spec.plan().len(),
        })
    }

    /// Resumes a stored experiment: [`Runner::prepare_resume`], then the plan positions without a
    /// terminal run, in plan order.
    pub async fn resume_experiment(
        &self,
        spec: &ExperimentSpec,
        experiment: ExperimentId,
        progress: impl FnMut(Progress),
    ) -> Result<ExperimentId, RunnerError> {
        self.start(spec, StartChoice::Resume(experiment), |_| {}, progress)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{self, TempStore};

    const SPEC: &str = r#"
name = "resume-unit"
duration = "10s"
[load]
users = 1
[fault]
target = "payment"
kind = "error"
status = 500
rates = [0.5]
[breaker]
modes = ["disabled"]
"#;

    #[tokio::test]
    async fn latest_unfinished_is_the_newest_unfinished_experiment_of_the_same_spec_text() {
        let dir = TempStore::new("resume-unit");
        let store = dir.open().await;
        let spec = test_support::spec(SPEC);
        let edited = test_support::spec(&format!("{SPEC}\n# edited\n"));
        assert_eq!(latest_unfinished(&store, &spec).await.expect("query"), None);

        let older = store.create_experiment(&spec, 1).await.expect("create");
        let newer = store.create_experiment(&spec, 2).await.expect("create");
        store.create_experiment(&edited, 3).await.expect("create");
        store
            .set_experiment_status(newer, Status::Running, 4, None)
            .await
            .expect("status");
        let found = latest_unfinished(&store, &spec).await.expect("query");
        assert_eq!(found.map(|row| row.id), Some(newer));

        // A finished (or aborted) latest experiment means a fresh start, not the older one.
        store
            .set_experiment_status(newer, Status::Finished, 5, None)
            .await
            .expect("status");
        assert_eq!(latest_unfinished(&store, &spec).await.expect("query"), None);
        assert_ne!(older, newer);

        store.close().await;
    }

    #[tokio::test]
    async fn prepare_resume_clears_left_faults_and_marks_the_running_attempt_interrupted() {
        let dir = TempStore::new("resume-prepare");
        let store = dir.open().await;
        let spec = test_support::spec(SPEC);
        let (stack, testbed) = crate::testbed::start_embedded_stack(&spec)
            .await
            .expect("embedded stack");
        let runner = Runner::new(store.clone(), testbed.clone());
        let plan = spec.plan();
        let experiment = store.create_experiment(&spec, 1).await.expect("create");
        let attempt = store
            .start_run(
                experiment,
                &plan[0],
                spec.run_warmup(),
                spec.run_duration(),
                2,
            )
            .await
            .expect("start run");
        // What a controller killed mid-run leaves: a fault on the agent, a `running` attempt.
        let fault = crate::runner::fault_spec(&spec, &plan[0])
            .expect("a valid fault")
            .expect("an agent fault kind");
        runner
            .admin
            .put_fault(&testbed.agent, "left-by-the-dead", &fault)
            .await
            .expect("put fault");

        let point = runner
            .prepare_resume(&spec, experiment)
            .await
            .expect("prepare resume");
        assert_eq!(point.faults_cleared, 1);
        assert_eq!(point.interrupted, 1);
        assert!(point.done.is_empty());
        assert_eq!(point.remaining(), plan.len());
        let listed = runner
            .admin
            .call(
                http::Method::GET,
                &format!("{}/_agent/faults", testbed.agent),
                crate::testbed::Credential::Anonymous,
                None,
                bytes::Bytes::new(),
            )
            .await
            .expect("list faults");
        assert!(
            !String::from_utf8_lossy(&listed).contains("left-by-the-dead"),
            "fault still listed: {}",
            String::from_utf8_lossy(&listed)
        );
        let runs = store.runs(experiment).await.expect("runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].id, attempt);
        assert_eq!(runs[0].status, Status::Interrupted);
        let row = store
            .experiment(experiment)
            .await
            .expect("row")
            .expect("row");
        assert_eq!(row.status, Status::Running);

        stack.shutdown().await;
        store.close().await;
    }
}
