//! Game-day container faults on the compose project the dashboard reaches: applied through the controller's
//! [`controller::docker::ContainerLeases`] (recorded in the store first, so the once-a-second sweep undoes
//! them whoever applied them), said live as fault changes, undone when their lease ends, on request and on
//! halt. The running experiment's run, if any, is recorded with them. And once a second, each container's
//! CPU, memory, network and modelled power for the live page's per-container panel.

use std::time::Duration;

use controller::docker::discovery::replica_of_container;
use controller::docker::{
    ContainerAction, ContainerLeases, DockerError, StackContainer, StatsSampler, Watched,
};
use controller::lease::ContainerStack;
use controller::store::{ContainerSampleRecord, RunId};
use controller::target::replica_label;

use super::EmbeddedOperations;
use crate::hub::{ContainerStats, ContainerUse, FaultChange, FaultChangeEvent, LiveEvent};
use crate::operations::{ContainerFaultRequest, ContainerLine, NO_ENGINE, OperationError};
use controller::clock::now_ms;

/// The container this dashboard runs in, if it runs in one of the project's (its hostname is its id): left out
/// of what the game day may break, since a paused or stopped controller could not undo its own fault.
fn is_own_container(container: &StackContainer) -> bool {
    static HOSTNAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let hostname = HOSTNAME.get_or_init(|| {
        std::fs::read_to_string("/etc/hostname")
            .map(|name| name.trim().to_owned())
            .unwrap_or_default()
    });
    hostname.len() >= 12 && container.id.starts_with(hostname.as_str())
}

/// The live fault id of container fault `id` (as runs record theirs).
pub fn fault_id(id: i64) -> String {
    format!("container-{id}")
}

/// The engine refused or could not do it: a field the request got wrong stays a 400 naming it; what the
/// container cannot take (capability, image, kernel) is a conflict saying so; the rest is a failure behind
/// the dashboard.
fn engine_failed(error: DockerError) -> OperationError {
    match error {
        DockerError::Invalid { .. } | DockerError::NoSuchService { .. } => {
            OperationError::Invalid(error.to_string())
        }
        DockerError::Unsupported { .. } => OperationError::Conflict(error.to_string()),
        other => OperationError::Failed(other.to_string()),
    }
}

fn change(
    event: FaultChangeEvent,
    id: i64,
    replica: &str,
    action: Option<&ContainerAction>,
) -> FaultChange {
    FaultChange {
        at_ms: now_ms() as u64,
        event,
        fault_id: fault_id(id),
        target: replica.to_owned(),
        kind: action
            .map(|action| action.name().to_owned())
            .unwrap_or_default(),
        rate: if event == FaultChangeEvent::Applied {
            1.0
        } else {
            0.0
        },
        detail: action.map(ContainerAction::detail).unwrap_or_default(),
        matches: "the whole container".into(),
        expires_at_ms: None,
    }
}

impl EmbeddedOperations {
    fn leases(&self) -> Result<(&ContainerLeases, &ContainerStack), OperationError> {
        self.inner
            .containers
            .as_ref()
            .map(|stack| (&stack.leases, stack))
            .ok_or_else(|| OperationError::Conflict(NO_ENGINE.into()))
    }

    pub(super) async fn container_lines(
        &self,
    ) -> Result<Option<Vec<ContainerLine>>, OperationError> {
        let Some(stack) = &self.inner.containers else {
            return Ok(self.pod_lines());
        };
        let containers = stack.containers().await.map_err(engine_failed)?;
        Ok(Some(
            containers
                .into_iter()
                .filter(|container| !is_own_container(container))
                .map(|container| ContainerLine {
                    replica: container.replica(),
                    service: container.service,
                    name: container.name,
                    state: container.state,
                })
                .collect(),
        ))
    }

    pub(super) async fn apply_container_fault(
        &self,
        request: ContainerFaultRequest,
    ) -> Result<i64, OperationError> {
        if let Some(pods) = &self.inner.orchestrator.pods {
            return self.apply_pod_fault(pods, request).await;
        }
        let (leases, stack) = self.leases()?;
        let containers = stack.containers().await.map_err(engine_failed)?;
        let container = containers
            .iter()
            .find(|container| container.replica() == request.replica)
            .ok_or_else(|| {
                OperationError::Invalid(format!(
                    "container: {} has no `{}` (one of {})",
                    stack.deployment,
                    request.replica,
                    containers
                        .iter()
                        .map(|container| container.replica())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        let run = self.active_run().await;
        let started = now_ms();
        let id = leases
            .inject(container, &request.action, request.lease, run, started)
            .await
            .map_err(engine_failed)?;
        let until = started.saturating_add(request.lease.as_millis() as i64);
        self.inner.hub.publish(LiveEvent::Fault(FaultChange {
            expires_at_ms: Some(until as u64),
            ..change(
                FaultChangeEvent::Applied,
                id,
                &request.replica,
                Some(&request.action),
            )
        }));
        // At the lease's end the fault is undone here (or was by the sweep already) and said live.
        let operations = self.clone();
        let (replica, action, lease) = (request.replica, request.action, request.lease);
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(lease).await;
            operations
                .expire_container_fault(id, &replica, &action)
                .await;
        });
        self.inner
            .container_faults
            .lock()
            .insert(id, expiry.abort_handle());
        Ok(id)
    }

    /// Undoes fault `id` at the end of its lease (whoever undoes it first) and says it expired.
    async fn expire_container_fault(&self, id: i64, replica: &str, action: &ContainerAction) {
        self.inner.container_faults.lock().remove(&id);
        if let Ok((leases, _)) = self.leases()
            && let Err(error) = leases.undo(id, now_ms()).await
        {
            tracing::warn!(%error, id, "undoing a game-day container fault");
        }
        self.inner.hub.publish(LiveEvent::Fault(change(
            FaultChangeEvent::Expired,
            id,
            replica,
            Some(action),
        )));
    }

    pub(super) async fn remove_container_fault(&self, id: i64) -> Result<(), OperationError> {
        if self.inner.orchestrator.pods.is_some() {
            return self.remove_pod_fault(id).await;
        }
        let (leases, _) = self.leases()?;
        let row = self
            .inner
            .store
            .container_fault(id)
            .await
            .map_err(super::store_failed)?
            .ok_or_else(|| OperationError::Invalid(format!("id: no container fault {id}")))?;
        if let Some(expiry) = self.inner.container_faults.lock().remove(&id) {
            expiry.abort();
        }
        let undone = leases.undo(id, now_ms()).await.map_err(engine_failed)?;
        let action = serde_json::from_str::<ContainerAction>(&row.fault.action).ok();
        let replica = replica_of_container(&row.fault.service, &row.fault.container_name);
        if undone {
            self.inner.hub.publish(LiveEvent::Fault(change(
                FaultChangeEvent::Removed,
                id,
                &replica,
                action.as_ref(),
            )));
        }
        Ok(())
    }

    /// Forgets every game-day container fault's expiry (halt undid them all).
    pub(super) fn forget_container_faults(&self) {
        for (_, expiry) in std::mem::take(&mut *self.inner.container_faults.lock()) {
            expiry.abort();
        }
    }

    /// The run of the running experiment, if one runs now.
    async fn active_run(&self) -> Option<RunId> {
        self.inner.store.running().await.ok().flatten()?.1
    }
}

/// How often the live panel's containers are read.
const LIVE_PERIOD: Duration = Duration::from_secs(1);
/// How often the list of containers is read again (replicas come and go).
const RELIST_EVERY: u32 = 10;

/// One second of samples as the live panel shows them: rates over `elapsed`.
pub fn uses_of(samples: &[ContainerSampleRecord], elapsed: Duration) -> Vec<ContainerUse> {
    let seconds = elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    samples
        .iter()
        .map(|sample| ContainerUse {
            replica: replica_label(&sample.service, sample.replica),
            service: sample.service.clone(),
            cpu_percent: sample.cpu_seconds / seconds * 100.0,
            memory_bytes: sample.memory_bytes,
            rx_bytes_per_s: sample.rx_bytes as f64 / seconds,
            tx_bytes_per_s: sample.tx_bytes as f64 / seconds,
            modelled_watts: sample.energy_joules / seconds,
        })
        .collect()
}

impl EmbeddedOperations {
    /// Reads every container's stats once a second (the controller's [`StatsSampler`], the list read again every
    /// few seconds) and publishes the last second's use; returns at once without an engine. Engine errors are
    /// logged and the next second tried.
    pub(super) async fn sample_containers_forever(&self) {
        let Some(stack) = self.inner.containers.clone() else {
            return;
        };
        let watched = Watched::Project {
            project: stack.deployment.clone(),
            relist: RELIST_EVERY,
        };
        StatsSampler::for_this_machine(stack.leases.engine().clone(), watched)
            .run(
                LIVE_PERIOD,
                |interval| {
                    self.inner
                        .hub
                        .publish(LiveEvent::Containers(ContainerStats {
                            at_ms: now_ms() as u64,
                            containers: uses_of(&interval.samples, interval.elapsed),
                        }))
                },
                |error| tracing::debug!(%error, "sampling the containers"),
            )
            .await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_of_samples_becomes_rates_per_second() {
        let sample = ContainerSampleRecord {
            second: 1,
            container: "shop_checkout_2".into(),
            service: "checkout".into(),
            replica: 2,
            cpu_seconds: 0.25,
            memory_bytes: 10 << 20,
            rx_bytes: 4_000,
            tx_bytes: 1_000,
            energy_joules: 3.0,
        };
        let uses = uses_of(&[sample], Duration::from_millis(500));
        assert_eq!(uses.len(), 1);
        let only = &uses[0];
        assert_eq!(only.replica, "checkout#2");
        assert!((only.cpu_percent - 50.0).abs() < 1e-9, "{only:?}");
        assert!((only.rx_bytes_per_s - 8_000.0).abs() < 1e-9);
        assert!((only.tx_bytes_per_s - 2_000.0).abs() < 1e-9);
        assert!((only.modelled_watts - 6.0).abs() < 1e-9);
        assert_eq!(only.memory_bytes, 10 << 20);
    }
}
