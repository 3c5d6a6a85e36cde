//! Schema migrations, embedded from `migrations/{sqlite,postgres}/` at the repository root.
//!
//! The two flavours differ only in id generation and the blob type name; everything else (queries
//! included) is shared. They are embedded with `include_str!` and handed to sqlx's `Migrator`
//! through a `MigrationSource`, so the binary needs no migration files at run time and the build
//! needs no database.
//!
//! On SQLite they run with foreign-key enforcement off ([`run`]): a migration that rebuilds a table (SQLite's
//! only way to change a constraint) drops the old one, and under enforcement that drop deletes every row
//! referring to it through `ON DELETE CASCADE`. The pragma is a no-op inside a transaction, and sqlx runs each
//! SQLite migration in one (0.8 honours `-- no-transaction` on PostgreSQL only), so it is set on the
//! connection before the migrator takes it; a rebuilding migration checks it is off and ends with
//! `pragma_foreign_key_check`.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;

use sqlx::AnyPool;
use sqlx::error::BoxDynError;
use sqlx::migrate::{MigrateError, Migration, MigrationSource, MigrationType, Migrator};

/// Which SQL flavour a database speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// (version, description, SQLite text, PostgreSQL text), in order.
pub const MIGRATIONS: &[(i64, &str, &str, &str)] = &[
    (
        1,
        "initial",
        include_str!("../../../migrations/sqlite/0001_initial.sql"),
        include_str!("../../../migrations/postgres/0001_initial.sql"),
    ),
    (
        2,
        "annotations",
        include_str!("../../../migrations/sqlite/0002_annotations.sql"),
        include_str!("../../../migrations/postgres/0002_annotations.sql"),
    ),
    (
        3,
        "scheduled starts",
        include_str!("../../../migrations/sqlite/0003_scheduled_starts.sql"),
        include_str!("../../../migrations/postgres/0003_scheduled_starts.sql"),
    ),
    (
        4,
        "transition source",
        include_str!("../../../migrations/sqlite/0004_transition_source.sql"),
        include_str!("../../../migrations/postgres/0004_transition_source.sql"),
    ),
    (
        5,
        "predictions",
        include_str!("../../../migrations/sqlite/0005_predictions.sql"),
        include_str!("../../../migrations/postgres/0005_predictions.sql"),
    ),
    (
        6,
        "containers",
        include_str!("../../../migrations/sqlite/0006_containers.sql"),
        include_str!("../../../migrations/postgres/0006_containers.sql"),
    ),
    (
        7,
        "endpoint seconds split by outcome",
        include_str!("../../../migrations/sqlite/0007_endpoint_seconds_split.sql"),
        include_str!("../../../migrations/postgres/0007_endpoint_seconds_split.sql"),
    ),
    (
        8,
        "load errors",
        include_str!("../../../migrations/sqlite/0008_load_errors.sql"),
        include_str!("../../../migrations/postgres/0008_load_errors.sql"),
    ),
    (
        9,
        "run sources",
        include_str!("../../../migrations/sqlite/0009_run_sources.sql"),
        include_str!("../../../migrations/postgres/0009_run_sources.sql"),
    ),
    (
        10,
        "run status failed and degraded",
        include_str!("../../../migrations/sqlite/0010_run_status_failed_degraded.sql"),
        include_str!("../../../migrations/postgres/0010_run_status_failed_degraded.sql"),
    ),
];

/// The embedded migrations of one backend, up to and including `through` (a version).
#[derive(Debug)]
struct Embedded {
    backend: Backend,
    through: i64,
}

impl<'s> MigrationSource<'s> for Embedded {
    fn resolve(
        self,
    ) -> Pin<Box<dyn Future<Output = Result<Vec<Migration>, BoxDynError>> + Send + 's>> {
        let Embedded { backend, through } = self;
        Box::pin(async move {
            Ok(MIGRATIONS
                .iter()
                .filter(|(version, ..)| *version <= through)
                .map(|(version, description, sqlite, postgres)| {
                    let sql = match backend {
                        Backend::Sqlite => sqlite,
                        Backend::Postgres => postgres,
                    };
                    Migration::new(
                        *version,
                        Cow::Borrowed(*description),
                        MigrationType::Simple,
                        Cow::Borrowed(*sql),
                        false,
                    )
                })
                .collect())
        })
    }
}

/// The migrator for one backend.
pub async fn migrator(backend: Backend) -> Result<Migrator, sqlx::migrate::MigrateError> {
    Migrator::new(Embedded {
        backend,
        through: i64::MAX,
    })
    .await
}

/// Brings the schema of `pool`'s database up to date with `migrator` (a database error said as the migration's
/// `Execute`, so this module needs nothing of the store's). On SQLite every migration runs on one
/// connection with foreign-key enforcement off (see the module's text), turned on again afterwards whether the
/// migrations succeeded or not; a connection where that fails is closed rather than handed back to the pool.
pub(super) async fn run(
    migrator: &Migrator,
    pool: &AnyPool,
    backend: Backend,
) -> Result<(), MigrateError> {
    if backend == Backend::Postgres {
        return migrator.run(pool).await;
    }
    let mut connection = pool.acquire().await?;
    sqlx::query("PRAGMA foreign_keys = OFF")
        .execute(&mut *connection)
        .await?;
    // `run_direct`: `run` over `&mut AnyConnection` makes callers' futures "not general enough" to be Send.
    let migrated = migrator.run_direct(&mut *connection).await;
    let enforced = sqlx::query("PRAGMA foreign_keys = ON")
        .execute(&mut *connection)
        .await;
    if enforced.is_err() {
        let _ = connection.detach();
    }
    migrated?;
    enforced?;
    Ok(())
}

/// The migrator for one backend that stops after version `through` (tests of later migrations).
#[cfg(test)]
pub(super) async fn migrator_through(
    backend: Backend,
    through: i64,
) -> Result<Migrator, sqlx::migrate::MigrateError> {
    Migrator::new(Embedded { backend, through }).await
}
