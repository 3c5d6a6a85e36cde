//! Storage: experiments, runs and everything a run saw, in SQLite (one file, WAL; the default) or
//! PostgreSQL (by URL), with the same code.
//!
//! The same SQL runs on both through sqlx's `Any` driver: `$n` placeholders (SQLite accepts them),
//! BIGINT / DOUBLE PRECISION / TEXT columns, times as Unix milliseconds and flags as 0/1 integers,
//! because `Any` carries only integers, floats, text and bytes. Only the migrations differ (see
//! [`migrations`]). A run's rows are written in one transaction when it ends, so a run is either
//! absent, `running` (no rows yet), or complete.

mod migrations;
mod records;
mod schedule;
#[cfg(test)]
mod tests;

use std::time::Duration;

use sqlx::any::{AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Row};

pub use migrations::{Backend, MIGRATIONS};
pub use records::STOP_CONDITION_REASON;
pub use records::{
    AnnotationId, AnnotationRow, CollectorSample, EndpointHistogramRow, EndpointSecondRow,
    EnergySource, ExperimentId, ExperimentRow, FaultEventRecord, MAX_ANNOTATION_CHARS,
    MAX_AUTHOR_CHARS, NewAnnotation, RunId, RunRecord, RunRow, SampleRow, Status, TransitionRecord,
};

use crate::load::{LatencySummary, OutcomeCounts, serialize_histogram};
use crate::spec::{ExperimentSpec, PlannedRun};

/// Default database: a SQLite file in the working directory.
pub const DEFAULT_DATABASE: &str = "tolerant.db";

/// Rows per multi-row INSERT (keeps every statement far below both engines' parameter limits).
const ROWS_PER_INSERT: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database location `{0}`: expected a file path, sqlite://… or postgres://…")]
    Location(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("database migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error(
        "run {0} is not running (finished, aborted or interrupted already): its rows were not written"
    )]
    RunNotRunning(RunId),
    #[error("run {0}: status {1:?} is not how a run ends (finished or aborted)")]
    NotAnEnd(RunId, Status),
    #[error("stored value `{value}` in {column} is not valid")]
    Corrupt { column: &'static str, value: String },
    /// A value handed in to be stored is not acceptable; `field` names it.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
}

/// An annotation's text, trimmed: not empty, at most [`MAX_ANNOTATION_CHARS`] characters.
pub fn annotation_text(text: &str) -> Result<String, StoreError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(StoreError::Invalid {
            field: "text",
            message: "empty".into(),
        });
    }
    if text.chars().count() > MAX_ANNOTATION_CHARS {
        return Err(StoreError::Invalid {
            field: "text",
            message: format!("longer than {MAX_ANNOTATION_CHARS} characters"),
        });
    }
    Ok(text.to_owned())
}

/// An annotation's author, trimmed; empty means none. At most [`MAX_AUTHOR_CHARS`] characters.
pub fn annotation_author(author: Option<&str>) -> Result<Option<String>, StoreError> {
    let Some(author) = author.map(str::trim).filter(|author| !author.is_empty()) else {
        return Ok(None);
    };
    if author.chars().count() > MAX_AUTHOR_CHARS {
        return Err(StoreError::Invalid {
            field: "author",
            message: format!("longer than {MAX_AUTHOR_CHARS} characters"),
        });
    }
    Ok(Some(author.to_owned()))
}

/// A connection pool to the experiment database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
}

/// `location` as a sqlx URL and its backend: a plain path is a SQLite file (created if missing).
pub fn database_url(location: &str) -> Result<(String, Backend), StoreError> {
    if location.starts_with("postgres://") || location.starts_with("postgresql://") {
        return Ok((location.to_owned(), Backend::Postgres));
    }
    if location.contains(":memory:") {
        // Every pooled connection would get its own empty database.
        return Err(StoreError::Location(location.to_owned()));
    }
    if let Some(rest) = location.strip_prefix("sqlite:") {
        let url = if rest.contains("mode=") {
            location.to_owned()
        } else if rest.contains('?') {
            format!("{location}&mode=rwc")
        } else {
            format!("{location}?mode=rwc")
        };
        return Ok((url, Backend::Sqlite));
    }
    if location.is_empty() || location.contains("://") {
        return Err(StoreError::Location(location.to_owned()));
    }
    Ok((format!("sqlite://{location}?mode=rwc"), Backend::Sqlite))
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn status_of(text: &str) -> Result<Status, StoreError> {
    Status::parse(text).ok_or_else(|| StoreError::Corrupt {
        column: "status",
        value: text.to_owned(),
    })
}

fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

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

const OUTCOME_COLUMNS: [&str; 6] = [
    "ok",
    "failed",
    "rejected",
    "timeout",
    "connection_error",
    "client_error",
];

fn outcomes_of(row: &AnyRow) -> Result<OutcomeCounts, sqlx::Error> {
    Ok(OutcomeCounts {
        ok: uint(row.try_get("ok")?),
        failed: uint(row.try_get("failed")?),
        rejected: uint(row.try_get("rejected")?),
        timeout: uint(row.try_get("timeout")?),
        connection_error: uint(row.try_get("connection_error")?),
        client_error: uint(row.try_get("client_error")?),
    })
}

impl Store {
    /// Opens (creating if needed) the database at `location` — a file path, `sqlite://…` or
    /// `postgres://…` — and brings its schema up to date.
    pub async fn open(location: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let (url, backend) = database_url(location)?;
        let pool = AnyPoolOptions::new()
            .max_connections(match backend {
                Backend::Sqlite => 4,
                Backend::Postgres => 8,
            })
            .connect(&url)
            .await?;
        if backend == Backend::Sqlite {
            // Persistent in the file: readers (the dashboard) never block the writer.
            sqlx::query("PRAGMA journal_mode = WAL")
                .fetch_optional(&pool)
                .await?;
        }
        migrations::migrator(backend).await?.run(&pool).await?;
        Ok(Store { pool, backend })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Stores a validated experiment (its spec text included) as `pending`.
    pub async fn create_experiment(
        &self,
        spec: &ExperimentSpec,
        now_ms: i64,
    ) -> Result<ExperimentId, StoreError> {
        let row = sqlx::query(
            "INSERT INTO experiments (name, spec_toml, seed, planned_runs, status, created_at_ms) \
             VALUES ($1, $2, $3, $4, 'pending', $5) RETURNING id",
        )
        .bind(&spec.name)
        .bind(&spec.source)
        .bind(spec.seed as i64)
        .bind(int(spec.plan().len() as u64))
        .bind(now_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok(ExperimentId(row.try_get(0)?))
    }

    /// Moves an experiment to `status`; `running` sets its start time (once), an end sets its end.
    pub async fn set_experiment_status(
        &self,
        id: ExperimentId,
        status: Status,
        now_ms: i64,
        reason: Option<&str>,
    ) -> Result<(), StoreError> {
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
        if !matches!(record.status, Status::Finished | Status::Aborted) {
            return Err(StoreError::NotAnEnd(run, record.status));
        }
        let outcomes = record.outcomes();
        let mut tx = self.pool.begin().await?;

        let updated = bind_outcomes(
            sqlx::query(
                "UPDATE runs SET status = $1, finished_at_ms = $2, abort_reason = $3, requests = $4, \
                 ok = $5, failed = $6, rejected = $7, timeout = $8, connection_error = $9, \
                 client_error = $10, energy_joules = $11, energy_source = $12 \
                 WHERE id = $13 AND status = 'running'",
            )
            .bind(record.status.as_str())
            .bind(record.finished_at_ms)
            .bind(record.abort_reason.as_deref())
            .bind(int(outcomes.total())),
            &outcomes,
        )
        .bind(record.energy.map(|(joules, _)| joules))
        .bind(record.energy.map(|(_, source)| source.as_str()))
        .bind(run.0)
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() != 1 {
            return Err(StoreError::RunNotRunning(run));
        }

        // Per-second samples: the load driver's seconds joined with the collector's.
        let mut sample_columns = vec!["run_id", "second", "warmup", "requests"];
        sample_columns.extend(OUTCOME_COLUMNS);
        sample_columns.extend([
            "cart_mean_items",
            "carts",
            "pool_in_flight",
            "pool_queued",
            "cpu_seconds",
            "energy_joules",
            "extra_json",
        ]);
        let empty = CollectorSample::default();
        for chunk in record.seconds.chunks(ROWS_PER_INSERT) {
            let sql = insert_sql("samples", &sample_columns, chunk.len());
            let mut query = sqlx::query(&sql);
            for second in chunk {
                let outcomes = second.outcomes();
                let collected = record
                    .collector
                    .iter()
                    .find(|sample| sample.second == second.second)
                    .unwrap_or(&empty);
                query = bind_outcomes(
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
                .bind(collected.extra.as_ref().map(|extra| extra.to_string()));
            }
            query.execute(&mut *tx).await?;
        }

        // Per-endpoint, per-second histograms.
        let mut second_columns = vec!["run_id", "second", "endpoint"];
        second_columns.extend(OUTCOME_COLUMNS);
        second_columns.extend(["p50_us", "p95_us", "p99_us", "max_us", "histogram"]);
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
        for chunk in endpoint_seconds.chunks(ROWS_PER_INSERT) {
            let sql = insert_sql("endpoint_seconds", &second_columns, chunk.len());
            let mut query = sqlx::query(&sql);
            for (second, endpoint) in chunk {
                let name = record
                    .endpoint_names
                    .get(endpoint.endpoint)
                    .cloned()
                    .unwrap_or_else(|| format!("#{}", endpoint.endpoint));
                query = bind_outcomes(
                    query.bind(run.0).bind(int(*second)).bind(name),
                    &endpoint.outcomes,
                )
                .bind(int(endpoint.latency.p50_us))
                .bind(int(endpoint.latency.p95_us))
                .bind(int(endpoint.latency.p99_us))
                .bind(int(endpoint.latency.max_us))
                .bind(endpoint.histogram_v2.as_slice());
            }
            query.execute(&mut *tx).await?;
        }

        // Whole-run histograms per endpoint (measured part).
        let mut histogram_columns = vec!["run_id", "endpoint"];
        histogram_columns.extend(OUTCOME_COLUMNS);
        histogram_columns.extend([
            "p50_us",
            "p95_us",
            "p99_us",
            "max_us",
            "mean_us",
            "histogram",
            "histogram_ok",
        ]);
        for endpoint in &record.endpoints {
            let summary = LatencySummary::of(&endpoint.stats.latency);
            let sql = insert_sql("endpoint_histograms", &histogram_columns, 1);
            bind_outcomes(
                sqlx::query(&sql).bind(run.0).bind(&endpoint.name),
                &endpoint.stats.outcomes,
            )
            .bind(int(summary.p50_us))
            .bind(int(summary.p95_us))
            .bind(int(summary.p99_us))
            .bind(int(summary.max_us))
            .bind(summary.mean_us)
            .bind(serialize_histogram(&endpoint.stats.latency))
            .bind(serialize_histogram(&endpoint.stats.latency_ok))
            .execute(&mut *tx)
            .await?;
        }

        let transition_columns = [
            "run_id",
            "ordinal",
            "at_ms",
            "service",
            "breaker",
            "from_state",
            "to_state",
            "reason",
            "detail_json",
            "seq",
            "shadow",
        ];
        for (chunk_index, chunk) in record.transitions.chunks(ROWS_PER_INSERT).enumerate() {
            let sql = insert_sql("transitions", &transition_columns, chunk.len());
            let mut query = sqlx::query(&sql);
            for (i, transition) in chunk.iter().enumerate() {
                query = query
                    .bind(run.0)
                    .bind(int((chunk_index * ROWS_PER_INSERT + i) as u64))
                    .bind(transition.at_ms)
                    .bind(&transition.service)
                    .bind(&transition.breaker)
                    .bind(&transition.from)
                    .bind(&transition.to)
                    .bind(&transition.reason)
                    .bind(transition.detail.to_string())
                    .bind(transition.seq)
                    .bind(i64::from(transition.shadow));
            }
            query.execute(&mut *tx).await?;
        }

        let fault_columns = [
            "run_id",
            "ordinal",
            "at_ms",
            "event",
            "fault_id",
            "detail_json",
        ];
        for (chunk_index, chunk) in record.fault_events.chunks(ROWS_PER_INSERT).enumerate() {
            let sql = insert_sql("fault_events", &fault_columns, chunk.len());
            let mut query = sqlx::query(&sql);
            for (i, event) in chunk.iter().enumerate() {
                query = query
                    .bind(run.0)
                    .bind(int((chunk_index * ROWS_PER_INSERT + i) as u64))
                    .bind(event.at_ms)
                    .bind(&event.event)
                    .bind(&event.fault_id)
                    .bind(event.detail.to_string());
            }
            query.execute(&mut *tx).await?;
        }

        tx.commit().await?;
        Ok(())
    }

    /// Marks every `running` run of an experiment `interrupted` (a controller restarting after a
    /// crash); returns how many there were. Their data was never written.
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

    /// Plan positions of an experiment that have a finished run (what a resume skips).
    pub async fn finished_plan_indices(
        &self,
        experiment: ExperimentId,
    ) -> Result<Vec<usize>, StoreError> {
        let rows = sqlx::query(
            "SELECT plan_index FROM runs WHERE experiment_id = $1 AND status = 'finished' \
             ORDER BY plan_index",
        )
        .bind(experiment.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok(uint(row.try_get(0)?) as usize))
            .collect()
    }

    /// Plan positions of an experiment that have a terminal run — finished, or aborted by its stop
    /// condition (a verdict, see [`STOP_CONDITION_REASON`]) — in plan order: what a resume skips.
    /// Interrupted attempts and runs aborted for any other reason do not count.
    pub async fn terminal_plan_indices(
        &self,
        experiment: ExperimentId,
    ) -> Result<Vec<usize>, StoreError> {
        let rows = sqlx::query(
            "SELECT DISTINCT plan_index FROM runs WHERE experiment_id = $1 AND \
             (status = 'finished' OR (status = 'aborted' AND abort_reason LIKE $2)) \
             ORDER BY plan_index",
        )
        .bind(experiment.0)
        .bind(format!("{STOP_CONDITION_REASON}%"))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok(uint(row.try_get(0)?) as usize))
            .collect()
    }

    pub async fn experiments(&self) -> Result<Vec<ExperimentRow>, StoreError> {
        let rows = sqlx::query(&format!("{EXPERIMENT_SELECT} ORDER BY id"))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(experiment_of).collect()
    }

    pub async fn experiment(&self, id: ExperimentId) -> Result<Option<ExperimentRow>, StoreError> {
        let row = sqlx::query(&format!("{EXPERIMENT_SELECT} WHERE id = $1"))
            .bind(id.0)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(experiment_of).transpose()
    }

    /// Every run of an experiment (every attempt), in plan order.
    pub async fn runs(&self, experiment: ExperimentId) -> Result<Vec<RunRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, experiment_id, plan_index, round_index, condition_index, condition_label, \
             fault_kind, fault_rate, breaker_mode, condition_json, status, warmup_ms, duration_ms, \
             started_at_ms, finished_at_ms, abort_reason, requests, ok, failed, rejected, timeout, \
             connection_error, client_error, energy_joules, energy_source \
             FROM runs WHERE experiment_id = $1 ORDER BY plan_index, id",
        )
        .bind(experiment.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(run_of).collect()
    }

    pub async fn samples(&self, run: RunId) -> Result<Vec<SampleRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT second, warmup, ok, failed, rejected, timeout, connection_error, client_error, \
             cart_mean_items, carts, pool_in_flight, pool_queued, cpu_seconds, energy_joules, \
             extra_json FROM samples WHERE run_id = $1 ORDER BY second",
        )
        .bind(run.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let second: i64 = row.try_get("second")?;
                let extra: Option<String> = row.try_get("extra_json")?;
                Ok(SampleRow {
                    second,
                    warmup: row.try_get::<i64, _>("warmup")? != 0,
                    outcomes: outcomes_of(row)?,
                    collector: CollectorSample {
                        second: uint(second),
                        cart_mean_items: row.try_get("cart_mean_items")?,
                        carts: row.try_get::<Option<i64>, _>("carts")?.map(uint),
                        pool_in_flight: row.try_get::<Option<i64>, _>("pool_in_flight")?.map(uint),
                        pool_queued: row.try_get::<Option<i64>, _>("pool_queued")?.map(uint),
                        cpu_seconds: row.try_get("cpu_seconds")?,
                        energy_joules: row.try_get("energy_joules")?,
                        extra: extra.and_then(|text| serde_json::from_str(&text).ok()),
                    },
                })
            })
            .collect()
    }

    pub async fn endpoint_seconds(&self, run: RunId) -> Result<Vec<EndpointSecondRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT second, endpoint, ok, failed, rejected, timeout, connection_error, \
             client_error, p50_us, p95_us, p99_us, max_us, histogram \
             FROM endpoint_seconds WHERE run_id = $1 ORDER BY second, endpoint",
        )
        .bind(run.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(EndpointSecondRow {
                    second: row.try_get("second")?,
                    endpoint: row.try_get("endpoint")?,
                    outcomes: outcomes_of(row)?,
                    p50_us: row.try_get("p50_us")?,
                    p95_us: row.try_get("p95_us")?,
                    p99_us: row.try_get("p99_us")?,
                    max_us: row.try_get("max_us")?,
                    histogram_v2: row.try_get("histogram")?,
                })
            })
            .collect()
    }

    pub async fn endpoint_histograms(
        &self,
        run: RunId,
    ) -> Result<Vec<EndpointHistogramRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT endpoint, ok, failed, rejected, timeout, connection_error, client_error, \
             p50_us, p95_us, p99_us, max_us, mean_us, histogram, histogram_ok \
             FROM endpoint_histograms WHERE run_id = $1 ORDER BY endpoint",
        )
        .bind(run.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(EndpointHistogramRow {
                    endpoint: row.try_get("endpoint")?,
                    outcomes: outcomes_of(row)?,
                    p50_us: row.try_get("p50_us")?,
                    p95_us: row.try_get("p95_us")?,
                    p99_us: row.try_get("p99_us")?,
                    max_us: row.try_get("max_us")?,
                    mean_us: row.try_get("mean_us")?,
                    histogram_v2: row.try_get("histogram")?,
                    histogram_ok_v2: row.try_get("histogram_ok")?,
                })
            })
            .collect()
    }

    pub async fn transitions(&self, run: RunId) -> Result<Vec<TransitionRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT at_ms, service, breaker, from_state, to_state, reason, detail_json, seq, shadow \
             FROM transitions WHERE run_id = $1 ORDER BY ordinal",
        )
        .bind(run.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let detail: String = row.try_get("detail_json")?;
                Ok(TransitionRecord {
                    at_ms: row.try_get("at_ms")?,
                    service: row.try_get("service")?,
                    breaker: row.try_get("breaker")?,
                    from: row.try_get("from_state")?,
                    to: row.try_get("to_state")?,
                    reason: row.try_get("reason")?,
                    detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                    seq: row.try_get("seq")?,
                    shadow: row.try_get::<i64, _>("shadow")? != 0,
                })
            })
            .collect()
    }

    pub async fn fault_events(&self, run: RunId) -> Result<Vec<FaultEventRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT at_ms, event, fault_id, detail_json FROM fault_events WHERE run_id = $1 \
             ORDER BY ordinal",
        )
        .bind(run.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let detail: String = row.try_get("detail_json")?;
                Ok(FaultEventRecord {
                    at_ms: row.try_get("at_ms")?,
                    event: row.try_get("event")?,
                    fault_id: row.try_get("fault_id")?,
                    detail: serde_json::from_str(&detail).unwrap_or(serde_json::Value::Null),
                })
            })
            .collect()
    }

    /// The experiment marked `running` most recently (by start time) and its `running` run, if any:
    /// what an annotation written now is about.
    pub async fn running(&self) -> Result<Option<(ExperimentId, Option<RunId>)>, StoreError> {
        let row = sqlx::query(
            "SELECT e.id AS experiment_id, \
             (SELECT MAX(r.id) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'running') \
             AS run_id \
             FROM experiments e WHERE e.status = 'running' \
             ORDER BY COALESCE(e.started_at_ms, 0) DESC, e.id DESC LIMIT 1",
        )
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let run: Option<i64> = row.try_get("run_id")?;
        Ok(Some((
            ExperimentId(row.try_get("experiment_id")?),
            run.map(RunId),
        )))
    }

    /// Stores an annotation (text and author validated and trimmed, see [`annotation_text`]; a run
    /// must belong to the annotation's experiment) and returns it as stored. Nothing is written when
    /// a field is refused.
    pub async fn insert_annotation(
        &self,
        annotation: &NewAnnotation,
    ) -> Result<AnnotationRow, StoreError> {
        let text = annotation_text(&annotation.text)?;
        let author = annotation_author(annotation.author.as_deref())?;
        if let Some(run) = annotation.run_id {
            // A run never changes experiment, so checking before the insert is enough.
            let owner: Option<i64> = sqlx::query("SELECT experiment_id FROM runs WHERE id = $1")
                .bind(run.0)
                .fetch_optional(&self.pool)
                .await?
                .map(|row| row.try_get(0))
                .transpose()?;
            if owner.is_none() || owner != annotation.experiment_id.map(|id| id.0) {
                return Err(StoreError::Invalid {
                    field: "run_id",
                    message: format!("run {run} is not a run of the annotation's experiment"),
                });
            }
        }
        let row = sqlx::query(
            "INSERT INTO annotations (at_ms, text, author, experiment_id, run_id) \
             VALUES ($1, $2, $3, $4, $5) RETURNING id",
        )
        .bind(annotation.at_ms)
        .bind(&text)
        .bind(author.as_deref())
        .bind(annotation.experiment_id.map(|id| id.0))
        .bind(annotation.run_id.map(|id| id.0))
        .fetch_one(&self.pool)
        .await?;
        Ok(AnnotationRow {
            id: AnnotationId(row.try_get(0)?),
            at_ms: annotation.at_ms,
            text,
            author,
            experiment_id: annotation.experiment_id,
            run_id: annotation.run_id,
        })
    }

    /// An experiment's annotations, oldest first.
    pub async fn annotations(
        &self,
        experiment: ExperimentId,
    ) -> Result<Vec<AnnotationRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "{ANNOTATION_SELECT} WHERE experiment_id = $1 ORDER BY at_ms, id"
        ))
        .bind(experiment.0)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(annotation_of).collect()
    }

    /// The `limit` latest annotations of any experiment (or none), oldest first.
    pub async fn latest_annotations(&self, limit: usize) -> Result<Vec<AnnotationRow>, StoreError> {
        let rows = sqlx::query(&format!(
            "{ANNOTATION_SELECT} ORDER BY at_ms DESC, id DESC LIMIT $1"
        ))
        .bind(int(limit as u64))
        .fetch_all(&self.pool)
        .await?;
        let mut annotations = rows
            .iter()
            .map(annotation_of)
            .collect::<Result<Vec<_>, _>>()?;
        annotations.reverse();
        Ok(annotations)
    }
}

const ANNOTATION_SELECT: &str =
    "SELECT id, at_ms, text, author, experiment_id, run_id FROM annotations";

fn annotation_of(row: &AnyRow) -> Result<AnnotationRow, StoreError> {
    Ok(AnnotationRow {
        id: AnnotationId(row.try_get("id")?),
        at_ms: row.try_get("at_ms")?,
        text: row.try_get("text")?,
        author: row.try_get("author")?,
        experiment_id: row
            .try_get::<Option<i64>, _>("experiment_id")?
            .map(ExperimentId),
        run_id: row.try_get::<Option<i64>, _>("run_id")?.map(RunId),
    })
}

const EXPERIMENT_SELECT: &str = "SELECT id, name, spec_toml, seed, planned_runs, status, \
     created_at_ms, started_at_ms, finished_at_ms, abort_reason FROM experiments";

fn experiment_of(row: &AnyRow) -> Result<ExperimentRow, StoreError> {
    let status: String = row.try_get("status")?;
    Ok(ExperimentRow {
        id: ExperimentId(row.try_get("id")?),
        name: row.try_get("name")?,
        spec_toml: row.try_get("spec_toml")?,
        seed: row.try_get("seed")?,
        planned_runs: row.try_get("planned_runs")?,
        status: status_of(&status)?,
        created_at_ms: row.try_get("created_at_ms")?,
        started_at_ms: row.try_get("started_at_ms")?,
        finished_at_ms: row.try_get("finished_at_ms")?,
        abort_reason: row.try_get("abort_reason")?,
    })
}

fn run_of(row: &AnyRow) -> Result<RunRow, StoreError> {
    let status: String = row.try_get("status")?;
    let requests: Option<i64> = row.try_get("requests")?;
    let outcomes = match requests {
        Some(_) => Some(outcomes_of(row)?),
        None => None,
    };
    let energy_joules: Option<f64> = row.try_get("energy_joules")?;
    let energy_source: Option<String> = row.try_get("energy_source")?;
    let energy = match (energy_joules, energy_source.as_deref()) {
        (Some(joules), Some("measured")) => Some((joules, EnergySource::Measured)),
        (Some(joules), Some("modelled")) => Some((joules, EnergySource::Modelled)),
        _ => None,
    };
    Ok(RunRow {
        id: RunId(row.try_get("id")?),
        experiment_id: ExperimentId(row.try_get("experiment_id")?),
        plan_index: row.try_get("plan_index")?,
        round_index: row.try_get("round_index")?,
        condition_index: row.try_get("condition_index")?,
        condition_label: row.try_get("condition_label")?,
        fault_kind: row.try_get("fault_kind")?,
        fault_rate: row.try_get("fault_rate")?,
        breaker_mode: row.try_get("breaker_mode")?,
        condition_json: row.try_get("condition_json")?,
        status: status_of(&status)?,
        warmup_ms: row.try_get("warmup_ms")?,
        duration_ms: row.try_get("duration_ms")?,
        started_at_ms: row.try_get("started_at_ms")?,
        finished_at_ms: row.try_get("finished_at_ms")?,
        abort_reason: row.try_get("abort_reason")?,
        outcomes,
        energy,
    })
}
