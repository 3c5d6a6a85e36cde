//! The once-a-second live sample, made of the observer's sample: the breaker board, worker pools, mean cart size,
//! and outcomes — the load driver's own account while a run drives load, else the frontend's answers by status
//! class.

use std::collections::BTreeMap;

use breaker::BreakerSnapshot;
use controller::exposition::status_classes;
use controller::observe::Sample;

use super::EmbeddedOperations;
use super::board::BoardTracker;
use crate::hub::{LiveEvent, LiveSample, OutcomeCounts, PoolSample};

/// Seconds between two reads of every service's breaker config (sooner after a mode switch).
const CONFIG_EVERY_S: u64 = 5;

/// Calls the frontend's checkout breakers rejected so far (from its `/_breakers` snapshots): each is a
/// checkout the user saw refused.
fn checkout_rejections(snapshots: &[BreakerSnapshot]) -> u64 {
    snapshots
        .iter()
        .filter(|snapshot| snapshot.name.starts_with("frontend->checkout"))
        .map(|snapshot| snapshot.counters.rejected)
        .sum()
}

/// What the live sample remembers from one observed sample to the next: the frontend's counters (to publish
/// per-second deltas), the breaker board and the services' breaker configs.
#[derive(Default)]
pub(super) struct LiveSampling {
    previous: Option<[u64; 5]>,
    previous_rejected: Option<u64>,
    second: u64,
    board: BoardTracker,
    configs: BTreeMap<String, breaker::BreakerConfig>,
    /// Read the configs at the next sample (the first, and the one after a mode switch).
    configs_read: bool,
}

impl EmbeddedOperations {
    /// One observed sample as the live page's: the breaker board (and its mode switches), worker pools, mean cart
    /// size, and the frontend's answers by status class — or, while a run drives load, the load driver's own
    /// account. Every service's breaker config is read every [`CONFIG_EVERY_S`] samples (sooner after a switch).
    pub(super) async fn publish_sample(&self, live: &mut LiveSampling, sample: &Sample) {
        let mut snapshots = Vec::new();
        let mut frontend_snapshots = None;
        for target in &sample.targets {
            let Some(list) = &target.breakers else {
                continue;
            };
            if target.label == "frontend" {
                frontend_snapshots = Some(list.clone());
            }
            snapshots.extend(list.iter().cloned());
        }
        if !live.configs_read || live.second % CONFIG_EVERY_S == 0 {
            self.read_configs(&mut live.configs).await;
            live.configs_read = true;
        }
        let (tiles, mode_changes) =
            (live.board).observe(sample.at_ms.max(0) as u64, &snapshots, &live.configs);
        // A switched mode usually comes with a new config: read it on the next sample.
        live.configs_read = mode_changes.is_empty();
        for change in mode_changes {
            self.inner.hub.publish(LiveEvent::Mode(change));
        }
        self.inner.hub.publish(LiveEvent::Breakers(tiles));
        let pools = (sample.targets.iter())
            .filter_map(|target| {
                let pool = target.pool.as_ref()?;
                Some(PoolSample {
                    service: target.label.to_string(),
                    in_flight: pool.in_flight as u64,
                    queued: pool.queued as u64,
                    capacity: pool.capacity as u64,
                })
            })
            .collect();
        let cart_mean_items = (sample.of("cart"))
            .and_then(|cart| cart.cart.as_ref())
            .map(|stats| stats.mean_items);
        let classes = (sample.of("frontend"))
            .and_then(|frontend| frontend.metrics.as_deref())
            .map(status_classes);
        let rejected_total = frontend_snapshots.as_deref().map(checkout_rejections);
        let outcomes = match (
            classes,
            live.previous,
            rejected_total,
            live.previous_rejected,
        ) {
            (Some(now_counts), Some(before), rejected_now, rejected_before) => {
                let delta = |i: usize| now_counts[i].saturating_sub(before[i]);
                let rejected = match (rejected_now, rejected_before) {
                    (Some(now_total), Some(before_total)) => now_total.saturating_sub(before_total),
                    _ => 0,
                };
                OutcomeCounts {
                    ok: delta(0) + delta(1) + delta(2),
                    client_error: delta(3),
                    // A checkout the frontend's breaker rejected is answered with a 5xx too.
                    failed: delta(4).saturating_sub(rejected),
                    rejected,
                    ..OutcomeCounts::default()
                }
            }
            _ => OutcomeCounts::default(),
        };
        if classes.is_some() {
            live.previous = classes;
        }
        if rejected_total.is_some() {
            live.previous_rejected = rejected_total;
        }
        live.second += 1;
        // While a run drives load, its own per-second account is the better one.
        let load = self.inner.load_seconds.lock().take().unwrap_or_default();
        let from_load = !load.endpoints.is_empty();
        self.inner.hub.publish(LiveEvent::Sample(LiveSample {
            at_ms: sample.at_ms.max(0) as u64,
            second: live.second,
            warmup: load.warmup,
            outcomes: if from_load { load.outcomes } else { outcomes },
            endpoints: load.endpoints,
            cart_mean_items,
            cart_p95_us: load.cart_p95_us,
            pools,
        }));
    }

    /// Every service's breaker config now (all read at once); a service that does not answer has none.
    async fn read_configs(&self, configs: &mut BTreeMap<String, breaker::BreakerConfig>) {
        let admin = &self.inner.client;
        let reads = (self.inner.testbed.services.iter())
            .map(|(service, url)| async move { (service, admin.breaker_config(url).await) });
        for (service, read) in futures::future::join_all(reads).await {
            match read {
                Ok(view) => {
                    configs.insert(service.to_string(), view.config);
                }
                Err(_) => {
                    configs.remove(service.as_str());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkout_rejections_sum_the_frontend_checkout_breakers() {
        let snapshot = |name: &str, rejected: u64| {
            let counters = breaker::Counters {
                rejected,
                ..breaker::Counters::default()
            };
            super::super::board::closed_snapshot("frontend", name, breaker::Mode::Enforce, counters)
        };
        let snapshots = [
            snapshot("frontend->checkout", 4),
            snapshot("frontend->checkout#placeOrder", 1),
            snapshot("frontend->cart", 100),
        ];
        assert_eq!(checkout_rejections(&snapshots), 5);
        assert_eq!(checkout_rejections(&[]), 0);
    }
}
