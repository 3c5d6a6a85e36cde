//! The breaker config a run pushed, held by a lease for as long as the run lives: pushed with `?lease=` (the
//! spec's `fault.lease`), renewed every third of it like the fault, and restored (`DELETE /_admin/breakers`, back
//! to each service's startup config) when the run's scope ends — finished, stopped, aborted or cancelled. Dropped
//! without [`HeldBreakers::restore`] (a panic unwinding, the run's future dropped) the renewal stops at once and
//! the restore is sent as its last act; a controller that is killed sends nothing, and the services go back by
//! themselves when the lease runs out.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::recorded;
use super::renewal::spawn_renewal;
use crate::store::{BreakerHoldFailure, RunEvent, RunEventRecord};
use crate::task::OwnedTask;
use crate::testbed::{AdminClient, AdminError};

/// Services holding a run's leased breaker config.
pub struct HeldBreakers {
    admin: AdminClient,
    services: Vec<String>,
    renewal: Option<OwnedTask<()>>,
    /// Renewals that failed (a lease that may have run out), kept for the run's fault timeline.
    failures: Arc<Mutex<Vec<RunEventRecord>>>,
}

impl HeldBreakers {
    /// Pushes each service's config (`(base URL, config)`) with `lease` and renews them from now on. On an error
    /// the services already pushed are restored (the guard is dropped).
    pub async fn push(
        admin: &AdminClient,
        services: Vec<(String, breaker::BreakerConfig)>,
        lease: Duration,
    ) -> Result<Self, AdminError> {
        let mut held = HeldBreakers {
            admin: admin.clone(),
            services: Vec::with_capacity(services.len()),
            renewal: None,
            failures: Arc::new(Mutex::new(Vec::new())),
        };
        for (url, config) in services {
            admin.set_breakers(&url, &config, Some(lease)).await?;
            held.services.push(url);
        }
        held.renewal = Some(renew_breakers(
            admin.clone(),
            held.services.clone(),
            lease,
            Arc::clone(&held.failures),
        ));
        Ok(held)
    }

    /// Stops renewing and restores every service's startup config; returns the failed renewals and restores,
    /// and the renewal task's panic message if it had panicked (the config's lease may have lapsed mid-run).
    pub async fn restore(mut self) -> (Vec<RunEventRecord>, Option<String>) {
        let panicked = match self.renewal.take() {
            Some(renewal) => renewal.stop().await,
            None => None,
        };
        let services = std::mem::take(&mut self.services);
        for url in &services {
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

impl Drop for HeldBreakers {
    /// Dropped without [`HeldBreakers::restore`]: renewal stops now, the restores are sent as the last act.
    fn drop(&mut self) {
        drop(self.renewal.take());
        let services = std::mem::take(&mut self.services);
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

/// Renews every service's breaker config every third of `lease` until stopped; a failed renewal recorded.
fn renew_breakers(
    admin: AdminClient,
    services: Vec<String>,
    lease: Duration,
    failures: Arc<Mutex<Vec<RunEventRecord>>>,
) -> OwnedTask<()> {
    let services = Arc::new(services);
    spawn_renewal(lease, failures, move || {
        let (admin, services) = (admin.clone(), Arc::clone(&services));
        async move {
            let mut failed = Vec::new();
            for url in services.iter() {
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
