//! Leases on a pushed breaker config: a controller's `PUT /_admin/breakers?lease=30s` (or `…/mode?lease=30s`)
//! holds only as long as it is renewed (`POST /_admin/breakers/renew`), like a fault on the agent. When the lease
//! runs out — the controller was killed, its run hung — the service goes back by itself to the config it started
//! with; `DELETE /_admin/breakers` goes back at once (a run's end, abort, halt).
//!
//! A push without `lease` is an operator's choice: it stays until changed or restored, and ends any lease.
//! Time is tokio's ([`tokio::time::Instant`]), so paused time in tests moves it.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Shortest lease a push may ask for (renewed at a third of its length).
pub const MIN_BREAKER_LEASE: Duration = Duration::from_secs(1);
/// Longest lease a push may ask for (the controller's own bound on a fault lease).
pub const MAX_BREAKER_LEASE: Duration = Duration::from_secs(3600);

/// The lease in force, as `GET /_admin/breakers` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseView {
    /// Length of the lease in milliseconds (what a renew extends by).
    pub lease_ms: u64,
    /// Milliseconds until the service goes back to its startup config unless renewed.
    pub expires_in_ms: u64,
}

/// Body of `GET /_admin/breakers`: the config every breaker runs with, the one the service started with (what a
/// restore or an expired lease goes back to), and the lease holding the current one, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BreakerConfigView {
    pub config: breaker::BreakerConfig,
    pub startup: breaker::BreakerConfig,
    /// `None`: the config is the startup one or an operator's push without a lease; it stays.
    pub lease: Option<LeaseView>,
}

/// A `lease` a push may not have; `Display` names `lease`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    #[error("lease: {0}")]
    NotADuration(#[from] agent::api::DurationError),
    #[error(
        "lease: {} is outside {}..={}",
        agent::api::format_duration(*.0),
        agent::api::format_duration(MIN_BREAKER_LEASE),
        agent::api::format_duration(MAX_BREAKER_LEASE)
    )]
    OutOfBounds(Duration),
}

/// Reads a `lease` value (`"30s"`, `"1500ms"`) and checks its bounds; the error names `lease`.
pub fn parse_lease(text: &str) -> Result<Duration, LeaseError> {
    let lease = agent::api::parse_duration(text)?;
    if !(MIN_BREAKER_LEASE..=MAX_BREAKER_LEASE).contains(&lease) {
        return Err(LeaseError::OutOfBounds(lease));
    }
    Ok(lease)
}

#[derive(Debug, Clone, Copy)]
struct Held {
    length: Duration,
    deadline: Instant,
    /// Which push this lease belongs to: a watcher of an older push ends when it sees a newer one.
    generation: u64,
}

#[derive(Debug, Default)]
struct State {
    held: Option<Held>,
    generations: u64,
}

/// The startup config of one service's breakers and the lease on what was pushed over it.
#[derive(Debug)]
pub struct BreakerLease {
    registry: breaker::Registry,
    startup: breaker::BreakerConfig,
    state: Mutex<State>,
    /// Cancelled when the service stops: watchers end.
    shutdown: CancellationToken,
}

/// Why a renew was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "lease: no leased breaker config to renew (never pushed with a lease, restored, or expired)"
)]
pub struct NothingToRenew;

impl BreakerLease {
    /// Takes the registry's config now as the startup config.
    pub fn new(registry: breaker::Registry, shutdown: CancellationToken) -> Arc<Self> {
        Arc::new(BreakerLease {
            startup: registry.config(),
            registry,
            state: Mutex::new(State::default()),
            shutdown,
        })
    }

    /// Applies `config`; with a lease, until it runs out unless renewed (needs a tokio runtime); without one, for
    /// good (any lease ends).
    pub fn push(self: &Arc<Self>, config: breaker::BreakerConfig, lease: Option<Duration>) {
        self.hold(lease, || self.registry.set_config(config));
    }

    /// Applies `config` to `breaker` alone (one breaker of this service; the others keep theirs), under
    /// `lease` as [`BreakerLease::push`]: the lease is the service's one, and when it runs out (or on a
    /// restore) every breaker goes back to the startup config.
    pub fn push_one(
        self: &Arc<Self>,
        breaker: &breaker::CircuitBreaker,
        config: breaker::BreakerConfig,
        lease: Option<Duration>,
    ) {
        self.hold(lease, || breaker.set_config(config));
    }

    /// Runs `apply` and holds what it changed under `lease` (none: for good, any lease ended).
    fn hold(self: &Arc<Self>, lease: Option<Duration>, apply: impl FnOnce()) {
        let mut state = self.state.lock();
        apply();
        state.generations += 1;
        state.held = lease.map(|length| Held {
            length,
            deadline: Instant::now() + length,
            generation: state.generations,
        });
        if let Some(held) = state.held {
            let this = Arc::clone(self);
            tokio::spawn(async move { this.watch(held.generation).await });
        }
    }

    /// Extends the lease by its length from now.
    pub fn renew(&self) -> Result<LeaseView, NothingToRenew> {
        let mut state = self.state.lock();
        let held = state.held.as_mut().ok_or(NothingToRenew)?;
        held.deadline = Instant::now() + held.length;
        Ok(view(held, Instant::now()))
    }

    /// Goes back to the startup config now and ends any lease.
    pub fn restore(&self) {
        let mut state = self.state.lock();
        state.generations += 1;
        state.held = None;
        self.registry.set_config(self.startup.clone());
    }

    /// What `GET /_admin/breakers` answers.
    pub fn view(&self) -> BreakerConfigView {
        let state = self.state.lock();
        BreakerConfigView {
            config: self.registry.config(),
            startup: self.startup.clone(),
            lease: state.held.as_ref().map(|held| view(held, Instant::now())),
        }
    }

    /// Restores the startup config when the lease of push `generation` runs out; ends early when a later push
    /// or a restore replaced it, or the service stops.
    async fn watch(&self, generation: u64) {
        loop {
            let deadline = match self.state.lock().held {
                Some(held) if held.generation == generation => held.deadline,
                _ => return,
            };
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = self.shutdown.cancelled() => return,
            }
            let mut state = self.state.lock();
            match state.held {
                Some(held) if held.generation == generation && held.deadline <= Instant::now() => {
                    state.held = None;
                    state.generations += 1;
                    self.registry.set_config(self.startup.clone());
                    tracing::warn!(
                        service = self.registry.service(),
                        "breaker config lease expired: back to the startup config"
                    );
                    return;
                }
                // Renewed meanwhile: wait for the new deadline.
                Some(held) if held.generation == generation => {}
                _ => return,
            }
        }
    }
}

fn view(held: &Held, now: Instant) -> LeaseView {
    LeaseView {
        lease_ms: held.length.as_millis() as u64,
        expires_in_ms: held.deadline.saturating_duration_since(now).as_millis() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease_over(config: breaker::BreakerConfig) -> Arc<BreakerLease> {
        let registry = breaker::Registry::new("svc", config, Arc::new(breaker::SystemClock));
        registry.get("svc->dep");
        BreakerLease::new(registry, CancellationToken::new())
    }

    fn disabled() -> breaker::BreakerConfig {
        breaker::BreakerConfig::default().with_mode(breaker::Mode::Disabled)
    }

    fn modes(lease: &BreakerLease) -> Vec<breaker::Mode> {
        lease
            .registry
            .breakers()
            .iter()
            .map(|breaker| breaker.config().mode())
            .chain([lease.registry.config().mode()])
            .collect()
    }

    #[tokio::test(start_paused = true)]
    async fn an_expired_lease_goes_back_to_the_startup_config_unless_renewed() {
        let lease = lease_over(breaker::BreakerConfig::default());
        lease.push(disabled(), Some(Duration::from_secs(3)));
        assert_eq!(modes(&lease), [breaker::Mode::Disabled; 2]);
        assert_eq!(
            lease.view().lease,
            Some(LeaseView {
                lease_ms: 3000,
                expires_in_ms: 3000
            })
        );

        // Renewed at 2 s and 4 s: still held at 6 s (past the first deadline).
        tokio::time::sleep(Duration::from_secs(2)).await;
        lease.renew().expect("held");
        tokio::time::sleep(Duration::from_secs(2)).await;
        lease.renew().expect("held");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(modes(&lease), [breaker::Mode::Disabled; 2]);
        assert_eq!(
            lease.view().lease.map(|view| view.expires_in_ms),
            Some(1000)
        );

        // Nobody renews (the controller is gone): back to the startup config by itself.
        tokio::time::sleep(Duration::from_millis(1001)).await;
        assert_eq!(modes(&lease), [breaker::Mode::Enforce; 2]);
        assert_eq!(lease.view().lease, None);
        assert_eq!(lease.renew(), Err(NothingToRenew));
    }

    #[tokio::test(start_paused = true)]
    async fn a_push_without_a_lease_stays_and_ends_the_lease_before_it() {
        let lease = lease_over(breaker::BreakerConfig::default());
        lease.push(disabled(), Some(Duration::from_secs(2)));
        let shadow = breaker::BreakerConfig::default().with_mode(breaker::Mode::Shadow);
        lease.push(shadow, None);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(modes(&lease), [breaker::Mode::Shadow; 2]);
        assert_eq!(lease.view().lease, None);
        lease.restore();
        assert_eq!(modes(&lease), [breaker::Mode::Enforce; 2]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_restore_ends_the_lease_and_a_later_lease_is_not_cut_short_by_an_earlier_one() {
        let lease = lease_over(breaker::BreakerConfig::default());
        lease.push(disabled(), Some(Duration::from_secs(2)));
        lease.restore();
        assert_eq!(modes(&lease), [breaker::Mode::Enforce; 2]);
        tokio::time::sleep(Duration::from_secs(1)).await;
        lease.push(disabled(), Some(Duration::from_secs(5)));
        // The first push's deadline (2 s) passes: the second push holds.
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(modes(&lease), [breaker::Mode::Disabled; 2]);
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(modes(&lease), [breaker::Mode::Enforce; 2]);
    }

    /// One breaker switched under a lease: the others keep their mode; when the lease runs out, it goes
    /// back to the startup config too.
    #[tokio::test(start_paused = true)]
    async fn one_breaker_pushed_under_a_lease_goes_back_when_it_runs_out() {
        let lease = lease_over(breaker::BreakerConfig::default());
        let other = lease.registry.get("svc->other");
        let one = lease.registry.get("svc->dep");
        lease.push_one(&one, disabled(), Some(Duration::from_secs(3)));
        assert_eq!(
            (one.config().mode(), other.config().mode()),
            (breaker::Mode::Disabled, breaker::Mode::Enforce)
        );
        assert_eq!(lease.view().lease.map(|view| view.lease_ms), Some(3000));
        tokio::time::sleep(Duration::from_secs(2)).await;
        lease.renew().expect("held");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(one.config().mode(), breaker::Mode::Disabled, "renewed");
        tokio::time::sleep(Duration::from_millis(1001)).await;
        assert_eq!(modes(&lease), [breaker::Mode::Enforce; 3]);
        assert_eq!(lease.view().lease, None);
    }

    #[test]
    fn lease_values_are_bounded_and_errors_name_the_field() {
        assert_eq!(parse_lease("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_lease("1500ms"), Ok(Duration::from_millis(1500)));
        for bad in ["0s", "999ms", "2h", "500000000000y", "soon", ""] {
            let error = parse_lease(bad).unwrap_err().to_string();
            assert!(error.starts_with("lease: "), "{bad}: {error}");
        }
        assert_eq!(
            parse_lease("2h").unwrap_err().to_string(),
            "lease: 2h is outside 1s..=1h"
        );
        assert!(matches!(
            parse_lease("soon"),
            Err(LeaseError::NotADuration(_))
        ));
    }
}
