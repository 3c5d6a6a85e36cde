//! The game day's breaker-mode switches, leased like everything else Tolerant changes (`docs/leases.md`): each
//! switch is pushed with `?lease=` and renewed every third of it while the dashboard runs; the renewals stop at a
//! halt (which restores every service's startup config at once) and when an experiment starts (the run pushes and
//! leases its own config). A dashboard that dies stops renewing, and each service goes back to its startup config
//! by itself when the lease runs out.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use controller::task::OwnedTask;
use controller::testbed::{AdminClient, AdminError};
use http::StatusCode;
use parking_lot::Mutex;

/// How long a game-day mode switch holds without a renewal, unless the dashboard is told otherwise
/// (`DashboardConfig::mode_lease`).
pub const GAME_DAY_MODE_LEASE: Duration = Duration::from_secs(30);

/// The services holding a game-day mode switch, and the renewal keeping them.
pub(super) struct GameDayModes {
    lease: Duration,
    /// Base URLs of the services whose switch is renewed.
    holding: Arc<Mutex<BTreeSet<String>>>,
    renewal: Option<OwnedTask<()>>,
}

impl Default for GameDayModes {
    fn default() -> Self {
        GameDayModes {
            lease: GAME_DAY_MODE_LEASE,
            holding: Arc::default(),
            renewal: None,
        }
    }
}

impl GameDayModes {
    /// The lease the next switches are pushed with.
    pub(super) fn lease(&self) -> Duration {
        self.lease
    }

    /// Pushes from now on are held by `lease` (a test's short one).
    pub(super) fn set_lease(&mut self, lease: Duration) {
        self.lease = lease;
    }

    /// `url` took a switch under [`GameDayModes::lease`]: renewed from now on, with the others.
    pub(super) fn hold(&mut self, client: &AdminClient, url: String) {
        self.holding.lock().insert(url);
        if self.renewal.as_ref().is_none_or(OwnedTask::is_finished) {
            self.renewal = Some(renew(client.clone(), Arc::clone(&self.holding), self.lease));
        }
    }

    /// Stops renewing every switch (a halt, an experiment's start, the dashboard's end).
    pub(super) fn release(&mut self) {
        self.renewal = None;
        self.holding.lock().clear();
    }
}

/// Renews every holding service every third of `lease`; a service with nothing to renew (restored by someone
/// else, its lease run out) is no longer renewed.
fn renew(
    client: AdminClient,
    holding: Arc<Mutex<BTreeSet<String>>>,
    lease: Duration,
) -> OwnedTask<()> {
    controller::lease::renewal::spawn_renewal(lease, Arc::default(), move || {
        let (client, holding) = (client.clone(), Arc::clone(&holding));
        async move {
            let urls: Vec<String> = holding.lock().iter().cloned().collect();
            for url in urls {
                match client.renew_breakers(&url).await {
                    Ok(()) => {}
                    Err(AdminError::Status {
                        status: StatusCode::CONFLICT,
                        ..
                    }) => {
                        tracing::info!(%url, "game-day breaker mode: nothing left to renew");
                        holding.lock().remove(&url);
                    }
                    Err(error) => tracing::warn!(%error, "game-day breaker mode: renewal failed"),
                }
            }
            Vec::new()
        }
    })
}
