//! The agent's fault held for a run: put with its lease and renewed every third of it until the run ends, or on a
//! schedule inside the run ([`ScheduledFault`]). Removing it is the first thing a run's end does; dropped without
//! being removed (a panic unwinding, the run's future dropped) it stops renewing at once and sends the `DELETE`
//! as its last act (bounded by [`ADMIN_CALL_TIMEOUT`](crate::testbed::ADMIN_CALL_TIMEOUT); the lease ends it
//! anyway).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::recorded;
use super::renewal::renew_fault;
use super::scheduled_fault::ScheduledFault;
use crate::store::{FaultCall, PutFault, RunEvent, RunEventRecord};
use crate::task::OwnedTask;
use crate::testbed::{AdminClient, AdminError};

/// A fault on the agent for one run; see the module documentation.
pub struct AppliedFault {
    admin: AdminClient,
    agent_url: String,
    id: String,
    holding: Holding,
}

enum Holding {
    /// On for the whole run, its lease renewed by this task.
    Renewed(OwnedTask<()>),
    /// On in the schedule's periods only.
    Scheduled(ScheduledFault),
    /// Removed (or never on): nothing to undo.
    Released,
}

impl AppliedFault {
    /// Puts `fault` on the agent at `agent_url` as `id` and renews its lease every third of `lease` from now; the
    /// put and every renewal are recorded in `events`. The error says why the fault is not on.
    pub async fn put(
        admin: &AdminClient,
        agent_url: &str,
        id: &str,
        fault: &agent::api::FaultSpec,
        lease: Duration,
        events: &Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> Result<Self, AdminError> {
        admin.put_fault(agent_url, id, fault).await?;
        let put = PutFault::Agent {
            fault: fault.clone(),
            period: None,
        };
        (events.lock()).push(recorded(id, RunEvent::Fault(FaultCall::Applied(put))));
        let renewal = renew_fault(
            admin.clone(),
            agent_url.to_owned(),
            id.to_owned(),
            lease,
            Arc::clone(events),
        );
        Ok(AppliedFault {
            admin: admin.clone(),
            agent_url: agent_url.to_owned(),
            id: id.to_owned(),
            holding: Holding::Renewed(renewal),
        })
    }

    /// Puts `fault` on the agent as `id` for each of `periods` (`[start, end)` from now), renewing its lease only
    /// while it is on (see [`ScheduledFault`]).
    pub fn schedule(
        admin: &AdminClient,
        agent_url: &str,
        id: &str,
        fault: agent::api::FaultSpec,
        lease: Duration,
        periods: Vec<(Duration, Duration)>,
        events: &Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> Self {
        let scheduled = ScheduledFault::start(
            admin.clone(),
            agent_url.to_owned(),
            id,
            fault,
            lease,
            periods,
            Arc::clone(events),
        );
        AppliedFault {
            admin: admin.clone(),
            agent_url: agent_url.to_owned(),
            id: id.to_owned(),
            holding: Holding::Scheduled(scheduled),
        }
    }

    /// Stops renewing (and the schedule) and deletes the fault if it may be on, the removal recorded in `events`.
    /// Returns the fault's id when a removal was sent, and the message of a renewal or schedule that had panicked
    /// (the fault may have lapsed mid-run).
    pub async fn remove(
        mut self,
        events: &Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> (Option<String>, Vec<String>) {
        let mut panics = Vec::new();
        match std::mem::replace(&mut self.holding, Holding::Released) {
            Holding::Renewed(renewal) => {
                let panicked = renewal.stop().await;
                panics.extend(panicked.map(|message| format!("lease renewal: {message}")));
            }
            Holding::Scheduled(scheduled) => {
                let (maybe_on, panicked) = scheduled.stop().await;
                panics.extend(panicked.map(|message| format!("fault schedule: {message}")));
                if !maybe_on {
                    return (None, panics);
                }
            }
            Holding::Released => return (None, panics),
        }
        let call = match self.admin.delete_fault(&self.agent_url, &self.id).await {
            Ok(()) => FaultCall::Removed { period: None },
            Err(error) => FaultCall::RemoveFailed {
                period: None,
                error: error.to_string(),
            },
        };
        (events.lock()).push(recorded(&self.id, RunEvent::Fault(call)));
        (Some(self.id.clone()), panics)
    }
}

impl Drop for AppliedFault {
    /// Dropped without [`AppliedFault::remove`]: renewal (or the schedule) stops now, the removal is sent last.
    fn drop(&mut self) {
        match std::mem::replace(&mut self.holding, Holding::Released) {
            Holding::Renewed(renewal) => drop(renewal),
            Holding::Scheduled(scheduled) => {
                if !scheduled.abandon() {
                    return;
                }
            }
            Holding::Released => return,
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let admin = self.admin.clone();
        let (agent_url, id) = (self.agent_url.clone(), self.id.clone());
        runtime.spawn(async move {
            if let Err(error) = admin.delete_fault(&agent_url, &id).await {
                tracing::warn!(fault = id, %error, "removing the fault of an abandoned run failed");
            }
        });
    }
}
