//! A run against the testbed's pods on Kubernetes: a pod fault (the pod deleted, its process killed, network
//! delay or loss) on every ready replica of the target — or on the one replica a label names (`checkout#2`) —
//! under a lease recorded as an annotation on each pod, renewed while the run lasts and undone when it ends,
//! also when the run's future is dropped part-way (an abort), and by any controller's sweep once the lease
//! runs out (a killed controller).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::recorded;
use super::renewal::{renewal_event, spawn_renewal};
use crate::clock::now_ms;
use crate::docker::ContainerAction;
use crate::kubernetes::fault::{PodAction, PodLease};
use crate::kubernetes::{Cluster, KubeError};
use crate::roster::Roster;
use crate::spec::{ExperimentSpec, PlannedRun};
use crate::store::{FaultCall, PutFault, RunEvent, RunEventRecord};
use crate::task::OwnedTask;

/// Why a run's pod fault is not on: the pods could not be listed or none is the target's, the action has no pod
/// equivalent, or the cluster refused it on one of the target's pods.
#[derive(Debug, thiserror::Error)]
#[error("pod fault not applied: {0}")]
pub struct PodFaultError(#[source] pub Box<KubeError>);

/// The namespace a runner works on: its pods' roster (kept by the watch) and the owner its leases name.
#[derive(Debug, Clone)]
pub struct PodStack {
    pub cluster: Cluster,
    /// The replicas as the watch last saw them: a label (`checkout#2`) names one pod.
    pub roster: Arc<Mutex<Roster>>,
    /// Which controller this is, as its annotations say.
    pub owner: String,
}

/// The faults one run put on pods: `(pod, lease, fault id)`.
type Applied = Vec<(String, PodLease, String)>;

/// Faults applied in one run, undone when it ends or when this is dropped.
#[derive(Debug)]
pub struct PodRun {
    cluster: Cluster,
    applied: Arc<Mutex<Applied>>,
    renewal: Option<OwnedTask<()>>,
}

impl Drop for PodRun {
    fn drop(&mut self) {
        // Only reached with faults left when the run's future was dropped (an abort).
        let left = std::mem::take(&mut *self.applied.lock());
        if left.is_empty() {
            return;
        }
        let cluster = self.cluster.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                for (pod, lease, _) in left {
                    if let Err(error) = cluster.undo(&pod, &lease).await {
                        tracing::warn!(%error, "undoing a pod fault of an aborted run");
                    }
                }
            });
        }
    }
}

impl PodStack {
    /// Applies the run's fault, when its condition is one with a rate above zero, to the target's ready pods. An
    /// `Err` is the run's abort reason (what was applied before it is undone when the guard drops).
    pub async fn begin(
        &self,
        spec: &ExperimentSpec,
        planned: &PlannedRun,
        action: Option<ContainerAction>,
        events: &Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> Result<PodRun, PodFaultError> {
        let started = PodRun {
            cluster: self.cluster.clone(),
            applied: Arc::new(Mutex::new(Vec::new())),
            renewal: None,
        };
        let Some(action) = action.filter(|_| planned.condition.fault_rate > 0.0) else {
            return Ok(started);
        };
        let refused = |error: KubeError| PodFaultError(Box::new(error));
        let action = PodAction::of_container("fault.kinds", &action).map_err(refused)?;
        let target = &spec.fault.target;
        let pods: Vec<(String, String)> = {
            let roster = self.roster.lock();
            roster
                .running()
                .into_iter()
                .filter(|(label, _)| {
                    label == target || (!target.is_replica() && label.service() == target.as_str())
                })
                .filter_map(|(label, _)| {
                    let pod = roster.instance(label.as_str())?.name.clone();
                    Some((label.into_string(), pod))
                })
                .collect()
        };
        if pods.is_empty() {
            return Err(refused(KubeError::Invalid {
                field: "fault.target".into(),
                message: format!(
                    "namespace {} has no ready pod of `{target}`",
                    self.cluster.namespace()
                ),
            }));
        }
        for (label, pod) in pods {
            let lease = self
                .cluster
                .inject(&pod, None, &action, spec.fault.lease, &self.owner, now_ms())
                .await
                .map_err(refused)?;
            let fault_id = format!("pod-{pod}");
            let put = PutFault::Pod {
                pod: pod.clone(),
                replica: label,
                action: action.clone(),
            };
            events.lock().push(recorded(
                &fault_id,
                RunEvent::Fault(FaultCall::Applied(put)),
            ));
            started.applied.lock().push((pod, lease, fault_id));
        }
        let mut started = started;
        // A deleted pod has nothing to renew or undo: its lease is only the record.
        if action != PodAction::Delete {
            started.renewal = Some(renew_pods(
                self.cluster.clone(),
                Arc::clone(&started.applied),
                spec.fault.lease,
                Arc::clone(events),
            ));
        }
        Ok(started)
    }
}

/// Renews every pod fault of the run every third of `lease` until stopped; each renewal recorded.
fn renew_pods(
    cluster: Cluster,
    applied: Arc<Mutex<Applied>>,
    lease: Duration,
    events: Arc<Mutex<Vec<RunEventRecord>>>,
) -> OwnedTask<()> {
    spawn_renewal(lease, events, move || {
        let (cluster, applied) = (cluster.clone(), Arc::clone(&applied));
        async move {
            let current = applied.lock().clone();
            let mut recorded = Vec::new();
            for (pod, held, fault_id) in current {
                let renewed = cluster.renew(&pod, &held, lease, now_ms()).await;
                if let Ok(renewed) = &renewed
                    && let Some(entry) = applied.lock().iter_mut().find(|(p, _, _)| *p == pod)
                {
                    entry.1 = renewed.clone();
                }
                recorded.push(renewal_event(&fault_id, renewed.map(|_| ())));
            }
            recorded
        }
    })
}

impl PodRun {
    /// Stops renewing and undoes the run's pod faults (events recorded).
    pub async fn end(mut self, events: &Arc<Mutex<Vec<RunEventRecord>>>) {
        if let Some(renewal) = self.renewal.take() {
            let _ = renewal.stop().await;
        }
        let applied = std::mem::take(&mut *self.applied.lock());
        for (pod, lease, fault_id) in applied {
            let event = match self.cluster.undo(&pod, &lease).await {
                Ok(()) => FaultCall::Removed { period: None },
                Err(error) => FaultCall::RemoveFailed {
                    period: None,
                    error: error.to_string(),
                },
            };
            events
                .lock()
                .push(recorded(&fault_id, RunEvent::Fault(event)));
        }
    }
}

#[cfg(test)]
#[path = "pods_tests.rs"]
mod tests;
