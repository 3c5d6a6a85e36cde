//! A lease kept alive while a run holds it — the agent's fault, the pushed breaker config, a container fault:
//! renewed every third of its length (two renewals in a row can fail before it runs out), what each renewal did
//! recorded with the run's fault events. One loop for all three.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::recorded;
use crate::store::{FaultCall, RunEvent, RunEventRecord};
use crate::task::OwnedTask;
use crate::testbed::AdminClient;

/// How often a lease of `lease` is renewed.
pub fn renewal_period(lease: Duration) -> Duration {
    lease / 3
}

/// Renews the agent's fault `fault_id` every third of `lease` until stopped; each renewal recorded.
pub fn renew_fault(
    admin: AdminClient,
    agent_url: String,
    fault_id: String,
    lease: Duration,
    events: Arc<Mutex<Vec<RunEventRecord>>>,
) -> OwnedTask<()> {
    spawn_renewal(lease, events, move || {
        let (admin, agent_url, fault_id) = (admin.clone(), agent_url.clone(), fault_id.clone());
        async move {
            vec![renewal_event(
                &fault_id,
                admin.renew_fault(&agent_url, &fault_id).await,
            )]
        }
    })
}

/// What renewing `fault_id`'s lease did: `renewed`, or `renew_failed` with the error.
pub fn renewal_event(
    fault_id: &str,
    renewed: Result<(), impl std::fmt::Display>,
) -> RunEventRecord {
    let call = match renewed {
        Ok(()) => FaultCall::Renewed,
        Err(error) => FaultCall::RenewFailed {
            error: error.to_string(),
        },
    };
    recorded(fault_id, RunEvent::Fault(call))
}

/// Runs `renew` every [`renewal_period`] of `lease` until the task is stopped or dropped; the events each
/// renewal returns go into `events`.
pub fn spawn_renewal<Renew, Round>(
    lease: Duration,
    events: Arc<Mutex<Vec<RunEventRecord>>>,
    mut renew: Renew,
) -> OwnedTask<()>
where
    Renew: FnMut() -> Round + Send + 'static,
    Round: Future<Output = Vec<RunEventRecord>> + Send + 'static,
{
    OwnedTask::spawn(async move {
        loop {
            tokio::time::sleep(renewal_period(lease)).await;
            let recorded = renew().await;
            events.lock().extend(recorded);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 30 s lease is renewed at 10, 20 and 30 s; each renewal's events are kept in order; stopping ends it.
    #[tokio::test(start_paused = true)]
    async fn a_lease_is_renewed_every_third_of_its_length_until_stopped() {
        let events = Arc::new(Mutex::new(Vec::new()));
        let started = tokio::time::Instant::now();
        let rounds = Arc::new(Mutex::new(Vec::new()));
        let renewal = spawn_renewal(Duration::from_secs(30), Arc::clone(&events), {
            let rounds = Arc::clone(&rounds);
            move || {
                let at = started.elapsed();
                rounds.lock().push(at);
                async move {
                    vec![RunEventRecord {
                        at_ms: at.as_millis() as i64,
                        event: RunEvent::Fault(FaultCall::Renewed),
                        fault_id: "f".to_owned(),
                    }]
                }
            }
        });
        tokio::time::sleep(Duration::from_secs(35)).await;
        renewal.stop().await;
        tokio::time::sleep(Duration::from_secs(60)).await;
        let seconds = |d: &Duration| d.as_secs();
        assert_eq!(
            rounds.lock().iter().map(seconds).collect::<Vec<_>>(),
            [10, 20, 30]
        );
        let recorded: Vec<i64> = events.lock().iter().map(|event| event.at_ms).collect();
        assert_eq!(recorded, [10_000, 20_000, 30_000]);
    }

    #[test]
    fn a_renewal_is_recorded_as_renewed_or_failed_with_its_error() {
        let renewed = renewal_event("f1", Ok::<(), String>(()));
        assert_eq!(
            (renewed.event, renewed.fault_id.as_str()),
            (RunEvent::Fault(FaultCall::Renewed), "f1")
        );
        let failed = renewal_event("f1", Err("connection refused"));
        assert_eq!(
            failed.event,
            RunEvent::Fault(FaultCall::RenewFailed {
                error: "connection refused".into()
            })
        );
    }
}
