//! The lease reaper: a task that sleeps until the earliest lease deadline (or a change to the table), then has
//! the expired faults removed. It holds only a weak reference to what it reaps and ends when that is dropped.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// What the reaper reaps: removes the faults whose lease ran out and says when the next one runs out.
pub(crate) trait Reap: Send + Sync + 'static {
    /// Removes the expired faults; returns the earliest remaining deadline as a point on tokio's clock.
    fn reap_expired(&self) -> Option<Instant>;
}

/// Runs until `target` is dropped: reaps, then sleeps until the next deadline or until `wake` is notified.
pub(crate) async fn reap_leases<T: Reap>(target: Weak<T>, wake: Arc<Notify>) {
    loop {
        let next_deadline = {
            let Some(target) = target.upgrade() else {
                return;
            };
            target.reap_expired()
        };
        match next_deadline {
            Some(deadline) => {
                tokio::select! {
                    () = tokio::time::sleep_until(deadline) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

/// The point on tokio's clock `since` after `epoch`; a day from now when that is past what the clock holds.
pub(crate) fn deadline_after(epoch: Instant, since: Duration) -> Instant {
    epoch
        .checked_add(since)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(24 * 3600))
}
