//! Game-day pod faults on the Kubernetes namespace the dashboard runs against (`TOLERANT_KUBERNETES`), through
//! the same form and API as container faults: a replica (`checkout#2`) is a pod of the watch's roster, the
//! action its pod equivalent (`restart` deletes the pod, `kill`, `net_delay`, `net_loss`), the lease the pod's
//! annotation (written before the fault, so any controller's sweep undoes it once it ends). Said live as fault
//! changes, undone when the lease ends, on request and on halt. Which game-day fault is which pod is kept here
//! only (the annotation is the record).

use controller::clock::now_ms;
use controller::kubernetes::KubeError;
use controller::kubernetes::fault::PodAction;
use controller::lease::PodStack;

use super::{EmbeddedOperations, GameDayPodFault};
use crate::hub::{FaultChange, FaultChangeEvent, LiveEvent};
use crate::operations::{ContainerFaultRequest, ContainerLine, OperationError};

/// A field the request got wrong stays a 400 naming it; what the pod cannot take is a conflict saying so; the
/// rest is a failure behind the dashboard.
fn cluster_failed(error: KubeError) -> OperationError {
    match error {
        KubeError::Invalid { .. } => OperationError::Invalid(error.to_string()),
        KubeError::Unsupported { .. } => OperationError::Conflict(error.to_string()),
        other => OperationError::Failed(other.to_string()),
    }
}

fn change(event: FaultChangeEvent, id: i64, replica: &str, action: &PodAction) -> FaultChange {
    FaultChange {
        at_ms: now_ms() as u64,
        event,
        fault_id: format!("pod-{id}"),
        target: replica.to_owned(),
        kind: action.name().to_owned(),
        rate: if event == FaultChangeEvent::Applied {
            1.0
        } else {
            0.0
        },
        detail: serde_json::to_string(action).unwrap_or_default(),
        matches: "the whole pod".into(),
        expires_at_ms: None,
    }
}

impl EmbeddedOperations {
    fn pods(&self) -> Option<&PodStack> {
        self.inner.orchestrator.pods.as_ref()
    }

    /// The namespace's ready pods as the game-day form lists them; `None` off Kubernetes.
    pub(super) fn pod_lines(&self) -> Option<Vec<ContainerLine>> {
        let pods = self.pods()?;
        let roster = pods.roster.lock();
        Some(
            roster
                .running()
                .into_iter()
                .filter_map(|(label, _)| {
                    let instance = roster.instance(label.as_str())?;
                    Some(ContainerLine {
                        replica: label.to_string(),
                        service: instance.service.clone(),
                        name: instance.name.clone(),
                        state: "running".into(),
                    })
                })
                .collect(),
        )
    }

    pub(super) async fn apply_pod_fault(
        &self,
        pods: &PodStack,
        request: ContainerFaultRequest,
    ) -> Result<i64, OperationError> {
        let action = PodAction::of_container("action", &request.action).map_err(cluster_failed)?;
        let pod = pods
            .roster
            .lock()
            .instance(&request.replica)
            .map(|instance| instance.name.clone())
            .ok_or_else(|| {
                OperationError::Invalid(format!(
                    "container: namespace {} has no ready pod `{}`",
                    pods.cluster.namespace(),
                    request.replica
                ))
            })?;
        let lease = pods
            .cluster
            .inject(&pod, None, &action, request.lease, &pods.owner, now_ms())
            .await
            .map_err(cluster_failed)?;
        let id = {
            let mut faults = self.inner.pod_faults.lock();
            faults.next += 1;
            faults.next
        };
        self.inner.hub.publish(LiveEvent::Fault(FaultChange {
            expires_at_ms: Some(lease.until_ms as u64),
            ..change(FaultChangeEvent::Applied, id, &request.replica, &action)
        }));
        let operations = self.clone();
        let expiry = tokio::spawn(async move {
            tokio::time::sleep(request.lease).await;
            operations
                .end_pod_fault(id, FaultChangeEvent::Expired)
                .await;
        });
        self.inner.pod_faults.lock().in_force.insert(
            id,
            GameDayPodFault {
                pod,
                replica: request.replica,
                lease,
                expiry: expiry.abort_handle(),
            },
        );
        Ok(id)
    }

    /// Undoes game-day pod fault `id` (its lease ended, or *Undo*) and says so; false when it is not in force.
    async fn end_pod_fault(&self, id: i64, event: FaultChangeEvent) -> bool {
        let Some(fault) = self.inner.pod_faults.lock().in_force.remove(&id) else {
            return false;
        };
        if event != FaultChangeEvent::Expired {
            fault.expiry.abort();
        }
        if let Some(pods) = self.pods()
            && let Err(error) = pods.cluster.undo(&fault.pod, &fault.lease).await
        {
            tracing::warn!(%error, id, "undoing a game-day pod fault");
        }
        self.inner.hub.publish(LiveEvent::Fault(change(
            event,
            id,
            &fault.replica,
            &fault.lease.action,
        )));
        true
    }

    pub(super) async fn remove_pod_fault(&self, id: i64) -> Result<(), OperationError> {
        if self.end_pod_fault(id, FaultChangeEvent::Removed).await {
            Ok(())
        } else {
            Err(OperationError::Invalid(format!(
                "id: no pod fault {id} in force"
            )))
        }
    }

    /// Forgets every game-day pod fault's expiry (halt swept them all).
    pub(super) fn forget_pod_faults(&self) {
        for (_, fault) in std::mem::take(&mut self.inner.pod_faults.lock().in_force) {
            fault.expiry.abort();
        }
    }
}
