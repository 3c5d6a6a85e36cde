//! The live page's share of the observer: the dashboard follows every service of the testbed (its transitions,
//! pool, breakers; Cart's sizes; the frontend's `/metrics`) and the agent's stream for as long as its feeds run,
//! and publishes everything the observer sees to the hub — transitions (the testbed's and foreign breakers'),
//! the agent's fault changes, and each sample as the live sample. A run in the same process watches through the
//! same observer, so the testbed is followed and polled once whoever watches. On an orchestrator (Swarm,
//! Kubernetes) the watch follows its replica changes: a new replica followed like the others, a replacement's
//! label moved to its new address, a gone one given back.

use std::sync::Arc;

use agent::api::{AgentEvent, FaultKind, format_duration};
use controller::observe::{Follows, Observation, Observations, Received, Target, Watch};
use controller::roster::ReplicaChange;
use controller::target::ServiceId;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

use super::sampling::LiveSampling;
use super::{AGENT_SERVICE, EmbeddedOperations};

use crate::hub::{FaultChange, FaultChangeEvent, LiveEvent};

impl EmbeddedOperations {
    /// Follows the testbed through the observer and publishes what it sees into the hub until the returned
    /// tasks are aborted (the observer then stops following what only the dashboard asked for).
    pub fn spawn_live_feeds(&self) -> Vec<JoinHandle<()>> {
        let observer = &self.inner.observer;
        // Subscribed before anything is followed: nothing sent from the first connection on is missed.
        let observations = observer.subscribe();
        let watch = Arc::new(observer.watch());
        // Changes taken from before the roster is read: none falls between the two.
        let replicas = (self.inner.orchestrator.replicas.as_ref())
            .map(|(changes, roster)| (changes.subscribe(), roster.lock().running()));
        let services = match &replicas {
            Some((_, running)) => {
                controller::roster::current_services(&self.inner.testbed.services, running)
            }
            None => self.inner.testbed.services.clone(),
        };
        for (label, url) in services {
            watch.follow(&live_target(label, url));
        }
        watch.follow_agent(&self.inner.testbed.agent);
        let operations = self.clone();
        let mut tasks = vec![tokio::spawn({
            // Held while the feed runs: aborting the task gives the watch back.
            let watch = Arc::clone(&watch);
            async move {
                let _watch = watch;
                operations.publish_observations(observations).await;
            }
        })];
        if let Some((changes, _)) = replicas {
            tasks.push(tokio::spawn(follow_replicas(changes, watch)));
        }
        if self.inner.containers.is_some() {
            let operations = self.clone();
            tasks.push(tokio::spawn(async move {
                operations.sample_containers_forever().await
            }));
        }
        tasks
    }

    /// Publishes every observation into the hub, in the order the observer saw them.
    async fn publish_observations(&self, mut observations: Observations) {
        let hub = &self.inner.hub;
        let mut live = LiveSampling::default();
        while let Some(received) = observations.next().await {
            match received {
                Received::Gap { missed } => {
                    tracing::warn!(missed, "the live page fell behind the observer");
                }
                Received::Observation(Observation::Transition { event, .. })
                | Received::Observation(Observation::Foreign(event)) => {
                    hub.publish(LiveEvent::Transition(event));
                }
                Received::Observation(Observation::Agent(seen)) => {
                    if let Some(change) = fault_change(seen.event) {
                        hub.publish(LiveEvent::Fault(change));
                    }
                }
                Received::Observation(Observation::Sample(sample)) => {
                    self.publish_sample(&mut live, &sample).await;
                }
                Received::Observation(Observation::ScrapeFailed { source, error, .. }) => {
                    tracing::warn!(%source, %error, "a foreign source's scrape failed");
                }
            }
        }
    }
}

/// What the live page follows of a testbed's service or replica.
fn live_target(label: ServiceId, url: String) -> Target {
    let follows = Follows {
        transitions: true,
        pool: true,
        breakers: true,
        cart: label == "cart",
        metrics: label == "frontend",
    };
    Target {
        label,
        url,
        follows,
    }
}

/// Changes `watch` as the orchestrator's replicas change, until the changes end (or the task is aborted).
async fn follow_replicas(mut changes: broadcast::Receiver<ReplicaChange>, watch: Arc<Watch>) {
    loop {
        match changes.recv().await {
            Ok(ReplicaChange::Added { label, instance })
            | Ok(ReplicaChange::Replaced {
                label, instance, ..
            }) => watch.follow(&live_target(label, instance.url)),
            Ok(ReplicaChange::Removed { label, .. }) => watch.unfollow(&label),
            Err(broadcast::error::RecvError::Lagged(skipped)) => {
                tracing::warn!(skipped, "the live page skipped replica changes");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// An agent event as a fault change (`None` for `lagged`).
fn fault_change(event: AgentEvent) -> Option<FaultChange> {
    let change = |event: FaultChangeEvent, id: String, at_ms: u64| FaultChange {
        at_ms,
        event,
        fault_id: id,
        target: AGENT_SERVICE.into(),
        kind: String::new(),
        rate: 0.0,
        detail: String::new(),
        matches: String::new(),
        expires_at_ms: None,
    };
    Some(match event {
        AgentEvent::Applied {
            id,
            fault,
            lease_ms,
            renewed,
            at_ms,
            ..
        } => FaultChange {
            kind: fault.kind().name().to_owned(),
            rate: fault.rate(),
            detail: match fault.kind() {
                FaultKind::Error { status, .. } => format!("status {status}"),
                FaultKind::Delay { delay, .. } => format!("delay {}", format_duration(*delay)),
                FaultKind::Hang | FaultKind::Reset => String::new(),
            },
            matches: match (
                fault.matcher().method.as_deref().unwrap_or(""),
                fault.matcher().path_prefix.as_deref().unwrap_or(""),
            ) {
                ("", "") => "every request".to_owned(),
                (method, "") => format!("{method} requests"),
                (method, path) => format!("{method} {path}…").trim_start().to_owned(),
            },
            expires_at_ms: Some(at_ms + lease_ms),
            ..change(
                if renewed {
                    FaultChangeEvent::Renewed
                } else {
                    FaultChangeEvent::Applied
                },
                id,
                at_ms,
            )
        },
        AgentEvent::Expired { id, at_ms, .. } => change(FaultChangeEvent::Expired, id, at_ms),
        AgentEvent::Removed { id, at_ms, .. } => change(FaultChangeEvent::Removed, id, at_ms),
        AgentEvent::Lagged { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The live page's watch follows an orchestrator's replicas: a new one followed (stream and samples), a gone
    /// one given back, a replacement followed under the same label.
    #[tokio::test]
    async fn the_live_watch_follows_replicas_as_they_come_and_go() {
        let observer =
            controller::observe::Observer::new(controller::testbed::AdminClient::new("t"));
        let watch = Arc::new(observer.watch());
        let (changes, receiver) = broadcast::channel(8);
        let following = tokio::spawn(follow_replicas(receiver, Arc::clone(&watch)));
        let label = ServiceId::new("checkout#2").unwrap();
        // Nothing listens there: the observer keeps trying, which is all this needs.
        let instance = |id: &str, port: u16| controller::roster::Instance {
            service: "checkout".into(),
            id: id.into(),
            name: format!("shop_checkout.2.{id}"),
            url: format!("http://127.0.0.1:{port}"),
            slot: Some(2),
        };
        let followed = || async {
            // The follower takes the change in its own task: give it a moment, bounded.
            for _ in 0..200 {
                tokio::task::yield_now().await;
            }
            observer.followed()
        };
        changes
            .send(ReplicaChange::Added {
                label: label.clone(),
                instance: instance("a", 9),
            })
            .unwrap();
        let (streams, sampled) = followed().await;
        assert!(
            streams.contains(&"breakers:checkout#2".to_owned()),
            "{streams:?}"
        );
        assert!(sampled.contains(&"checkout#2".to_owned()), "{sampled:?}");
        changes
            .send(ReplicaChange::Replaced {
                label: label.clone(),
                previous: "shop_checkout.2.a".into(),
                instance: instance("b", 10),
            })
            .unwrap();
        let (streams, _) = followed().await;
        assert_eq!(
            (streams.iter())
                .filter(|s| *s == "breakers:checkout#2")
                .count(),
            1,
            "{streams:?}"
        );
        changes
            .send(ReplicaChange::Removed {
                label,
                name: "shop_checkout.2.b".into(),
            })
            .unwrap();
        let (streams, sampled) = followed().await;
        assert!(
            !streams.contains(&"breakers:checkout#2".to_owned()),
            "{streams:?}"
        );
        assert!(!sampled.contains(&"checkout#2".to_owned()), "{sampled:?}");
        drop(changes);
        following.await.expect("the follower ends with its changes");
    }

    fn fault_change_of(text: &str) -> Option<FaultChange> {
        fault_change(serde_json::from_str(text).expect("an agent event"))
    }

    #[test]
    fn agent_events_become_fault_changes() {
        let applied = r#"{"event":"applied","id":"f","fault":{"kind":"error","status":500,"rate":0.5},"lease_ms":30000,"at_ms":9,"seq":1}"#;
        let change = fault_change_of(applied).expect("applied");
        assert_eq!(
            (change.event.as_str(), change.rate, change.kind.as_str()),
            ("applied", 0.5, "error")
        );
        assert!(change.is_active());
        assert_eq!(
            (
                change.detail.as_str(),
                change.matches.as_str(),
                change.expires_at_ms
            ),
            ("status 500", "every request", Some(30_009))
        );
        let matched = r#"{"event":"applied","id":"d","fault":{"kind":"delay","delay":"800ms","rate":1.0,"match":{"method":"POST","path_prefix":"/charge"}},"lease_ms":5000,"at_ms":1,"seq":3}"#;
        let change = fault_change_of(matched).expect("applied");
        assert_eq!(
            (change.detail.as_str(), change.matches.as_str()),
            ("delay 800ms", "POST /charge…")
        );
        let removed = r#"{"event":"removed","id":"f","reason":"deleted","at_ms":10,"seq":2}"#;
        let change = fault_change_of(removed).expect("removed");
        assert!(!change.is_active());
        assert!(fault_change_of(r#"{"event":"lagged","missed":3}"#).is_none());
    }
}
