//! The breaker config a run pushed, held by a lease for as long as the run lives: pushed with `?lease=` (the
//! spec's `fault.lease`), renewed every third of it like the fault, and restored (`DELETE /_admin/breakers`, back
//! to each service's startup config) when the run's scope ends — finished, stopped, aborted or cancelled. Dropped
//! without [`HeldBreakers::restore`] (a panic unwinding, the run's future dropped) the renewal stops at once and
//! the restore is sent as its last act; a controller that is killed sends nothing, and the services go back by
//! themselves when the lease runs out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::recorded;
use super::renewal::spawn_renewal;
use crate::store::{BreakerHoldFailure, RunEvent, RunEventRecord};
use crate::target::ServiceId;
use crate::task::OwnedTask;
use crate::testbed::{AdminClient, AdminError};

/// Where each replica holding the config is (label → base URL): shared by the guard, its renewal and its
/// [`BreakerJoiner`], so a replica that joins mid-run is renewed and restored like the others.
type Holding = Arc<Mutex<BTreeMap<ServiceId, String>>>;

/// How often a replica that does not answer yet is asked again to take the config.
const JOIN_RETRY: Duration = Duration::from_millis(250);

/// Services holding a run's leased breaker config.
pub struct HeldBreakers {
    admin: AdminClient,
    lease: Duration,
    holding: Holding,
    /// The config each service's replicas take (by service name), for replicas that join mid-run.
    configs: Arc<BTreeMap<String, breaker::BreakerConfig>>,
    renewal: Option<OwnedTask<()>>,
    /// Renewals that failed (a lease that may have run out), kept for the run's fault timeline.
    failures: Arc<Mutex<Vec<RunEventRecord>>>,
}

impl HeldBreakers {
    /// Pushes each replica's config (`(label, base URL, config)`) with `lease` and renews them from now on. On an
    /// error the replicas already pushed are restored (the guard is dropped).
    pub async fn push(
        admin: &AdminClient,
        services: Vec<(ServiceId, String, breaker::BreakerConfig)>,
        lease: Duration,
    ) -> Result<Self, AdminError> {
        let mut configs = BTreeMap::new();
        for (label, _, config) in &services {
            configs
                .entry(label.service().to_owned())
                .or_insert_with(|| config.clone());
        }
        let mut held = HeldBreakers {
            admin: admin.clone(),
            lease,
            holding: Arc::new(Mutex::new(BTreeMap::new())),
            configs: Arc::new(configs),
            renewal: None,
            failures: Arc::new(Mutex::new(Vec::new())),
        };
        for (label, url, config) in services {
            admin.set_breakers(&url, &config, Some(lease)).await?;
            held.holding.lock().insert(label, url);
        }
        held.renewal = Some(renew_breakers(
            admin.clone(),
            Arc::clone(&held.holding),
            lease,
            Arc::clone(&held.failures),
        ));
        Ok(held)
    }

    /// What gives a replica that joins mid-run (an orchestrator's replacement, a scaled-up task) the run's
    /// config under the same lease.
    pub fn joiner(&self) -> BreakerJoiner {
        BreakerJoiner {
            admin: self.admin.clone(),
            lease: self.lease,
            holding: Arc::clone(&self.holding),
            configs: Arc::clone(&self.configs),
            failures: Arc::clone(&self.failures),
        }
    }

    /// Stops renewing and restores every service's startup config; returns the failed renewals and restores,
    /// and the renewal task's panic message if it had panicked (the config's lease may have lapsed mid-run).
    pub async fn restore(mut self) -> (Vec<RunEventRecord>, Option<String>) {
        let panicked = match self.renewal.take() {
            Some(renewal) => renewal.stop().await,
            None => None,
        };
        let services = std::mem::take(&mut *self.holding.lock());
        for url in services.values() {
            if let Err(error) = self.admin.restore_breakers(url).await {
                let failure = BreakerHoldFailure::RestoreFailed {
                    service: url.clone(),
                    error: error.to_string(),
                };
                (self.failures.lock()).push(recorded("", RunEvent::BreakerHold(failure)));
            }
        }
        (std::mem::take(&mut *self.failures.lock()), panicked)
    }
}

/// Gives replicas that join a run its breaker config; see [`HeldBreakers::joiner`].
#[derive(Clone)]
pub struct BreakerJoiner {
    admin: AdminClient,
    lease: Duration,
    holding: Holding,
    configs: Arc<BTreeMap<String, breaker::BreakerConfig>>,
    failures: Arc<Mutex<Vec<RunEventRecord>>>,
}

impl BreakerJoiner {
    /// Pushes the config of `label`'s service to the replica at `url` (asked again until it answers, at most
    /// `within`), which from then on is renewed and restored with the others, in place of whatever replica held
    /// the label before. A service the run gave no config is left alone; a replica that never took it is a
    /// `breakers:join_failed` event. Whether it took the config.
    pub async fn join(&self, label: &ServiceId, url: &str, within: Duration) -> bool {
        let Some(config) = self.configs.get(label.service()) else {
            return false;
        };
        let deadline = tokio::time::Instant::now() + within;
        let error = loop {
            match self.admin.set_breakers(url, config, Some(self.lease)).await {
                Ok(()) => {
                    self.holding.lock().insert(label.clone(), url.to_owned());
                    return true;
                }
                Err(error) if tokio::time::Instant::now() + JOIN_RETRY >= deadline => break error,
                Err(error) => {
                    tracing::debug!(%error, replica = %label, "a joining replica does not take the config yet");
                    tokio::time::sleep(JOIN_RETRY).await;
                }
            }
        };
        let failure = BreakerHoldFailure::JoinFailed {
            service: url.to_owned(),
            error: error.to_string(),
        };
        (self.failures.lock()).push(recorded(label.as_str(), RunEvent::BreakerHold(failure)));
        false
    }

    /// `label`'s replica is gone: it is no longer renewed (nor restored).
    pub fn leave(&self, label: &ServiceId) {
        self.holding.lock().remove(label);
    }
}

impl Drop for HeldBreakers {
    /// Dropped without [`HeldBreakers::restore`]: renewal stops now, the restores are sent as the last act.
    fn drop(&mut self) {
        drop(self.renewal.take());
        let services: Vec<String> = std::mem::take(&mut *self.holding.lock())
            .into_values()
            .collect();
        if services.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let admin = self.admin.clone();
        runtime.spawn(async move {
            for url in services {
                if let Err(error) = admin.restore_breakers(&url).await {
                    tracing::warn!(service = url, %error, "restoring the breakers of an abandoned run failed");
                }
            }
        });
    }
}

/// Renews every holding replica's breaker config every third of `lease` until stopped; a failed renewal
/// recorded.
fn renew_breakers(
    admin: AdminClient,
    holding: Holding,
    lease: Duration,
    failures: Arc<Mutex<Vec<RunEventRecord>>>,
) -> OwnedTask<()> {
    spawn_renewal(lease, failures, move || {
        let admin = admin.clone();
        let services: Vec<String> = holding.lock().values().cloned().collect();
        async move {
            let mut failed = Vec::new();
            for url in &services {
                if let Err(error) = admin.renew_breakers(url).await {
                    let failure = BreakerHoldFailure::RenewFailed {
                        service: url.clone(),
                        error: error.to_string(),
                    };
                    failed.push(recorded("", RunEvent::BreakerHold(failure)));
                }
            }
            failed
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::extract::{Request, State};
    use axum::http::StatusCode;

    /// A service's admin port that records `METHOD path?query` of every call and answers `status`.
    async fn admin_port(status: StatusCode) -> (String, Arc<Mutex<Vec<String>>>) {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let app = Router::new()
            .fallback(
                |State((calls, status)): State<(Arc<Mutex<Vec<String>>>, StatusCode)>,
                 request: Request| async move {
                    let uri = request.uri();
                    let query = uri.query().map(|q| format!("?{q}")).unwrap_or_default();
                    calls
                        .lock()
                        .push(format!("{} {}{query}", request.method(), uri.path()));
                    status
                },
            )
            .with_state((Arc::clone(&calls), status));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, calls)
    }

    fn label(text: &str) -> ServiceId {
        ServiceId::new(text).expect("a label")
    }

    /// Waits (bounded) until `calls` holds a call starting with `prefix`.
    async fn called(calls: &Arc<Mutex<Vec<String>>>, prefix: &str) -> bool {
        for _ in 0..200 {
            if calls.lock().iter().any(|c| c.starts_with(prefix)) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }

    #[tokio::test]
    async fn a_replica_that_joins_takes_the_config_is_renewed_and_restored_with_the_others() {
        let (first, first_calls) = admin_port(StatusCode::OK).await;
        let (joined, joined_calls) = admin_port(StatusCode::OK).await;
        let admin = AdminClient::new("token");
        let config = breaker::BreakerConfig::default();
        let lease = Duration::from_millis(300);
        let held = HeldBreakers::push(
            &admin,
            vec![(label("checkout"), first.clone(), config.clone())],
            lease,
        )
        .await
        .expect("pushed");
        assert!(
            held.joiner()
                .join(&label("checkout#2"), &joined, Duration::from_secs(5))
                .await
        );
        assert_eq!(
            joined_calls.lock().first().map(String::as_str),
            Some("PUT /_admin/breakers?lease=300ms")
        );
        assert!(
            called(&joined_calls, "POST /_admin/breakers/renew").await,
            "the joined replica is renewed: {:?}",
            joined_calls.lock()
        );
        // A service the run gave no config is left alone.
        assert!(
            !held
                .joiner()
                .join(&label("cart#2"), &joined, Duration::from_secs(5))
                .await
        );
        let (failures, panicked) = held.restore().await;
        assert!(failures.is_empty() && panicked.is_none(), "{failures:?}");
        for calls in [&first_calls, &joined_calls] {
            assert_eq!(
                calls.lock().last().map(String::as_str),
                Some("DELETE /_admin/breakers")
            );
        }
    }

    #[tokio::test]
    async fn a_replica_gone_is_no_longer_renewed_and_one_that_never_takes_the_config_is_recorded() {
        let (first, _) = admin_port(StatusCode::OK).await;
        let (refusing, refusing_calls) = admin_port(StatusCode::SERVICE_UNAVAILABLE).await;
        let admin = AdminClient::new("token");
        let held = HeldBreakers::push(
            &admin,
            vec![(label("checkout"), first, breaker::BreakerConfig::default())],
            Duration::from_secs(30),
        )
        .await
        .expect("pushed");
        let joiner = held.joiner();
        assert!(
            !joiner
                .join(&label("checkout#3"), &refusing, Duration::from_millis(600))
                .await
        );
        let puts = refusing_calls
            .lock()
            .iter()
            .filter(|c| c.starts_with("PUT"))
            .count();
        assert!(puts >= 2, "asked again until the bound: {puts}");
        joiner.leave(&label("checkout"));
        let (failures, _) = held.restore().await;
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0].fault_id, "checkout#3");
        assert!(matches!(
            &failures[0].event,
            RunEvent::BreakerHold(BreakerHoldFailure::JoinFailed { service, .. }) if *service == refusing
        ));
    }
}
