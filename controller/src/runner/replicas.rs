//! Replicas that come and go during a run — an orchestrator replacing a killed swarm task or a deleted pod, a
//! rolling update: every change the testbed's watch sends is recorded on the run's timeline
//! (`replica:added`, `replica:removed`, `replica:replaced`, with the replica's label and who it was), and each
//! new replica's `/_breakers/stream` is followed under its label from then on, into the run's transitions. A
//! removed replica's reader is stopped; a replacement's reader takes over its label.
//!
//! The watch is the orchestrator's (`docker::swarm::spawn_watch`, `kubernetes::watch`): this only consumes
//! [`ReplicaChange`]s from a broadcast, so the runner knows nothing of where they came from.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::task::{AbortHandle, JoinSet};

use super::scope::fault_event;
use super::task::RunTask;
use super::transitions::{read_transitions, subscribe};
use crate::roster::ReplicaChange;
use crate::store::{FaultEvent, FaultEventRecord, TransitionRecord};
use crate::target::ServiceId;

/// How long a new replica's stream is tried for (a task runs before its service listens).
const SUBSCRIBE_FOR: Duration = Duration::from_secs(20);
/// Pause between two tries.
const SUBSCRIBE_RETRY: Duration = Duration::from_millis(250);

/// The event and detail a change is recorded as.
pub fn change_event(change: &ReplicaChange) -> (FaultEvent, serde_json::Value) {
    match change {
        ReplicaChange::Added { label, instance } => (
            FaultEvent::ReplicaAdded,
            json!({ "replica": label, "instance": instance.name, "url": instance.url }),
        ),
        ReplicaChange::Removed { label, name } => (
            FaultEvent::ReplicaRemoved,
            json!({ "replica": label, "instance": name }),
        ),
        ReplicaChange::Replaced {
            label,
            previous,
            instance,
        } => (
            FaultEvent::ReplicaReplaced,
            json!({
                "replica": label,
                "previous": previous,
                "instance": instance.name,
                "url": instance.url,
            }),
        ),
    }
}

/// Follows the replica changes of a run until stopped (or dropped).
pub struct ReplicaFollower {
    task: RunTask<()>,
}

impl ReplicaFollower {
    /// Records every change from `changes` into `events` and follows each new replica's transitions into
    /// `transitions`.
    pub fn start(
        mut changes: broadcast::Receiver<ReplicaChange>,
        transitions: Arc<Mutex<Vec<TransitionRecord>>>,
        events: Arc<Mutex<Vec<FaultEventRecord>>>,
    ) -> Self {
        let task = RunTask::spawn(async move {
            let mut readers = JoinSet::new();
            let mut by_label: HashMap<ServiceId, AbortHandle> = HashMap::new();
            loop {
                let change = match changes.recv().await {
                    Ok(change) => change,
                    Err(broadcast::error::RecvError::Lagged(skipped)) => {
                        tracing::warn!(skipped, "replica changes skipped (a slow run)");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let (event, detail) = change_event(&change);
                let label = change.label().clone();
                events
                    .lock()
                    .push(fault_event(event, label.as_str(), detail));
                if let Some(reader) = by_label.remove(&label) {
                    reader.abort();
                }
                let url = match &change {
                    ReplicaChange::Added { instance, .. }
                    | ReplicaChange::Replaced { instance, .. } => instance.url.clone(),
                    ReplicaChange::Removed { .. } => continue,
                };
                let (transitions, events) = (Arc::clone(&transitions), Arc::clone(&events));
                let reader = readers.spawn(follow(label.clone(), url, transitions, events));
                by_label.insert(label, reader);
                // Readers that ended are let go of as the run goes.
                while readers.try_join_next().is_some() {}
            }
            // Dropping `readers` stops every reader still following.
        });
        ReplicaFollower { task }
    }

    /// Stops following; the message of a panic, if the follower had one.
    pub async fn stop(self) -> Option<String> {
        self.task.stop().await
    }
}

/// Subscribes to the replica's stream (tried for [`SUBSCRIBE_FOR`]), records whether it opened, and reads it to
/// its end.
async fn follow(
    label: ServiceId,
    url: String,
    transitions: Arc<Mutex<Vec<TransitionRecord>>>,
    events: Arc<Mutex<Vec<FaultEventRecord>>>,
) {
    let deadline = tokio::time::Instant::now() + SUBSCRIBE_FOR;
    let stream = loop {
        match subscribe(&url, "/_breakers/stream").await {
            Ok(stream) => break stream,
            Err(error) if tokio::time::Instant::now() >= deadline => {
                events.lock().push(fault_event(
                    FaultEvent::ReplicaFollowFailed,
                    label.as_str(),
                    json!({ "replica": label, "url": url, "error": error.to_string() }),
                ));
                return;
            }
            Err(_) => tokio::time::sleep(SUBSCRIBE_RETRY).await,
        }
    };
    events.lock().push(fault_event(
        FaultEvent::ReplicaFollowed,
        label.as_str(),
        json!({ "replica": label, "url": url }),
    ));
    read_transitions(stream, label, transitions).await;
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
        let (event, detail) = change_event(&ReplicaChange::Replaced {
            label: label.clone(),
            previous: "shop_checkout.2.old".into(),
            instance: instance.clone(),
        });
        assert_eq!(event, FaultEvent::ReplicaReplaced);
        assert_eq!(
            detail,
            json!({
                "replica": "checkout#2",
                "previous": "shop_checkout.2.old",
                "instance": "shop_checkout.2.new",
                "url": "http://10.0.0.9:8080",
            })
        );
        let (event, detail) = change_event(&ReplicaChange::Removed {
            label: label.clone(),
            name: "shop_checkout.2.old".into(),
        });
        assert_eq!(event, FaultEvent::ReplicaRemoved);
        assert_eq!(detail["instance"], "shop_checkout.2.old");
        let (event, _) = change_event(&ReplicaChange::Added { label, instance });
        assert_eq!(event, FaultEvent::ReplicaAdded);
    }
}
