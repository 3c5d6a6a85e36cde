//! What the observer publishes: typed observations on one broadcast channel, and a consumer's place in their
//! sequence (gaps included).

use std::sync::Arc;

use boutique::pool::PoolStats;
use boutique::services::cart::CartStats;
use breaker::{BreakerSnapshot, TransitionEvent};
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::energy::EnergyReading;
use crate::exposition::Sample as ExpositionSample;
use crate::target::ServiceId;

/// Observations the channel holds for a consumer that is behind; see the module documentation.
pub const OBSERVATION_BUFFER: usize = 4_096;

/// One thing the observer saw.
#[derive(Debug, Clone)]
pub enum Observation {
    /// A Tolerant breaker's transition from the `/_breakers/stream` of `target`, named as that label's (a
    /// replica's breakers are its own: `checkout#2`, `checkout#2->payment`).
    Transition {
        target: ServiceId,
        event: TransitionEvent,
    },
    /// A breaker Tolerant did not write changed state, as a `[[sources]]` scrape showed it (its `source` says which).
    Foreign(TransitionEvent),
    /// A `[[sources]]` scrape after the baseline failed (the first of a run of failures): its source's name
    /// (`prometheus:<url>`), why (too large, too slow, refused …) and the wall clock then.
    ScrapeFailed {
        source: String,
        error: String,
        at_ms: i64,
    },
    /// One message of the agent's `/_agent/stream`.
    Agent(AgentObservation),
    /// The once-a-second sample.
    Sample(Arc<Sample>),
}

/// An agent event and when it arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentObservation {
    pub event: agent::api::AgentEvent,
    /// Wall-clock milliseconds when it was read (a `lagged` notice carries no time of its own).
    pub received_ms: i64,
}

/// What a consumer gets next.
#[derive(Debug, Clone)]
#[expect(
    clippy::large_enum_variant,
    reason = "a value handed to one consumer at a time and never stored in bulk: boxing would cost an allocation per read"
)]
pub enum Received {
    Observation(Observation),
    /// The consumer fell behind and `missed` observations were dropped for it (see the module documentation).
    Gap {
        missed: u64,
    },
}

/// A consumer's place in the sequence of observations.
#[derive(Debug)]
pub struct Observations {
    receiver: broadcast::Receiver<Observation>,
    missed: u64,
}

impl Observations {
    /// A consumer's place from now on in the sequence `receiver` gets.
    pub(super) fn new(receiver: broadcast::Receiver<Observation>) -> Self {
        Observations {
            receiver,
            missed: 0,
        }
    }

    /// The next observation, or the gap before it; `None` once the observer is gone.
    pub async fn next(&mut self) -> Option<Received> {
        match self.receiver.recv().await {
            Ok(observation) => Some(Received::Observation(observation)),
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                self.missed += missed;
                Some(Received::Gap { missed })
            }
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next observation already published, or the gap before it, without waiting; `None` when there is
    /// none yet (or the observer is gone).
    pub fn try_next(&mut self) -> Option<Received> {
        match self.receiver.try_recv() {
            Ok(observation) => Some(Received::Observation(observation)),
            Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                self.missed += missed;
                Some(Received::Gap { missed })
            }
            Err(_) => None,
        }
    }

    /// Observations dropped for this consumer so far.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}

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
