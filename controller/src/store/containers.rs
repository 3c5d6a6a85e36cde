//! Container faults with their leases (who applied them, until when, whether undone) and per-container
//! samples of a run.

use sqlx::Row;
use sqlx::any::AnyRow;

use super::{RunId, Store, StoreError};

/// One container fault as recorded before it is applied.
#[derive(Debug, Clone, PartialEq)]
pub struct NewContainerFault {
    pub container_id: String,
    pub container_name: String,
    pub service: String,
    /// The action as JSON (what its undo needs included).
    pub action: String,
    /// Which controller applied it (host, process, instance).
    pub owner: String,
    pub run_id: Option<RunId>,
    pub started_ms: i64,
    pub until_ms: i64,
}

/// A stored container fault.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerFaultRow {
    pub id: i64,
    pub fault: NewContainerFault,
    /// When it was undone (`None`: still in force).
    pub undone_ms: Option<i64>,
    /// Why the undo failed, when it did (the fault is then no longer retried).
    pub undo_error: Option<String>,
}

/// One container's second of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSampleRecord {
    /// Seconds since the run's sampling started (1 = the first second).
    pub second: u32,
    pub container: String,
    pub service: String,
    pub replica: u32,
    /// CPU time the container used in that second.
    pub cpu_seconds: f64,
    pub memory_bytes: u64,
    /// Bytes received and sent in that second, over every network.
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    /// Modelled: the machine's modelled power at the stack's utilisation × this container's share of it.
    pub energy_joules: f64,
}

const FAULT_COLUMNS: &str = "id, container_id, container_name, service, action, owner, run_id, \
                             started_ms, until_ms, undone_ms, undo_error";

fn fault_of(row: &AnyRow) -> Result<ContainerFaultRow, StoreError> {
    Ok(ContainerFaultRow {
        id: row.try_get(0)?,
        fault: NewContainerFault {
            container_id: row.try_get(1)?,
            container_name: row.try_get(2)?,
            service: row.try_get(3)?,
            action: row.try_get(4)?,
            owner: row.try_get(5)?,
            run_id: row.try_get::<Option<i64>, _>(6)?.map(RunId),
            started_ms: row.try_get(7)?,
            until_ms: row.try_get(8)?,
        },
        undone_ms: row.try_get(9)?,
        undo_error: row.try_get(10)?,
    })
}

fn to_i64(field: &'static str, value: u64) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::Invalid {
        field,
        message: format!("{value} does not fit a signed 64-bit column"),
    })
}

impl Store {
    /// Records a container fault before it is applied; returns its id.
    pub async fn insert_container_fault(
        &self,
        fault: &NewContainerFault,
    ) -> Result<i64, StoreError> {
        if fault.until_ms < fault.started_ms {
            return Err(StoreError::Invalid {
                field: "until_ms",
                message: "a lease cannot end before it starts".into(),
            });
        }
        let row = sqlx::query(
            "INSERT INTO container_faults (container_id, container_name, service, action, owner, run_id, \
             started_ms, until_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
        )
        .bind(&fault.container_id)
        .bind(&fault.container_name)
        .bind(&fault.service)
        .bind(&fault.action)
        .bind(&fault.owner)
        .bind(fault.run_id.map(|id| id.0))
        .bind(fault.started_ms)
        .bind(fault.until_ms)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get(0)?)
    }

    /// Moves the end of a fault's lease (a renewal); a fault undone already is left alone.
    pub async fn renew_container_fault(&self, id: i64, until_ms: i64) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE container_faults SET until_ms = $1 WHERE id = $2 AND undone_ms IS NULL",
        )
        .bind(until_ms)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a fault undone at `undone_ms` (with the reason when the undo failed). Returns whether this
    /// call did it (false: it was undone already, e.g. by another controller's sweep).
    pub async fn finish_container_fault(
        &self,
        id: i64,
        undone_ms: i64,
        undo_error: Option<&str>,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE container_faults SET undone_ms = $1, undo_error = $2 WHERE id = $3 AND undone_ms IS NULL",
        )
        .bind(undone_ms)
        .bind(undo_error)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// One fault by id.
    pub async fn container_fault(&self, id: i64) -> Result<Option<ContainerFaultRow>, StoreError> {
        self.row_by(
            &format!("SELECT {FAULT_COLUMNS} FROM container_faults WHERE id = $1"),
            id,
            fault_of,
        )
        .await
    }

    /// Faults still in force, oldest first; with `expired_by`, only those whose lease ended by then.
    pub async fn pending_container_faults(
        &self,
        expired_by: Option<i64>,
    ) -> Result<Vec<ContainerFaultRow>, StoreError> {
        self.rows_by(
            &format!(
                "SELECT {FAULT_COLUMNS} FROM container_faults WHERE undone_ms IS NULL AND until_ms <= $1 \
                 ORDER BY id"
            ),
            expired_by.unwrap_or(i64::MAX),
            fault_of,
        )
        .await
    }

    /// Every container fault of a run, oldest first.
    pub async fn container_faults_of_run(
        &self,
        run: RunId,
    ) -> Result<Vec<ContainerFaultRow>, StoreError> {
        self.rows_by(
            &format!("SELECT {FAULT_COLUMNS} FROM container_faults WHERE run_id = $1 ORDER BY id"),
            run.0,
            fault_of,
        )
        .await
    }

    /// Stores a run's per-container samples in one transaction.
    pub async fn insert_container_samples(
        &self,
        run: RunId,
        samples: &[ContainerSampleRecord],
    ) -> Result<(), StoreError> {
        let mut transaction = self.pool.begin().await?;
        for sample in samples {
            sqlx::query(
                "INSERT INTO container_samples (run_id, second, container, service, replica, cpu_seconds, \
                 memory_bytes, rx_bytes, tx_bytes, energy_joules) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(run.0)
            .bind(i64::from(sample.second))
            .bind(&sample.container)
            .bind(&sample.service)
            .bind(i64::from(sample.replica))
            .bind(sample.cpu_seconds)
            .bind(to_i64("memory_bytes", sample.memory_bytes)?)
            .bind(to_i64("rx_bytes", sample.rx_bytes)?)
            .bind(to_i64("tx_bytes", sample.tx_bytes)?)
            .bind(sample.energy_joules)
            .execute(&mut *transaction)
            .await?;
        }
        transaction.commit().await?;
        Ok(())
    }

    /// A run's per-container samples, by second then container.
    pub async fn container_samples(
        &self,
        run: RunId,
    ) -> Result<Vec<ContainerSampleRecord>, StoreError> {
        let rows = sqlx::query(
            "SELECT second, container, service, replica, cpu_seconds, memory_bytes, rx_bytes, tx_bytes, \
             energy_joules FROM container_samples WHERE run_id = $1 ORDER BY second, container",
        )
        .bind(run.0)
        .fetch_all(&self.pool)
        .await?;
        let unsigned = |column: &'static str, value: i64| {
            u64::try_from(value).map_err(|_| StoreError::Corrupt {
                column,
                value: value.to_string(),
            })
        };
        rows.iter()
            .map(|row| {
                let second: i64 = row.try_get(0)?;
                let replica: i64 = row.try_get(3)?;
                Ok(ContainerSampleRecord {
                    second: u32::try_from(second).map_err(|_| StoreError::Corrupt {
                        column: "container_samples.second",
                        value: second.to_string(),
                    })?,
                    container: row.try_get(1)?,
                    service: row.try_get(2)?,
                    replica: u32::try_from(replica).map_err(|_| StoreError::Corrupt {
                        column: "container_samples.replica",
                        value: replica.to_string(),
                    })?,
                    cpu_seconds: row.try_get(4)?,
                    memory_bytes: unsigned("container_samples.memory_bytes", row.try_get(5)?)?,
                    rx_bytes: unsigned("container_samples.rx_bytes", row.try_get(6)?)?,
                    tx_bytes: unsigned("container_samples.tx_bytes", row.try_get(7)?)?,
                    energy_joules: row.try_get(8)?,
                })
            })
            .collect()
    }
}
