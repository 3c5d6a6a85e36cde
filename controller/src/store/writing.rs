//! Writing: experiments, runs, and everything a run saw in one transaction (multi-row INSERTs in chunks).

use std::time::Duration;

use sqlx::Row;

use super::{
    CollectorSample, ExperimentId, RunId, RunRecord, Status, Store, StoreError, duration_ms, int,
};
use super::{TransitionRecord, columns, predictions, run_sources};
use crate::load::{LatencySummary, OutcomeCounts, serialize_histogram};
use crate::predict;
use crate::spec::{ExperimentSpec, PlannedRun};

/// Rows per multi-row INSERT (keeps every statement far below both engines' parameter limits).
pub(super) const ROWS_PER_INSERT: usize = 200;

/// `INSERT INTO table (columns) VALUES ($1, …), (…)` for `rows` rows.
fn insert_sql(table: &str, columns: &[&str], rows: usize) -> String {
    let mut sql = format!("INSERT INTO {table} ({}) VALUES ", columns.join(", "));
    let mut parameter = 1;
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..columns.len() {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push('$');
            sql.push_str(&parameter.to_string());
            parameter += 1;
        }
        sql.push(')');
    }
    sql
}

/// Inserts `rows` into `table` with one multi-row INSERT per [`ROWS_PER_INSERT`] rows; `bind` binds
/// one row's values in `columns` order, given the row's index in `rows`.
async fn insert_chunked<T>(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    table: &str,
    columns: &[&str],
    rows: &[T],
    bind: impl for<'q> Fn(AnyQuery<'q>, usize, &'q T) -> AnyQuery<'q>,
) -> Result<(), StoreError> {
    for (chunk_index, chunk) in rows.chunks(ROWS_PER_INSERT).enumerate() {
        let sql = insert_sql(table, columns, chunk.len());
        let mut query = sqlx::query(&sql);
        for (i, row) in chunk.iter().enumerate() {
            query = bind(query, chunk_index * ROWS_PER_INSERT + i, row);
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

type AnyQuery<'q> = sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>;

fn bind_outcomes<'q>(query: AnyQuery<'q>, outcomes: &OutcomeCounts) -> AnyQuery<'q> {
    query
        .bind(int(outcomes.ok))
        .bind(int(outcomes.failed))
        .bind(int(outcomes.rejected))
        .bind(int(outcomes.timeout))
        .bind(int(outcomes.connection_error))
        .bind(int(outcomes.client_error))
}

/// Binds the [`columns::LATENCY`] of a summary, in that order.
fn bind_latency<'q>(query: AnyQuery<'q>, latency: &LatencySummary) -> AnyQuery<'q> {
    query
        .bind(int(latency.p50_us))
        .bind(int(latency.p95_us))
        .bind(int(latency.p99_us))
        .bind(int(latency.max_us))
}

/// Inserts a run's `rows` that keep their order into `table`: keyed by `run_id` and the row's `ordinal`, then
/// `columns`, which `bind` binds.
async fn insert_ordered<T>(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    run: RunId,
    table: &str,
    columns: &[&'static str],
    rows: &[T],
    bind: impl for<'q> Fn(AnyQuery<'q>, &'q T) -> AnyQuery<'q>,
) -> Result<(), StoreError> {
    // After what the run already has there: transitions are written while a run goes (`append_transitions`).
    let first: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table} WHERE run_id = $1"))
        .bind(run.0)
        .fetch_one(&mut **tx)
        .await?;
    let columns = columns::keyed(&["run_id", "ordinal"], columns);
    insert_chunked(tx, table, &columns, rows, |query, ordinal, row| {
        bind(query.bind(run.0).bind(first + int(ordinal as u64)), row)
    })
    .await
}

/// Binds a transition's [`columns::TRANSITIONS`], in that order.
fn bind_transition<'q>(query: AnyQuery<'q>, transition: &'q TransitionRecord) -> AnyQuery<'q> {
    query
        .bind(transition.at_ms)
        .bind(&transition.service)
        .bind(&transition.breaker)
        .bind(transition.from.as_str())
        .bind(transition.to.as_str())
        .bind(transition.reason.as_str())
        .bind(transition.detail_json().to_string())
        .bind(transition.seq)
        .bind(i64::from(transition.shadow))
        .bind(transition.source.as_deref())
}

impl Store {
    /// Stores a validated experiment (its spec text included) as `pending`, with the simulator's predictions for
    /// its conditions, in one transaction.
    pub async fn create_experiment(
        &self,
        spec: &ExperimentSpec,
        now_ms: i64,
    ) -> Result<ExperimentId, StoreError> {
        // The simulator's predictions are CPU work (≈ 0.1 s for a 30-minute-run spec): off the async threads.
        let for_predictions = spec.clone();
        let predictions = tokio::task::spawn_blocking(move || predict::predict(&for_predictions))
            .await
            .unwrap_or_default();
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query(
            "INSERT INTO experiments (name, spec_toml, seed, planned_runs, status, created_at_ms) \
             VALUES ($1, $2, $3, $4, 'pending', $5) RETURNING id",
        )
        .bind(&spec.name)
        .bind(&spec.source)
        .bind(spec.seed as i64)
        .bind(int(spec.plan().len() as u64))
        .bind(now_ms)
        .fetch_one(&mut *tx)
        .await?;
        let id = ExperimentId(row.try_get(0)?);
        predictions::insert(&mut tx, id, &predictions).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Moves an experiment to `status`; `running` sets its start time (once), an end sets its end.
    pub async fn set_experiment_status(
        &self,
        id: ExperimentId,
        status: Status,
        now_ms: i64,
        reason: Option<&str>,
    ) -> Result<(), StoreError> {
        if matches!(status, Status::Failed | Status::Degraded) {
            return Err(StoreError::NotAnExperimentStatus(id, status));
        }
        let ended = matches!(status, Status::Finished | Status::Aborted);
        sqlx::query(
            "UPDATE experiments SET status = $1, \
             started_at_ms = CASE WHEN $2 = 1 AND started_at_ms IS NULL THEN $3 ELSE started_at_ms END, \
             finished_at_ms = CASE WHEN $4 = 1 THEN $3 ELSE finished_at_ms END, \
             abort_reason = $5 WHERE id = $6",
        )
        .bind(status.as_str())
        .bind(i64::from(status == Status::Running))
        .bind(now_ms)
        .bind(i64::from(ended))
        .bind(reason)
        .bind(id.0)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Records that a planned run started (status `running`, no data yet).
    pub async fn start_run(
        &self,
        experiment: ExperimentId,
        planned: &PlannedRun,
        warmup: Duration,
        duration: Duration,
        now_ms: i64,
    ) -> Result<RunId, StoreError> {
        let condition = &planned.condition;
        let condition_json =
            serde_json::to_string(condition).unwrap_or_else(|_| String::from("{}"));
        let row = sqlx::query(
            "INSERT INTO runs (experiment_id, plan_index, round_index, condition_index, \
             condition_label, fault_kind, fault_rate, breaker_mode, condition_json, status, \
             warmup_ms, duration_ms, started_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'running', $10, $11, $12) RETURNING id",
        )
        .bind(experiment.0)
        .bind(int(planned.sequence as u64))
        .bind(i64::from(planned.round))
        .bind(int(condition.index as u64))
        .bind(condition.label())
        .bind(condition.fault.name().as_str())
        .bind(condition.fault_rate)
        .bind(condition.breaker_mode.as_str())
        .bind(condition_json)
        .bind(duration_ms(warmup))
        .bind(duration_ms(duration))
        .bind(now_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok(RunId(row.try_get(0)?))
    }

    /// Writes everything a run saw and its end status in one transaction. Fails without writing
    /// anything if the run is not `running` (e.g. it was marked interrupted meanwhile).
    pub async fn finish_run(&self, run: RunId, record: &RunRecord) -> Result<(), StoreError> {
        if !matches!(
            record.status,
            Status::Finished | Status::Aborted | Status::Failed | Status::Degraded
        ) {
            return Err(StoreError::NotAnEnd(run, record.status));
        }
        let outcomes = record.outcomes();
        let mut tx = self.pool.begin().await?;

        let updated = bind_outcomes(
            sqlx::query(
                "UPDATE runs SET status = $1, finished_at_ms = $2, abort_reason = $3, requests = $4, \
                 ok = $5, failed = $6, rejected = $7, timeout = $8, connection_error = $9, \
                 client_error = $10, energy_joules = $11, energy_source = $12, load_errors = $13 \
                 WHERE id = $14 AND status = 'running'",
            )
            .bind(record.status.as_str())
            .bind(record.finished_at_ms)
            .bind(record.abort_reason.as_deref())
            .bind(int(outcomes.total())),
            &outcomes,
        )
        .bind(record.energy.map(|(joules, _)| joules))
        .bind(record.energy.map(|(_, source)| source.as_str()))
        .bind(int(record.load_errors))
        .bind(run.0)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() != 1 {
            return Err(StoreError::RunNotRunning(run));
        }

        // Per-second samples: the load driver's seconds joined with the collector's.
        let empty = CollectorSample::default();
        insert_chunked(
            &mut tx,
            "samples",
            &columns::keyed(&["run_id"], &columns::samples()),
            &record.seconds,
            |query, _, second| {
                let outcomes = second.outcomes();
                let collected = record
                    .collector
                    .iter()
                    .find(|sample| sample.second == second.second)
                    .unwrap_or(&empty);
                bind_outcomes(
                    query
                        .bind(run.0)
                        .bind(int(second.second))
                        .bind(i64::from(second.warmup))
                        .bind(int(outcomes.total())),
                    &outcomes,
                )
                .bind(collected.cart_mean_items)
                .bind(collected.carts.map(int))
                .bind(collected.pool_in_flight.map(int))
                .bind(collected.pool_queued.map(int))
                .bind(collected.cpu_seconds)
                .bind(collected.energy_joules)
                .bind(collected.extra.as_ref().map(|extra| extra.to_string()))
            },
        )
        .await?;

        // Per-endpoint, per-second histograms.
        let endpoint_seconds: Vec<_> = record
            .seconds
            .iter()
            .flat_map(|second| {
                second
                    .endpoints
                    .iter()
                    .map(move |endpoint| (second.second, endpoint))
            })
            .collect();
        insert_chunked(
            &mut tx,
            "endpoint_seconds",
            &columns::keyed(&["run_id"], &columns::endpoint_seconds()),
            &endpoint_seconds,
            |query, _, (second, endpoint)| {
                let name = record
                    .endpoint_names
                    .get(endpoint.endpoint)
                    .cloned()
                    .unwrap_or_else(|| format!("#{}", endpoint.endpoint));
                let outcomes = bind_outcomes(
                    query.bind(run.0).bind(int(*second)).bind(name),
                    &endpoint.outcomes,
                );
                bind_latency(outcomes, &endpoint.latency)
                    .bind(endpoint.histogram_v2.as_slice())
                    .bind((endpoint.latency_ok.count > 0).then(|| int(endpoint.latency_ok.p95_us)))
                    .bind(
                        (endpoint.latency_failed.count > 0)
                            .then(|| int(endpoint.latency_failed.p95_us)),
                    )
            },
        )
        .await?;

        // Whole-run histograms per endpoint (measured part).
        insert_chunked(
            &mut tx,
            "endpoint_histograms",
            &columns::keyed(&["run_id"], &columns::endpoint_histograms()),
            &record.endpoints,
            |query, _, endpoint| {
                let summary = LatencySummary::of(&endpoint.stats.latency);
                let outcomes = bind_outcomes(
                    query.bind(run.0).bind(&endpoint.name),
                    &endpoint.stats.outcomes,
                );
                bind_latency(outcomes, &summary)
                    .bind(summary.mean_us)
                    .bind(serialize_histogram(&endpoint.stats.latency))
                    .bind(serialize_histogram(&endpoint.stats.latency_ok))
            },
        )
        .await?;

        insert_ordered(
            &mut tx,
            run,
            "transitions",
            &columns::TRANSITIONS,
            &record.transitions,
            bind_transition,
        )
        .await?;

        insert_ordered(
            &mut tx,
            run,
            "fault_events",
            &columns::FAULT_EVENTS,
            &record.events,
            |query, record| {
                query
                    .bind(record.at_ms)
                    .bind(record.event.kind().as_str())
                    .bind(&record.fault_id)
                    .bind(record.event.detail_json().to_string())
            },
        )
        .await?;

        run_sources::insert(&mut tx, run, &record.sources).await?;

        tx.commit().await?;
        Ok(())
    }

    /// Writes transitions of a run that is still going, after those it has, in one transaction (a run's
    /// transitions are written while it goes: `runner::spool`); refused when the run is not `running`.
    pub async fn append_transitions(
        &self,
        run: RunId,
        transitions: &[TransitionRecord],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        let running: Option<i64> =
            sqlx::query_scalar("SELECT id FROM runs WHERE id = $1 AND status = 'running'")
                .bind(run.0)
                .fetch_optional(&mut *tx)
                .await?;
        if running.is_none() {
            return Err(StoreError::RunNotRunning(run));
        }
        insert_ordered(
            &mut tx,
            run,
            "transitions",
            &columns::TRANSITIONS,
            transitions,
            bind_transition,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Marks every `running` run of an experiment `interrupted` (a controller restarting after a
    /// crash); returns how many there were. Their data was never written, but for the transitions written
    /// while they went.
    pub async fn mark_interrupted(
        &self,
        experiment: ExperimentId,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let result = sqlx::query(
            "UPDATE runs SET status = 'interrupted', finished_at_ms = $1 \
             WHERE experiment_id = $2 AND status = 'running'",
        )
        .bind(now_ms)
        .bind(experiment.0)
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected())
    }
}
