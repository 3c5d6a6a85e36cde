//! The one observer of the testbed: everything the controller sees of a running testbed comes through here, once,
//! whoever is watching — the runner recording a run, the dashboard's live page, both at once in one process.
//!
//! # What it does
//!
//! - follows every stream it is asked to, reconnecting whenever one drops ([`stream`]): each service's
//!   `/_breakers/stream` (transitions, renamed as the replica's when followed under a replica's label) and the
//!   agent's `/_agent/stream`;
//! - samples the followed targets once a second, one tick for everyone ([`sampler`]): worker pools (`/_pool`),
//!   cart sizes, `/metrics` (read by the one exposition reader, [`crate::exposition`]), breaker snapshots
//!   (`/_breakers`), and this process's energy;
//! - scrapes the foreign breakers' `[[sources]]` at their interval ([`foreign`]);
//!
//! and publishes what it saw as typed [`Observation`]s on one `tokio::sync::broadcast` channel.
//!
//! # The contract
//!
//! - **Who asks.** What is followed is the union of what every live [`Watch`] asked for
//!   ([`Observer::watch`]). A watch adds and removes targets at any time ([`Watch::follow`],
//!   [`Watch::unfollow`]: a replica discovered or gone mid-run) and gives everything back when dropped; a stream
//!   or a sampled read nobody asks for any more stops. Two watches asking for the same stream share one
//!   connection, and the sampler reads each target once per tick however many asked.
//! - **What everyone sees.** Every subscriber ([`Observer::subscribe`]) receives every observation published
//!   after it subscribed, in one order: two consumers see the same sequence.
//! - **Lag.** The channel holds [`OBSERVATION_BUFFER`] observations. A consumer that falls further behind never
//!   slows a follower or the sampler down: it loses the oldest ones and is told how many, as a
//!   [`Received::Gap`] in its sequence (and in [`Observations::missed`]). What a gap means is the consumer's to
//!   say — the runner stores a run with a gap as failed, the live page just goes on.
//! - **Connections.** A follower tries at once, then again [`RECONNECT_AFTER`] after every drop or failure,
//!   for as long as it is asked for. [`Watch::breakers_connected`] and [`Watch::agent_connected`] wait for the
//!   stream to be up (or for its next attempt to fail), so a consumer knows nothing after that is missed.
//! - **Caps.** Each connection attempt is bounded by [`CONNECT_TIMEOUT`], each stream message by
//!   [`MAX_MESSAGE_BYTES`], each sampled read by the control client's timeout and size cap
//!   ([`crate::testbed::ADMIN_CALL_TIMEOUT`], [`crate::testbed::MAX_ANSWER_BYTES`]).
//!
//! Times: observations carry the testbed's own timestamps (a transition's `at_ms`) or, for what the observer
//! itself measured, the tick's instant and the wall clock then ([`Sample`]).

pub mod foreign;
pub mod sampler;
pub mod stream;
mod watch;

use std::sync::Arc;
use std::time::Duration;

use breaker::TransitionEvent;
use parking_lot::Mutex;
use tokio::sync::broadcast;

pub use foreign::ScrapeError;
pub use sampler::{Sample, TargetSample};
pub use stream::{StreamUnavailable, as_replica};
pub use watch::{Follows, Target, Watch};

use crate::energy::{CpuModel, EnergyMeter, EnergySource, POWERCAP_ROOT};
use crate::target::ServiceId;
use crate::testbed::AdminClient;

/// Observations the channel holds for a consumer that is behind; see the module documentation.
pub const OBSERVATION_BUFFER: usize = 4_096;
/// Wait before a dropped or failed stream is tried again.
pub const RECONNECT_AFTER: Duration = Duration::from_secs(1);
/// Longest a stream's connection (TCP and the websocket handshake) may take.
pub const CONNECT_TIMEOUT: Duration = crate::testbed::ADMIN_CALL_TIMEOUT;
/// Longest stream message taken (a transition or an agent event is well under a kilobyte).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Time between two samples.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);

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

/// The observer; cheap to clone (every clone is the same observer).
#[derive(Clone)]
pub struct Observer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("subscribers", &self.shared.sender.receiver_count())
            .finish_non_exhaustive()
    }
}

struct Shared {
    admin: AdminClient,
    sender: broadcast::Sender<Observation>,
    registry: Mutex<watch::Registry>,
    energy_source: EnergySource,
}

impl Observer {
    /// An observer that reads the testbed with `admin` (its token for the services' admin reads). Nothing is
    /// followed until a watch asks.
    pub fn new(admin: AdminClient) -> Self {
        let (sender, _) = broadcast::channel(OBSERVATION_BUFFER);
        let energy_source = energy_meter().source();
        Observer {
            shared: Arc::new(Shared {
                admin,
                sender,
                registry: Mutex::new(watch::Registry::default()),
                energy_source,
            }),
        }
    }

    /// Every observation published from now on.
    pub fn subscribe(&self) -> Observations {
        Observations {
            receiver: self.shared.sender.subscribe(),
            missed: 0,
        }
    }

    /// A new, empty set of things to follow; see [`Watch`].
    pub fn watch(&self) -> Watch {
        Watch::new(Arc::clone(&self.shared))
    }

    /// Whether the samples' energy figures are measured (RAPL) or modelled.
    pub fn energy_source(&self) -> EnergySource {
        self.shared.energy_source
    }

    /// The streams followed now (breaker streams by label, the agent's), and the targets sampled: what the live
    /// set is, for a consumer that reports it (and for tests).
    pub fn followed(&self) -> (Vec<String>, Vec<String>) {
        self.shared.registry.lock().followed()
    }
}

/// The meter the sampler reads this process's energy with.
pub(crate) fn energy_meter() -> EnergyMeter {
    EnergyMeter::detect(
        std::path::Path::new(POWERCAP_ROOT),
        CpuModel::for_this_machine(),
    )
}
