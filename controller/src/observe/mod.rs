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
mod observation;
pub mod sampler;
pub mod stream;
mod targets;
mod watch;

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::broadcast;

pub use foreign::ScrapeError;
pub use observation::{
    AgentObservation, OBSERVATION_BUFFER, Observation, Observations, Received, Sample, TargetSample,
};
pub use sampler::SAMPLE_EVERY;
pub use stream::{
    CONNECT_TIMEOUT, MAX_MESSAGE_BYTES, RECONNECT_AFTER, StreamUnavailable, as_replica,
};
pub use targets::{Follows, Target};
pub use watch::Watch;

use crate::energy::EnergySource;
use crate::testbed::AdminClient;
use sampler::energy_meter;
use watch::Shared;

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
        Observations::new(self.shared.sender.subscribe())
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
