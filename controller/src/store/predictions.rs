//! Simulator predictions stored with their experiment: written in the transaction that creates it, read back for
//! reports, `tolerant show` and the results page.

use sqlx::Row;

use super::{ExperimentId, Store, StoreError};
use crate::predict::Prediction;

impl Store {
    /// The predictions stored with `experiment`, in condition order (empty when the model covers none of its
    /// conditions, or for an experiment stored before predictions were).
    pub async fn predictions(
        &self,
        experiment: ExperimentId,
    ) -> Result<Vec<Prediction>, StoreError> {
        let rows = sqlx::query(
            "SELECT prediction_json FROM predictions WHERE experiment_id = $1 ORDER BY condition_index",
        )
        .bind(experiment.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let json: String = row.try_get(0)?;
                serde_json::from_str(&json).map_err(|_| StoreError::Corrupt {
                    column: "predictions.prediction_json",
                    value: json,
                })
            })
            .collect()
    }
}

/// Inserts `predictions` of `experiment` inside `tx`.
pub(super) async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    experiment: ExperimentId,
    predictions: &[Prediction],
) -> Result<(), StoreError> {
    for prediction in predictions {
        let json = serde_json::to_string(prediction).map_err(|e| StoreError::Invalid {
            field: "prediction",
            message: e.to_string(),
        })?;
        sqlx::query(
            "INSERT INTO predictions (experiment_id, condition_index, prediction_json) VALUES ($1, $2, $3)",
        )
        .bind(experiment.0)
        .bind(prediction.condition as i64)
        .bind(json)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
