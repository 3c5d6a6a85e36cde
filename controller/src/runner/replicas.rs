//! Replicas that come and go during a run — an orchestrator replacing a killed swarm task or a deleted pod, a
//! rolling update: every change the testbed's watch sends is recorded on the run's timeline
//! (`replica:added`, `replica:removed`, `replica:replaced`, with the replica's label and who it was), and the run's
//! own [`Watch`] on the observer is changed to match — a new replica's label followed at its URL (its
//! `/_breakers/stream`, and its pool and `/metrics` where its service offers them), a replacement's label moved
//! to the new URL, a removed one given back. The run's recorder takes the new labels on
//! ([`JoinedLabels`]), so what the observer sees of them is the run's. Whether a new replica's stream opened
//! within [`CONNECT_WITHIN`] is recorded too (`replica:followed`, `replica:follow_failed`; the observer goes on
//! trying either way). A new replica of a service the run pushed a breaker config to takes that config under the
//! run's lease ([`BreakerJoiner`]) and is renewed and restored with the others; one that never takes it within
//! [`CONNECT_WITHIN`] is recorded (`breakers:join_failed`).
//!
//! The watch is the orchestrator's (`docker::swarm::spawn_watch`, `kubernetes::watch`): this only consumes
//! [`ReplicaChange`]s from a broadcast, so the runner knows nothing of where they came from.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::broadcast;
use tokio::task::JoinSet;

use super::recorder::JoinedLabels;
use crate::lease::breakers::BreakerJoiner;
use crate::lease::recorded;
use crate::observe::{Follows, Target, Watch};
use crate::roster::ReplicaChange;
use crate::spec::Offers;
use crate::store::{
    ReplicaEvent, ReplicaGone, ReplicaReplacement, ReplicaSeen, ReplicaStream, ReplicaStreamFailed,
    RunEvent, RunEventRecord,
};
use crate::target::ServiceId;
use crate::task::OwnedTask;

/// How long a new replica's stream is waited for before `replica:follow_failed` is recorded (a task runs
/// before its service listens).
pub const CONNECT_WITHIN: Duration = Duration::from_secs(20);

/// What a change is recorded as.
pub fn change_event(change: &ReplicaChange) -> RunEvent {
    RunEvent::Replica(match change {
        ReplicaChange::Added { label, instance } => ReplicaEvent::Added(ReplicaSeen {
            replica: label.to_string(),
            instance: instance.name.clone(),
            url: instance.url.clone(),
        }),
        ReplicaChange::Removed { label, name } => ReplicaEvent::Removed(ReplicaGone {
            replica: label.to_string(),
            instance: name.clone(),
        }),
        ReplicaChange::Replaced {
            label,
            previous,
            instance,
        } => ReplicaEvent::Replaced(ReplicaReplacement {
            replica: label.to_string(),
            previous: previous.clone(),
            instance: instance.name.clone(),
            url: instance.url.clone(),
        }),
    })
}

/// What the run follows of a replica, by its service: what the service offers (its transitions, its pool and
/// `/metrics`; carts are sampled of one label only, the testbed's).
#[derive(Debug, Clone, Default)]
pub struct ServiceFollows {
    by_service: BTreeMap<String, Follows>,
}

impl ServiceFollows {
    /// What `offers_of` says of each of `services`; a service not among them is followed for its transitions.
    pub fn new<'a>(
        services: impl IntoIterator<Item = &'a ServiceId>,
        offers_of: &(dyn Fn(&str) -> Offers + Sync),
    ) -> Self {
        let by_service = services
            .into_iter()
            .map(|label| {
                let offers = offers_of(label.service());
                let follows = Follows {
                    transitions: offers.breaker_stream,
                    pool: offers.pool,
                    metrics: offers.pool,
                    ..Follows::default()
                };
                (label.service().to_owned(), follows)
            })
            .collect();
        ServiceFollows { by_service }
    }

    /// What is followed of `label`.
    pub fn of(&self, label: &ServiceId) -> Follows {
        self.by_service
            .get(label.service())
            .copied()
            .unwrap_or(Follows {
                transitions: true,
                ..Follows::default()
            })
    }
}

/// Follows the replica changes of a run until stopped (or dropped).
pub struct ReplicaFollower {
    task: OwnedTask<()>,
}

impl ReplicaFollower {
    /// Records every change from `changes` into `events` and changes `watch` (and the labels `joined` records)
    /// to match; see the module documentation.
    pub fn start(
        mut changes: broadcast::Receiver<ReplicaChange>,
        watch: Arc<Watch>,
        joined: JoinedLabels,
        follows: ServiceFollows,
        breakers: Option<BreakerJoiner>,
        events: Arc<Mutex<Vec<RunEventRecord>>>,
    ) -> Self {
        let task = OwnedTask::spawn(async move {
            // One wait per replica stream that was followed; dropped with the task.
            let mut connecting = JoinSet::new();
            loop {
                let change = match changes.recv().await {
                    Ok(change) => change,
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::warn!(skipped, "replica changes skipped (a slow run)");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let label = change.label().clone();
                events
                    .lock()
                    .push(recorded(label.as_str(), change_event(&change)));
                let instance = match &change {
                    ReplicaChange::Added { instance, .. }
                    | ReplicaChange::Replaced { instance, .. } => instance,
                    ReplicaChange::Removed { .. } => {
                        watch.unfollow(&label);
                        if let Some(breakers) = &breakers {
                            breakers.leave(&label);
                        }
                        continue;
                    }
                };
                if let Some(breakers) = &breakers {
                    let (breakers, label, url) =
                        (breakers.clone(), label.clone(), instance.url.clone());
                    connecting.spawn(async move {
                        breakers.join(&label, &url, CONNECT_WITHIN).await;
                    });
                }
                let target = Target {
                    label: label.clone(),
                    url: instance.url.clone(),
                    follows: follows.of(&label),
                };
                joined.add(label.clone(), target.follows.pool);
                watch.follow(&target);
                if target.follows.transitions {
                    connecting.spawn(record_connection(
                        Arc::clone(&watch),
                        target,
                        Arc::clone(&events),
                    ));
                }
                // Waits that ended are let go of as the run goes.
                while connecting.try_join_next().is_some() {}
            }
        });
        ReplicaFollower { task }
    }

    /// Stops following changes (what was followed stays followed until the run's watch is given back); the
    /// message of a panic, if the follower had one.
    pub async fn stop(self) -> Option<String> {
        self.task.stop().await
    }
}

/// Waits (at most [`CONNECT_WITHIN`]) for the observer to have `target`'s stream up, and records whether it did.
async fn record_connection(
    watch: Arc<Watch>,
    target: Target,
    events: Arc<Mutex<Vec<RunEventRecord>>>,
) {
    let deadline = tokio::time::Instant::now() + CONNECT_WITHIN;
    let replica = target.label.to_string();
    let outcome = loop {
        // Each wait ends when the stream is up or its next attempt failed: tried again until the deadline.
        let attempt =
            tokio::time::timeout_at(deadline, watch.breakers_connected(&target.label)).await;
        match attempt {
            Ok(Ok(())) => {
                break ReplicaEvent::Followed(ReplicaStream {
                    replica,
                    url: target.url,
                });
            }
            Ok(Err(error)) if tokio::time::Instant::now() < deadline => {
                tracing::debug!(%error, replica, "a new replica's stream not up yet");
                tokio::time::sleep(crate::observe::RECONNECT_AFTER / 4).await;
            }
            Ok(Err(error)) => {
                break ReplicaEvent::FollowFailed(ReplicaStreamFailed {
                    replica,
                    url: target.url,
                    error: error.to_string(),
                });
            }
            Err(_) => {
                break ReplicaEvent::FollowFailed(ReplicaStreamFailed {
                    replica,
                    url: target.url,
                    error: format!("not connected within {CONNECT_WITHIN:?}"),
                });
            }
        }
    };
    let label = target.label;
    events
        .lock()
        .push(recorded(label.as_str(), RunEvent::Replica(outcome)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roster::Instance;

    #[test]
    fn each_change_is_recorded_under_its_own_event_with_who_it_was() {
        let instance = Instance {
            service: "checkout".into(),
            id: "c2".into(),
            name: "shop_checkout.2.new".into(),
            url: "http://10.0.0.9:8080".into(),
            slot: Some(2),
        };
        let label = ServiceId::new("checkout#2").unwrap();
        let replaced = change_event(&ReplicaChange::Replaced {
            label: label.clone(),
            previous: "shop_checkout.2.old".into(),
            instance: instance.clone(),
        });
        assert_eq!(replaced.kind().as_str(), "replica:replaced");
        assert_eq!(
            replaced.detail_json(),
            serde_json::json!({
                "replica": "checkout#2",
                "previous": "shop_checkout.2.old",
                "instance": "shop_checkout.2.new",
                "url": "http://10.0.0.9:8080",
            })
        );
        let removed = change_event(&ReplicaChange::Removed {
            label: label.clone(),
            name: "shop_checkout.2.old".into(),
        });
        assert_eq!(removed.kind().as_str(), "replica:removed");
        assert_eq!(removed.detail_json()["instance"], "shop_checkout.2.old");
        let added = change_event(&ReplicaChange::Added { label, instance });
        assert_eq!(added.kind().as_str(), "replica:added");
    }

    #[test]
    fn a_replica_is_followed_for_what_its_service_offers() {
        let services = [
            ServiceId::new("checkout").unwrap(),
            ServiceId::new("cart").unwrap(),
        ];
        let offers_of = |name: &str| Offers {
            pool: name == "checkout",
            ..Offers::tolerant_service(name)
        };
        let follows = ServiceFollows::new(&services, &offers_of);
        let of = |label: &str| follows.of(&ServiceId::new(label).unwrap());
        let checkout = of("checkout#3");
        assert!(checkout.transitions && checkout.pool && checkout.metrics && !checkout.cart);
        let cart = of("cart#2");
        assert!(cart.transitions && !cart.pool && !cart.cart);
        // A service the testbed did not have: its transitions only.
        assert_eq!(
            of("ad#2"),
            Follows {
                transitions: true,
                ..Follows::default()
            }
        );
    }
}
