//! Scheduled experiment starts (the dashboard's queue), kept in the database so they survive a restart.

use sqlx::Row;

use super::{ExperimentId, Store, StoreError};

impl Store {
    /// Queues `experiment` to start at `at_ms` (Unix milliseconds), replacing an earlier time.
    pub async fn schedule_start(
        &self,
        experiment: ExperimentId,
        at_ms: i64,
    ) -> Result<(), StoreError> {
        let mut transaction = self.pool.begin().await?;
        sqlx::query("DELETE FROM scheduled_starts WHERE experiment_id = $1")
            .bind(experiment.0)
            .execute(&mut *transaction)
            .await?;
        sqlx::query("INSERT INTO scheduled_starts (experiment_id, at_ms) VALUES ($1, $2)")
            .bind(experiment.0)
            .bind(at_ms)
            .execute(&mut *transaction)
            .await?;
        transaction.commit().await?;
        Ok(())
    }

    /// Takes `experiment` off the queue (nothing happens when it is not queued).
    pub async fn unschedule_start(&self, experiment: ExperimentId) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM scheduled_starts WHERE experiment_id = $1")
            .bind(experiment.0)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Every queued start as (experiment, due time in Unix milliseconds), by experiment.
    pub async fn scheduled_starts(&self) -> Result<Vec<(ExperimentId, i64)>, StoreError> {
        let rows =
            sqlx::query("SELECT experiment_id, at_ms FROM scheduled_starts ORDER BY experiment_id")
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|row| Ok((ExperimentId(row.try_get(0)?), row.try_get(1)?)))
            .collect()
    }
}
