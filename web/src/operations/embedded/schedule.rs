//! Queued starts: one timer task per scheduled experiment, the due times kept in the store
//! (`scheduled_starts`) so they survive a restart.

use controller::clock::now_ms;
use std::collections::BTreeMap;
use std::time::Duration;

use controller::store::{ExperimentId, Status};

use super::{EmbeddedOperations, store_failed};
use crate::hub::ExperimentStatus;
use crate::operations::OperationError;

impl EmbeddedOperations {
    /// Scheduled starts, by experiment.
    pub fn scheduled(&self) -> BTreeMap<i64, i64> {
        self.inner
            .schedule
            .lock()
            .iter()
            .map(|(id, (at, _))| (*id, *at))
            .collect()
    }

    /// Arms a timer for every start stored by an earlier process.
    pub(super) async fn rearm_scheduled(&self) -> Result<(), OperationError> {
        for (experiment, at_ms) in self
            .inner
            .store
            .scheduled_starts()
            .await
            .map_err(store_failed)?
        {
            self.arm(experiment.0, at_ms);
        }
        Ok(())
    }

    /// Queues experiment `id` for `at_ms` (in the future), replacing an earlier time.
    pub(super) async fn schedule_start(&self, id: i64, at_ms: i64) -> Result<(), OperationError> {
        let row = self.experiment_row(id).await?;
        if matches!(row.status, Status::Running | Status::Finished) {
            return Err(OperationError::Conflict(format!(
                "experiment {id} is {}",
                row.status.as_str()
            )));
        }
        self.inner
            .store
            .schedule_start(ExperimentId(id), at_ms)
            .await
            .map_err(store_failed)?;
        self.arm(id, at_ms);
        self.publish_status(id, ExperimentStatus::Scheduled);
        Ok(())
    }

    /// Takes `id` off the queue (its timer and its stored row); `true` when a timer was armed for it.
    pub(super) async fn unschedule(&self, id: i64) -> Result<bool, OperationError> {
        let timer = self.inner.schedule.lock().remove(&id);
        if let Some((_, timer)) = &timer {
            timer.abort();
        }
        self.inner
            .store
            .unschedule_start(ExperimentId(id))
            .await
            .map_err(store_failed)?;
        Ok(timer.is_some())
    }

    /// Disarms every timer; the stored rows stay for the next process.
    pub(super) fn disarm_all(&self) {
        for (_, (_, timer)) in std::mem::take(&mut *self.inner.schedule.lock()) {
            timer.abort();
        }
    }

    fn arm(&self, id: i64, at_ms: i64) {
        let operations = self.clone();
        let delay = Duration::from_millis(u64::try_from(at_ms - now_ms()).unwrap_or(0));
        let timer = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            operations.inner.schedule.lock().remove(&id);
            let _ = operations
                .inner
                .store
                .unschedule_start(ExperimentId(id))
                .await;
            if let Err(error) = operations.start_now(id).await {
                tracing::warn!(experiment = id, %error, "scheduled start failed");
                operations.publish_status(id, ExperimentStatus::StartFailed);
            }
        });
        if let Some((_, previous)) = self
            .inner
            .schedule
            .lock()
            .insert(id, (at_ms, timer.abort_handle()))
        {
            previous.abort();
        }
    }
}
