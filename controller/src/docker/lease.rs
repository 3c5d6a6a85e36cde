//! Container faults under leases, with the same semantics as the agent's: a fault is undone when its lease
//! runs out, on abort, on halt, and when a restarted controller finds one it left behind.
//!
//! Where the lease lives: a running container's labels cannot be changed, so who applied a fault and until
//! when is written to the experiment database (`container_faults`) *before* the engine is asked to apply it.
//! A renewal moves `until_ms`; an undo sets `undone_ms`. Every controller on the database runs a sweep
//! once a second that undoes each fault whose lease has ended, whoever applied it: a controller that was
//! killed stops renewing, so its faults are undone by the next controller to start (or by any other one
//! running) as soon as their leases end. Recording first means a crash between the two steps leaves at worst
//! a row whose undo finds the container already as it was, which counts as undone.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;
use tokio::task::JoinHandle;

use super::{ContainerAction, DockerError, Engine, StackContainer};
use crate::clock::now_ms;
use crate::store::{ContainerFaultRow, NewContainerFault, RunId, Store};

/// Shortest lease a container fault may have.
pub const MIN_LEASE: Duration = Duration::from_secs(1);
/// Longest lease a container fault may have (as the agent's default maximum).
pub const MAX_LEASE: Duration = Duration::from_secs(600);

/// Applies, renews and undoes container faults, recording each in the store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ContainerLeases {
    engine: Engine,
    store: Store,
    owner: Arc<str>,
}

/// `host/pid/random`: tells which controller applied a fault (a container fault's record, a pod fault's annotation).
pub fn owner_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown-host".to_owned());
    let instance: u32 = rand::rng().random();
    format!("{host}/{}/{instance:08x}", std::process::id())
}

fn lease_ms(lease: Duration) -> Result<i64, DockerError> {
    checked_lease_ms(lease).map_err(|message| DockerError::Invalid {
        field: "lease".into(),
        message,
    })
}

/// A lease's length in ms when it is within [`MIN_LEASE`]..=[`MAX_LEASE`] (a container's, a pod's), else why
/// not.
pub fn checked_lease_ms(lease: Duration) -> Result<i64, String> {
    if lease < MIN_LEASE || lease > MAX_LEASE {
        return Err(format!(
            "{} is outside {}..={}",
            humantime::format_duration(lease),
            humantime::format_duration(MIN_LEASE),
            humantime::format_duration(MAX_LEASE)
        ));
    }
    Ok(lease.as_millis() as i64)
}

impl ContainerLeases {
    pub fn new(engine: Engine, store: Store) -> Self {
        ContainerLeases {
            engine,
            store,
            owner: owner_name().into(),
        }
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Which controller this is, as recorded with its faults.
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// Records, then applies `action` to `container` for `lease` from `now_ms`. Returns the fault's id. When
    /// the engine refuses, the record is closed with the reason and the error returned.
    pub async fn inject(
        &self,
        container: &StackContainer,
        action: &ContainerAction,
        lease: Duration,
        run: Option<RunId>,
        now_ms: i64,
    ) -> Result<i64, DockerError> {
        let lease = lease_ms(lease)?;
        let recorded = self.engine.prepare(&container.id, action).await?;
        let json = serde_json::to_string(&recorded).map_err(|error| DockerError::Invalid {
            field: "action".into(),
            message: error.to_string(),
        })?;
        let id = self
            .store
            .insert_container_fault(&NewContainerFault {
                container_id: container.id.clone(),
                container_name: container.name.clone(),
                service: container.service.clone(),
                action: json,
                owner: self.owner.to_string(),
                run_id: run,
                started_ms: now_ms,
                until_ms: now_ms.saturating_add(lease),
            })
            .await?;
        if let Err(error) = self.engine.apply(&container.id, &recorded).await {
            self.store
                .finish_container_fault(id, now_ms, Some(&error.to_string()))
                .await?;
            return Err(error);
        }
        tracing::info!(
            container = %container.name,
            action = recorded.name(),
            lease_ms = lease,
            "container fault applied"
        );
        Ok(id)
    }

    /// Extends fault `id`'s lease to `lease` from `now_ms`.
    pub async fn renew(&self, id: i64, lease: Duration, now_ms: i64) -> Result<(), DockerError> {
        let lease = lease_ms(lease)?;
        self.store
            .renew_container_fault(id, now_ms.saturating_add(lease))
            .await?;
        Ok(())
    }

    /// Undoes fault `id` now (abort, or the end of the run it belonged to). False when it was undone already.
    pub async fn undo(&self, id: i64, now_ms: i64) -> Result<bool, DockerError> {
        match self.store.container_fault(id).await? {
            Some(row) if row.undone_ms.is_none() => self.undo_row(&row, now_ms).await,
            _ => Ok(false),
        }
    }

    /// Undoes every fault still in force, whoever applied it (halt). Returns how many this call undid.
    pub async fn undo_all(&self, now_ms: i64) -> Result<usize, DockerError> {
        self.undo_pending(None, now_ms).await
    }

    /// Undoes every fault whose lease ended by `now_ms`, whoever applied it. Returns how many.
    pub async fn sweep(&self, now_ms: i64) -> Result<usize, DockerError> {
        self.undo_pending(Some(now_ms), now_ms).await
    }

    async fn undo_pending(
        &self,
        expired_by: Option<i64>,
        now_ms: i64,
    ) -> Result<usize, DockerError> {
        let mut undone = 0;
        for row in self.store.pending_container_faults(expired_by).await? {
            if self.undo_row(&row, now_ms).await? {
                undone += 1;
            }
        }
        Ok(undone)
    }

    /// Undoes one recorded fault and closes its record (with the reason when the engine refused: a fault
    /// whose undo failed is not retried forever, it is reported). True when this call closed it.
    async fn undo_row(&self, row: &ContainerFaultRow, now_ms: i64) -> Result<bool, DockerError> {
        let outcome = match serde_json::from_str::<ContainerAction>(&row.fault.action) {
            Ok(action) => self.engine.undo(&row.fault.container_id, &action).await,
            Err(error) => Err(DockerError::Invalid {
                field: "container_faults.action".into(),
                message: error.to_string(),
            }),
        };
        let error = outcome.err().map(|error| error.to_string());
        match &error {
            None => tracing::info!(
                container = %row.fault.container_name,
                owner = %row.fault.owner,
                "container fault undone"
            ),
            Some(error) => tracing::warn!(
                container = %row.fault.container_name,
                %error,
                "container fault could not be undone"
            ),
        }
        Ok(self
            .store
            .finish_container_fault(row.id, now_ms, error.as_deref())
            .await?)
    }

    /// Sweeps once a `period` (the first sweep at once: faults a killed controller left behind whose lease
    /// has ended are undone at start-up). Abort the handle to stop it.
    pub fn spawn_watchdog(&self, period: Duration) -> JoinHandle<()> {
        let leases = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                if let Err(error) = leases.sweep(now_ms()).await {
                    tracing::warn!(%error, "container fault sweep failed");
                }
            }
        })
    }
}
