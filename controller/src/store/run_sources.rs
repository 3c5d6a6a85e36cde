//! How well each `[[sources]]` Prometheus source was seen during a run (table `run_sources`): written with the
//! run's other rows when it ends, read back by the stats, the report and the results page.

use sqlx::Row;

use super::{RunId, Store, StoreError, int};
use crate::sources::{BlindPeriod, MAX_BLIND_PERIODS, SourceHealth};

impl Store {
    /// What `run` saw of each scraped source, in the spec's order (empty for a run without one, or stored before
    /// this was).
    pub async fn run_sources(&self, run: RunId) -> Result<Vec<SourceHealth>, StoreError> {
        let rows = sqlx::query(
            "SELECT source, scrapes, failures, longest_gap_ms, blind_json FROM run_sources \
             WHERE run_id = $1 ORDER BY ordinal",
        )
        .bind(run.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let count = |column: &'static str| -> Result<u64, StoreError> {
                    let value: i64 = row.try_get(column)?;
                    u64::try_from(value).map_err(|_| StoreError::Corrupt {
                        column,
                        value: value.to_string(),
                    })
                };
                let json: String = row.try_get("blind_json")?;
                let blind: Vec<(i64, i64)> = serde_json::from_str(&json)
                    .ok()
                    .filter(|periods: &Vec<(i64, i64)>| periods.len() <= MAX_BLIND_PERIODS)
                    .ok_or_else(|| StoreError::Corrupt {
                        column: "run_sources.blind_json",
                        value: json.clone(),
                    })?;
                Ok(SourceHealth {
                    source: row.try_get("source")?,
                    scrapes: count("scrapes")?,
                    failures: count("failures")?,
                    longest_gap_ms: row.try_get("longest_gap_ms")?,
                    blind: blind
                        .into_iter()
                        .map(|(from_ms, to_ms)| BlindPeriod { from_ms, to_ms })
                        .collect(),
                })
            })
            .collect()
    }
}

/// Inserts what `run` saw of each source inside `tx`.
pub(super) async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    run: RunId,
    sources: &[SourceHealth],
) -> Result<(), StoreError> {
    for (ordinal, health) in sources.iter().enumerate() {
        let blind: Vec<(i64, i64)> = (health.blind.iter())
            .take(MAX_BLIND_PERIODS)
            .map(|period| (period.from_ms, period.to_ms))
            .collect();
        let json = serde_json::to_string(&blind).map_err(|e| StoreError::Invalid {
            field: "sources.blind",
            message: e.to_string(),
        })?;
        sqlx::query(
            "INSERT INTO run_sources (run_id, ordinal, source, scrapes, failures, longest_gap_ms, blind_json) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(run.0)
        .bind(int(ordinal as u64))
        .bind(&health.source)
        .bind(int(health.scrapes))
        .bind(int(health.failures))
        .bind(health.longest_gap_ms)
        .bind(json)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
