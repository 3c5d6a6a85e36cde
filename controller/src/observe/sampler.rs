//! The once-a-second sample: at every tick of one interval, each sampled target is read for what any watch asked
//! of it — its worker pool (`GET /_pool`), its cart sizes (`GET /_admin/cart-stats`), its `/metrics` and its
//! breakers (`GET /_breakers`, renamed as the replica's) — all targets at once, and this process's energy over the
//! interval since the previous tick. A read that fails or times out is absent from that sample; a tick that finds
//! the previous one still reading is skipped, so a target is never read twice in one second.

use std::sync::Arc;

use boutique::pool::PoolStats;
use boutique::services::cart::CartStats;
use breaker::BreakerSnapshot;
use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio::time::{Instant, MissedTickBehavior};

use super::stream::as_replica;
use super::watch::SampledTargets;
use super::{Follows, Observation, SAMPLE_EVERY};
use crate::clock::now_ms;
use crate::energy::EnergyReading;
use crate::exposition::{Sample as ExpositionSample, parse_exposition};
use crate::target::ServiceId;
use crate::task::OwnedTask;
use crate::testbed::AdminClient;

/// One tick's reads.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The tick's instant (every sample of one sampler is on one grid a second apart).
    pub at: Instant,
    /// Wall-clock milliseconds at the tick.
    pub at_ms: i64,
    /// This process's energy and CPU time since the previous tick (`None`: not readable).
    pub energy: Option<EnergyReading>,
    /// Every sampled target, in the order they were first asked for.
    pub targets: Vec<TargetSample>,
}

impl Sample {
    /// The sample of target `label`, if it was sampled.
    pub fn of(&self, label: &str) -> Option<&TargetSample> {
        self.targets.iter().find(|target| target.label == label)
    }
}

/// What one target answered at one tick; each is `None` when it was not asked for or did not answer.
#[derive(Debug, Clone)]
pub struct TargetSample {
    pub label: ServiceId,
    pub pool: Option<PoolStats>,
    pub cart: Option<CartStats>,
    /// Its `/metrics`, every sample of the exposition.
    pub metrics: Option<Vec<ExpositionSample>>,
    /// Its breakers now, named as the label's (a replica's are its own).
    pub breakers: Option<Vec<BreakerSnapshot>>,
}

/// Starts ticking: every [`SAMPLE_EVERY`] from now, the targets in `targets` are read and the sample published.
pub(super) fn start(
    admin: AdminClient,
    targets: Arc<Mutex<SampledTargets>>,
    sender: broadcast::Sender<Observation>,
) -> OwnedTask<()> {
    OwnedTask::spawn(async move {
        let mut meter = super::energy_meter();
        // The first reading is the baseline.
        let _ = meter.sample(std::time::Duration::ZERO);
        let mut ticks = tokio::time::interval(SAMPLE_EVERY);
        ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
        ticks.tick().await;
        let mut last = Instant::now();
        loop {
            let at = ticks.tick().await;
            let at_ms = now_ms();
            let energy = meter.sample(at - last).ok();
            last = at;
            let wanted = targets.lock().snapshot();
            let reads = wanted
                .iter()
                .map(|(label, url, follows)| read(&admin, label, url, *follows));
            let sample = Sample {
                at,
                at_ms,
                energy,
                targets: futures::future::join_all(reads).await,
            };
            let _ = sender.send(Observation::Sample(Arc::new(sample)));
        }
    })
}

/// Reads what `follows` asks of the target at `url`, every read at once.
async fn read(admin: &AdminClient, label: &ServiceId, url: &str, follows: Follows) -> TargetSample {
    let pool = async {
        match follows.pool {
            true => admin.pool(url).await.ok(),
            false => None,
        }
    };
    let cart = async {
        match follows.cart {
            true => admin.cart_stats(url).await.ok(),
            false => None,
        }
    };
    let metrics = async {
        match follows.metrics {
            true => (admin.get_text(&format!("{url}/metrics")).await.ok())
                .map(|text| parse_exposition(&text)),
            false => None,
        }
    };
    let breakers = async {
        match follows.breakers {
            true => admin.breakers(url).await.ok(),
            false => None,
        }
    };
    let (pool, cart, metrics, mut breakers) = tokio::join!(pool, cart, metrics, breakers);
    for snapshot in breakers.iter_mut().flatten() {
        as_replica(label, &mut snapshot.service, &mut snapshot.name);
    }
    TargetSample {
        label: label.clone(),
        pool,
        cart,
        metrics,
        breakers,
    }
}
