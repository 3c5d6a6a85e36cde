//! Who asks the observer for what. A [`Watch`] is one consumer's set of targets (and the agent, and foreign
//! scrapes); the [`Registry`] keeps the union of every live watch: one follower per stream however many watches
//! ask for it, one sampled entry per target with what any of them wants read. A follower or a sampled read
//! nobody asks for any more stops; the sampler runs while anything is sampled.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch as state;

use super::foreign::{self, ScrapeError};
use super::observation::Observation;
use super::sampler;
use super::stream::{self, Connection, StreamKey, StreamUnavailable};
use super::targets::{Follows, SampledTarget, SampledTargets, Target, WatchId};
use crate::energy::EnergySource;
use crate::sources::ScrapeTally;
use crate::spec::ScrapeSpec;
use crate::target::ServiceId;
use crate::task::OwnedTask;
use crate::testbed::AdminClient;

/// A followed stream: who asks for it, its follower and where it is.
struct Followed {
    watchers: BTreeSet<WatchId>,
    connection: state::Receiver<Connection>,
    _follower: OwnedTask<()>,
}

/// What every watch of one observer shares: the control client, the channel, the union of the watches.
pub(super) struct Shared {
    pub(super) admin: AdminClient,
    pub(super) sender: tokio::sync::broadcast::Sender<Observation>,
    pub(super) registry: Mutex<Registry>,
    pub(super) energy_source: EnergySource,
}

/// The union of what every live watch asks for.
#[derive(Default)]
pub(super) struct Registry {
    next_watch: WatchId,
    streams: BTreeMap<StreamKey, Followed>,
    sampled: Arc<Mutex<SampledTargets>>,
    sampler: Option<OwnedTask<()>>,
}

impl Registry {
    /// The followed streams' names and the sampled targets' labels.
    pub(super) fn followed(&self) -> (Vec<String>, Vec<String>) {
        let streams = self.streams.keys().map(StreamKey::name).collect();
        let sampled = (self.sampled.lock().snapshot().into_iter())
            .map(|(label, _, _)| label.to_string())
            .collect();
        (streams, sampled)
    }

    fn ask_stream(&mut self, watch: WatchId, key: StreamKey, shared: &Shared) {
        let followed = self.streams.entry(key.clone()).or_insert_with(|| {
            let (follower, connection) = stream::follow(key, shared.sender.clone());
            Followed {
                watchers: BTreeSet::new(),
                connection,
                _follower: follower,
            }
        });
        followed.watchers.insert(watch);
    }

    /// `watch` no longer asks for the streams `drop_it` picks; one nobody asks for stops.
    fn release_streams(&mut self, watch: WatchId, drop_it: impl Fn(&StreamKey) -> bool) {
        self.streams.retain(|key, followed| {
            if drop_it(key) {
                followed.watchers.remove(&watch);
            }
            !followed.watchers.is_empty()
        });
    }

    /// `watch` asks for `follows` of `label` at `url` (`Follows::default()`: nothing any more).
    fn ask_samples(
        &mut self,
        watch: WatchId,
        label: &ServiceId,
        url: &str,
        follows: Follows,
        shared: &Shared,
    ) {
        {
            let mut sampled = self.sampled.lock();
            for target in &mut sampled.0 {
                if target.label == *label && target.url != url {
                    target.by.remove(&watch);
                }
            }
            match sampled
                .0
                .iter_mut()
                .find(|t| t.label == *label && t.url == url)
            {
                Some(target) => {
                    target.by.insert(watch, follows);
                }
                None => sampled.0.push(SampledTarget {
                    label: label.clone(),
                    url: url.to_owned(),
                    by: BTreeMap::from([(watch, follows)]),
                }),
            }
            sampled
                .0
                .retain(|target| target.by.values().any(|f| f.sampled()));
        }
        self.run_sampler(shared);
    }

    fn release_samples(&mut self, watch: WatchId, label: Option<&ServiceId>) {
        {
            let mut sampled = self.sampled.lock();
            for target in &mut sampled.0 {
                if label.is_none_or(|label| target.label == *label) {
                    target.by.remove(&watch);
                }
            }
            sampled
                .0
                .retain(|target| target.by.values().any(|f| f.sampled()));
        }
        if self.sampled.lock().is_empty() {
            self.sampler = None;
        }
    }

    /// The sampler runs while anything is sampled.
    fn run_sampler(&mut self, shared: &Shared) {
        if self.sampled.lock().is_empty() {
            self.sampler = None;
        } else if self.sampler.is_none() {
            self.sampler = Some(sampler::start(
                shared.admin.clone(),
                Arc::clone(&self.sampled),
                shared.sender.clone(),
            ));
        }
    }

    fn connection(
        &self,
        watch: WatchId,
        pick: impl Fn(&StreamKey) -> bool,
    ) -> Option<(String, state::Receiver<Connection>)> {
        self.streams
            .iter()
            .find(|(key, followed)| pick(key) && followed.watchers.contains(&watch))
            .map(|(key, followed)| (key.ws_url(), followed.connection.clone()))
    }
}

/// One consumer's share of what the observer follows. Everything it asked for is given back when it is dropped
/// (a stream or a read nobody else asks for stops).
pub struct Watch {
    id: WatchId,
    shared: Arc<Shared>,
    /// Foreign scrapes this watch started, stopped with it.
    scrapes: Mutex<Vec<OwnedTask<()>>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Watch {
    pub(super) fn new(shared: Arc<Shared>) -> Self {
        let id = {
            let mut registry = shared.registry.lock();
            registry.next_watch += 1;
            registry.next_watch
        };
        Watch {
            id,
            shared,
            scrapes: Mutex::new(Vec::new()),
        }
    }

    /// Follows `target` as this watch asks: replaces whatever it asked of the same label before (a target
    /// whose URL changed is followed at the new one).
    pub fn follow(&self, target: &Target) {
        let mut registry = self.shared.registry.lock();
        let label = &target.label;
        let stays = |key: &StreamKey| match key {
            StreamKey::Breakers { label: l, url } => {
                l == label && *url == target.url && target.follows.transitions
            }
            StreamKey::Agent { .. } => true,
        };
        registry.release_streams(self.id, |key| {
            matches!(key, StreamKey::Breakers { label: l, .. } if l == label) && !stays(key)
        });
        if target.follows.transitions {
            let key = StreamKey::Breakers {
                label: label.clone(),
                url: target.url.clone(),
            };
            registry.ask_stream(self.id, key, &self.shared);
        }
        registry.ask_samples(self.id, label, &target.url, target.follows, &self.shared);
    }

    /// Stops following `label` for this watch (a replica that is gone).
    pub fn unfollow(&self, label: &ServiceId) {
        let mut registry = self.shared.registry.lock();
        registry.release_streams(
            self.id,
            |key| matches!(key, StreamKey::Breakers { label: l, .. } if l == label),
        );
        registry.release_samples(self.id, Some(label));
    }

    /// Follows the agent's event stream at `agent_url` (base URL, `http://…`).
    pub fn follow_agent(&self, agent_url: &str) {
        let mut registry = self.shared.registry.lock();
        registry.release_streams(
            self.id,
            |key| matches!(key, StreamKey::Agent { url } if url != agent_url),
        );
        let key = StreamKey::Agent {
            url: agent_url.to_owned(),
        };
        registry.ask_stream(self.id, key, &self.shared);
    }

    /// Waits until `label`'s transition stream (followed by this watch) is up: `Ok` once it is, the error of the
    /// next attempt that fails otherwise. A label this watch does not follow the stream of is an error at once.
    pub async fn breakers_connected(&self, label: &ServiceId) -> Result<(), StreamUnavailable> {
        let found = self.shared.registry.lock().connection(
            self.id,
            |key| matches!(key, StreamKey::Breakers { label: l, .. } if l == label),
        );
        Self::wait(found, label.as_str()).await
    }

    /// As [`Watch::breakers_connected`], for the agent's stream.
    pub async fn agent_connected(&self) -> Result<(), StreamUnavailable> {
        let found = (self.shared.registry.lock())
            .connection(self.id, |key| matches!(key, StreamKey::Agent { .. }));
        Self::wait(found, "agent").await
    }

    async fn wait(
        found: Option<(String, state::Receiver<Connection>)>,
        what: &str,
    ) -> Result<(), StreamUnavailable> {
        match found {
            Some((_, connection)) => stream::connected(connection).await,
            None => Err(StreamUnavailable {
                url: format!("{what}: not followed"),
                source: Arc::new(tokio_tungstenite::tungstenite::Error::ConnectionClosed),
            }),
        }
    }

    /// Scrapes the `[[sources]]` entry `source` (its index `index` in the spec) for as long as this watch lives:
    /// the baseline now (a source that does not answer it is blind, not an error; one showing too many breakers
    /// is an error naming the source), then at its interval. Returns the tally of its scrapes from now on.
    pub async fn scrape(
        &self,
        index: usize,
        source: &ScrapeSpec,
    ) -> Result<Arc<Mutex<ScrapeTally>>, ScrapeError> {
        let tally = Arc::new(Mutex::new(ScrapeTally::new(
            source.source_name(),
            crate::clock::now_ms(),
        )));
        let task = foreign::start(
            index,
            source,
            self.shared.sender.clone(),
            Arc::clone(&tally),
        )
        .await?;
        self.scrapes.lock().push(task);
        Ok(tally)
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut registry = self.shared.registry.lock();
        registry.release_streams(self.id, |_| true);
        registry.release_samples(self.id, None);
    }
}
