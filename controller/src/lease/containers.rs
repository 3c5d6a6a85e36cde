//! A run against the compose stack: every container sampled once a second (CPU, memory, network, modelled
//! energy), and a container-level fault (pause, stop, kill, restart) on every replica of the target, under a
//! lease renewed while the run lasts and undone when it ends — also when the run's future is dropped
//! part-way (an abort), and by any controller's sweep once the lease runs out (a killed controller).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::recorded;
use super::renewal::{renewal_event, spawn_renewal};
use crate::clock::now_ms;
use crate::docker::{ContainerAction, ContainerLeases, ContainerSampler, DockerError};
use crate::spec::{ConditionFault, ExperimentSpec, PlannedRun};
use crate::store::{ContainerSampleRecord, FaultCall, PutFault, RunEvent, RunEventRecord, RunId};
use crate::task::OwnedTask;

/// Why a run's container fault is not on.
#[derive(Debug, thiserror::Error)]
pub enum ContainerFaultError {
    /// The compose stack could not be listed, or has no container of the fault's target.
    #[error(transparent)]
    Stack(Box<DockerError>),
    /// The container fault did not go on one of the target's replicas.
    #[error("container fault not applied: {0}")]
    NotApplied(#[source] Box<DockerError>),
}

/// How often every container's stats are read.
pub const SAMPLE_PERIOD: Duration = Duration::from_secs(1);

/// The compose project a runner works on, and the leases its container faults are held under.
#[derive(Debug, Clone)]
pub struct ContainerStack {
    pub leases: ContainerLeases,
    pub project: String,
}

/// The engine action of a container fault kind at `rate` (a `net_loss`'s loss probability); `None` for the
/// agent's kinds.
pub fn container_action(kind: ConditionFault, rate: f64) -> Option<ContainerAction> {
    match kind {
        ConditionFault::Pause => Some(ContainerAction::Pause),
        ConditionFault::Stop => Some(ContainerAction::Stop),
        ConditionFault::Kill { signal } => Some(ContainerAction::Kill {
            signal: signal.to_owned(),
        }),
        ConditionFault::Restart => Some(ContainerAction::Restart),
        ConditionFault::NetDelay { delay } => Some(ContainerAction::NetDelay {
            delay_ms: delay.as_millis() as u64,
        }),
        ConditionFault::NetLoss => Some(ContainerAction::NetLoss {
            percent: rate * 100.0,
        }),
        ConditionFault::Error { .. }
        | ConditionFault::Hang
        | ConditionFault::Delay { .. }
        | ConditionFault::Reset => None,
    }
}

/// Faults applied in one run, undone when it ends or when this is dropped.
#[derive(Debug)]
struct AppliedFaults {
    leases: ContainerLeases,
    ids: Vec<(i64, String)>,
}

impl Drop for AppliedFaults {
    fn drop(&mut self) {
        // Only reached with faults left when the run's future was dropped (an abort): undo them now
        // rather than at the end of their lease.
        for (id, _) in std::mem::take(&mut self.ids) {
            let leases = self.leases.clone();
            tokio::spawn(async move {
                if let Err(error) = leases.undo(id, now_ms()).await {
                    tracing::warn!(%error, id, "undoing a container fault of an aborted run");
                }
            });
        }
    }
}

/// What a run started on the containers.
#[derive(Debug)]
pub struct ContainerRun {
    faults: AppliedFaults,
    renewal: Option<OwnedTask<()>>,
    sampler: ContainerSampler,
}

impl ContainerStack {
    /// Starts sampling the whole stack and, when the run's condition is a container fault with a rate above
    /// zero, applies it to every replica of the target. An `Err` is the run's abort reason (what was applied
    /// before the error is undone when the returned guard — or the error path — drops it).
    pub async fn begin(
        &self,
        spec: &ExperimentSpec,
        planned: &PlannedRun,
        run: RunId,
        events: &Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> Result<ContainerRun, ContainerFaultError> {
        let engine = self.leases.engine().clone();
        let stack = engine
            .stack(&self.project)
            .await
            .map_err(|error| ContainerFaultError::Stack(Box::new(error)))?;
        let sampler = ContainerSampler::start(engine, stack.clone(), SAMPLE_PERIOD);
        let mut started = ContainerRun {
            faults: AppliedFaults {
                leases: self.leases.clone(),
                ids: Vec::new(),
            },
            renewal: None,
            sampler,
        };
        let action = container_action(planned.condition.fault, planned.condition.fault_rate)
            .filter(|_| planned.condition.fault_rate > 0.0);
        let Some(action) = action else {
            return Ok(started);
        };
        let replicas: Vec<_> = stack
            .iter()
            .filter(|container| spec.fault.target == container.service.as_str())
            .collect();
        if replicas.is_empty() {
            return Err(ContainerFaultError::Stack(Box::new(
                DockerError::NoSuchService {
                    project: self.project.clone(),
                    service: spec.fault.target.to_string(),
                },
            )));
        }
        for container in replicas {
            let id = self
                .leases
                .inject(container, &action, spec.fault.lease, Some(run), now_ms())
                .await
                .map_err(|error| ContainerFaultError::NotApplied(Box::new(error)))?;
            let fault_id = format!("container-{id}");
            let put = PutFault::Container {
                container: container.name.clone(),
                action: action.clone(),
            };
            let applied = recorded(&fault_id, RunEvent::Fault(FaultCall::Applied(put)));
            events.lock().push(applied);
            started.faults.ids.push((id, fault_id));
        }
        started.renewal = Some(renew_containers(
            self.leases.clone(),
            started.faults.ids.clone(),
            spec.fault.lease,
            Arc::clone(events),
        ));
        Ok(started)
    }
}

/// Renews every container fault's lease (`(lease id, fault id)`) every third of `lease` until stopped; each
/// renewal recorded.
fn renew_containers(
    leases: ContainerLeases,
    ids: Vec<(i64, String)>,
    lease: Duration,
    events: Arc<Mutex<Vec<RunEventRecord>>>,
) -> OwnedTask<()> {
    let ids = Arc::new(ids);
    spawn_renewal(lease, events, move || {
        let (leases, ids) = (leases.clone(), Arc::clone(&ids));
        async move {
            let mut recorded = Vec::new();
            for (id, fault_id) in ids.iter() {
                let renewed = leases.renew(*id, lease, now_ms()).await;
                recorded.push(renewal_event(fault_id, renewed));
            }
            recorded
        }
    })
}

impl ContainerRun {
    /// Undoes the run's container fault (events recorded), stops sampling; returns the samples.
    pub async fn end(
        mut self,
        events: &Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> Vec<ContainerSampleRecord> {
        if let Some(renewal) = self.renewal.take() {
            // A renewal that panicked shows as the lease's lapse; the undo below still runs.
            let _ = renewal.stop().await;
        }
        for (id, fault_id) in std::mem::take(&mut self.faults.ids) {
            let event = match self.faults.leases.undo(id, now_ms()).await {
                Ok(_) => FaultCall::Removed { period: None },
                Err(error) => FaultCall::RemoveFailed {
                    period: None,
                    error: error.to_string(),
                },
            };
            events
                .lock()
                .push(recorded(&fault_id, RunEvent::Fault(event)));
        }
        let (samples, errors) = self.sampler.stop();
        for error in errors {
            let failed = RunEvent::ContainerStatsFailed { error };
            events.lock().push(recorded("", failed));
        }
        samples
    }
}
