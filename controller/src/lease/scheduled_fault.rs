//! A fault on a schedule inside a run (`fault.schedule`): put on the agent at each on-period's start, its lease
//! renewed only while it is on, removed at the period's end. Every put and removal is a fault event (`applied`,
//! `removed`, with the period's index), so the store holds the periods actually applied
//! ([`crate::store::applied_periods`]).
//!
//! The periods are counted from the moment the schedule starts (the run's load starts right after). The run's
//! scope stops the schedule when the run ends for any reason and removes the fault if it may be on.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::recorded;
use super::renewal::renew_fault;
use crate::store::{FaultCall, PutFault, RunEvent, RunEventRecord};
use crate::task::OwnedTask;
use crate::testbed::AdminClient;

/// A schedule running for one run.
pub struct ScheduledFault {
    task: OwnedTask<()>,
    /// Set before each put and cleared after a removal: whether the agent may hold the fault now.
    maybe_on: Arc<AtomicBool>,
}

impl ScheduledFault {
    /// Starts the schedule now: `periods` are `[start, end)` offsets from now, in order.
    pub fn start(
        admin: AdminClient,
        agent_url: String,
        fault_id: &str,
        fault: agent::api::FaultSpec,
        lease: Duration,
        periods: Vec<(Duration, Duration)>,
        events: Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> Self {
        let maybe_on = Arc::new(AtomicBool::new(false));
        let started = Instant::now();
        let task = {
            let id = fault_id.to_owned();
            let maybe_on = Arc::clone(&maybe_on);
            OwnedTask::spawn(async move {
                for (period, (from, to)) in periods.into_iter().enumerate() {
                    tokio::time::sleep_until(started + from).await;
                    maybe_on.store(true, Ordering::SeqCst);
                    let call = match admin.put_fault(&agent_url, &id, &fault).await {
                        Ok(()) => FaultCall::Applied(PutFault::Agent {
                            fault: fault.clone(),
                            period: Some(period),
                        }),
                        Err(error) => FaultCall::ApplyFailed {
                            fault: fault.clone(),
                            period: Some(period),
                            error: error.to_string(),
                        },
                    };
                    events.lock().push(recorded(&id, RunEvent::Fault(call)));
                    let renewal = renew_fault(
                        admin.clone(),
                        agent_url.clone(),
                        id.clone(),
                        lease,
                        Arc::clone(&events),
                    );
                    tokio::time::sleep_until(started + to).await;
                    renewal.stop().await;
                    let call = match admin.delete_fault(&agent_url, &id).await {
                        Ok(()) => {
                            maybe_on.store(false, Ordering::SeqCst);
                            FaultCall::Removed {
                                period: Some(period),
                            }
                        }
                        Err(error) => FaultCall::RemoveFailed {
                            period: Some(period),
                            error: error.to_string(),
                        },
                    };
                    events.lock().push(recorded(&id, RunEvent::Fault(call)));
                }
            })
        };
        ScheduledFault { task, maybe_on }
    }

    /// Stops the schedule (no later period starts, renewal ends); returns whether the fault may still be on
    /// the agent and needs removing, and the schedule task's panic message if it had panicked.
    pub async fn stop(self) -> (bool, Option<String>) {
        let panicked = self.task.stop().await;
        (self.maybe_on.load(Ordering::SeqCst), panicked)
    }

    /// Stops the schedule at once (for a scope dropped without ending); returns whether the fault may be on.
    pub fn abandon(self) -> bool {
        drop(self.task);
        self.maybe_on.load(Ordering::SeqCst)
    }
}
