//! The once-a-second sample: at every tick of one interval, each sampled target is read for what any watch asked
//! of it — its worker pool (`GET /_pool`), its cart sizes (`GET /_admin/cart-stats`), its `/metrics` and its
//! breakers (`GET /_breakers`, renamed as the replica's) — all targets at once, and this process's energy over the
//! interval since the previous tick. A read that fails or times out is absent from that sample; a tick that finds
//! the previous one still reading is skipped, so a target is never read twice in one second.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio::time::{Instant, MissedTickBehavior};

use super::observation::{Observation, Sample, TargetSample};
use super::stream::as_replica;
use super::targets::{Follows, SampledTargets};
use crate::clock::now_ms;
use crate::energy::{CpuModel, EnergyMeter, POWERCAP_ROOT};
use crate::exposition::parse_exposition;
use crate::target::ServiceId;
use crate::task::OwnedTask;
use crate::testbed::AdminClient;

/// Time between two samples.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Starts ticking: every [`SAMPLE_EVERY`] from now, the targets in `targets` are read and the sample published.
pub(super) fn start(
    admin: AdminClient,
    targets: Arc<Mutex<SampledTargets>>,
    sender: broadcast::Sender<Observation>,
) -> OwnedTask<()> {
    OwnedTask::spawn(async move {
        let mut meter = energy_meter();
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

/// The meter the sampler reads this process's energy with.
pub(super) fn energy_meter() -> EnergyMeter {
    EnergyMeter::detect(
        std::path::Path::new(POWERCAP_ROOT),
        CpuModel::for_this_machine(),
    )
}
