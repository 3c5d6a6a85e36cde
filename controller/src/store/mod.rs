//! Storage: experiments, runs and everything a run saw, in SQLite (one file, WAL; the default) or
//! PostgreSQL (by URL), with the same code.
//!
//! The same SQL runs on both through sqlx's `Any` driver: `$n` placeholders (SQLite accepts them),
//! BIGINT / DOUBLE PRECISION / TEXT columns, times as Unix milliseconds and flags as 0/1 integers,
//! because `Any` carries only integers, floats, text and bytes. Only the migrations differ (see
//! [`migrations`]). A run's rows are written in one transaction when it ends, so a run is either
//! absent, `running` (no rows yet), or complete.
//!
//! [`writing`] holds what changes the database, [`reading`] what reads it back (a stored value that
//! does not decode is [`StoreError::Corrupt`]), both through [`columns`] (each per-run table's columns, listed
//! once), [`run_events`] a run's event log and how each entry is stored, [`annotations`] the game-day notes, [`schedule`] the queue of scheduled starts, [`containers`] the
//! container faults' leases and per-container samples, [`run_sources`] how well each foreign source was seen.

mod annotations;
mod columns;
mod containers;
mod migrations;
mod predictions;
mod reading;
mod records;
mod run_events;
mod run_sources;
mod schedule;
#[cfg(test)]
pub(crate) mod tests;
mod writing;

use std::time::Duration;

use sqlx::AnyPool;
use sqlx::any::{AnyPoolOptions, AnyRow};

pub use annotations::{annotation_author, annotation_text};
pub use containers::{ContainerFaultRow, ContainerSampleRecord, NewContainerFault};
pub use migrations::{Backend, MIGRATIONS};
pub use records::{
    AnnotationId, AnnotationRow, CollectorSample, EndpointHistogramRow, EndpointSecondRow,
    EnergySource, ExperimentId, ExperimentRow, MAX_ANNOTATION_CHARS, MAX_AUTHOR_CHARS,
    NewAnnotation, RunId, RunRecord, RunRow, SampleRow, Status, StoredLatency, TransitionRecord,
};
pub use records::{AppliedPeriod, STOP_CONDITION_REASON, applied_periods};
pub use run_events::{
    AgentReport, BreakerHoldFailure, FaultCall, ProbeBucketsRead, PutFault, ReplicaEvent,
    ReplicaGone, ReplicaReplacement, ReplicaSeen, ReplicaStream, ReplicaStreamFailed, RunEvent,
    RunEventKind, RunEventRecord,
};

/// Default database: a SQLite file in the working directory.
pub const DEFAULT_DATABASE: &str = "tolerant.db";

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
    #[error("run {0}: status {1:?} is not how a run ends (finished, aborted, failed or degraded)")]
    NotAnEnd(RunId, Status),
    #[error(
        "experiment {0}: status {1:?} is a run's, never an experiment's (a failed run aborts it)"
    )]
    NotAnExperimentStatus(ExperimentId, Status),
    #[error("stored value `{value}` in {column} is not valid")]
    Corrupt { column: &'static str, value: String },
    /// A value handed in to be stored is not acceptable; `field` names it.
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
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

/// How many times a step of opening a SQLite file is run when another process opens it at the same time.
const SQLITE_OPEN_ATTEMPTS: u32 = 5;
/// The pause between two of those attempts.
const SQLITE_OPEN_PAUSE: Duration = Duration::from_millis(100);

/// Runs `step`, and on SQLite runs it again after [`SQLITE_OPEN_PAUSE`] while it fails, up to
/// [`SQLITE_OPEN_ATTEMPTS`] times in all; the last error is returned. On PostgreSQL it runs once.
async fn again_on_sqlite<T, E, Step, Attempt>(
    backend: Backend,
    what: &str,
    mut step: Step,
) -> Result<T, E>
where
    E: std::fmt::Display,
    Step: FnMut() -> Attempt,
    Attempt: std::future::Future<Output = Result<T, E>>,
{
    let mut attempt = 1;
    loop {
        match step().await {
            Ok(value) => return Ok(value),
            Err(error) if backend == Backend::Sqlite && attempt < SQLITE_OPEN_ATTEMPTS => {
                tracing::debug!(%error, attempt, "{what} alongside another process; again");
                attempt += 1;
                tokio::time::sleep(SQLITE_OPEN_PAUSE).await;
            }
            Err(error) => return Err(error),
        }
    }
}

impl Store {
    /// Runs the query `sql` with `key` bound as `$1` and reads every row it returns with `read`.
    async fn rows_by<T>(
        &self,
        sql: &str,
        key: i64,
        read: impl Fn(&AnyRow) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let rows = sqlx::query(sql).bind(key).fetch_all(&self.pool).await?;
        rows.iter().map(read).collect()
    }

    /// Runs the query `sql` with `key` bound as `$1` and reads the row it returns, if any, with `read`.
    async fn row_by<T>(
        &self,
        sql: &str,
        key: i64,
        read: impl Fn(&AnyRow) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let row = sqlx::query(sql)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(read).transpose()
    }
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

/// The connections of a SQLite store's pool, all opened at once and kept.
const SQLITE_CONNECTIONS: u32 = 4;

impl Store {
    /// Opens (creating if needed) the database at `location` — a file path, `sqlite://…` or
    /// `postgres://…` — and brings its schema up to date.
    pub async fn open(location: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let (url, backend) = database_url(location)?;
        let connections = match backend {
            Backend::Sqlite => SQLITE_CONNECTIONS,
            Backend::Postgres => 8,
        };
        let mut options = AnyPoolOptions::new().max_connections(connections);
        if backend == Backend::Sqlite {
            // A SQLite connection is a few file descriptors on a local file: all of them are opened at once and
            // kept, never reaped when idle, so a long-running dashboard or controller holds a constant number of
            // descriptors (the soak's criterion) instead of one that follows the pool's demand.
            options = options
                .min_connections(SQLITE_CONNECTIONS)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        let pool = options.connect(&url).await?;
        // Two processes opening one new SQLite file at once contend for it: switching it to WAL can answer
        // "database is locked" without waiting, and sqlx's migration lock is a no-op on SQLite, so the later
        // may find a table the other has just created. Both steps are repeatable (each migration commits with
        // its version recorded, so a second pass applies only what is still missing): on SQLite they are run
        // again after a pause.
        if backend == Backend::Sqlite {
            // Persistent in the file: readers (the dashboard) never block the writer.
            again_on_sqlite(backend, "switching to WAL", || {
                sqlx::query("PRAGMA journal_mode = WAL").fetch_optional(&pool)
            })
            .await?;
        }
        let migrator = migrations::migrator(backend).await?;
        again_on_sqlite(backend, "migrating", || {
            migrations::run(&migrator, &pool, backend)
        })
        .await?;
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
}
