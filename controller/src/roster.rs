//! The testbed's replicas as an orchestrator runs them: every running (ready) instance of a service — a swarm
//! task's container, a pod — under a replica label (`checkout`, `checkout#2`, …) that stays with the instance for
//! as long as it runs, and the changes between two looks at the orchestrator as [`ReplicaChange`]s.
//!
//! Why a roster and not a fresh numbering each time: a run stores a replica's transitions under its label, so a
//! label must not jump from one instance to another while both run. An instance keeps its label; a new instance
//! takes its orchestrator's slot when it has one (a swarm task's slot, free again once the task it replaces
//! died) or else the lowest number its service has free, and when that label was another instance's before in
//! this roster, the change is a [`ReplicaChange::Replaced`]: the lane goes on, and the timeline says who took
//! over. Pure: Swarm's polling and Kubernetes' pod watch both feed it what they see.

use std::collections::{BTreeMap, BTreeSet};

use crate::target::{ServiceId, ServiceIdError};

/// One running (ready) instance of a service, as the orchestrator lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The service it runs (`checkout`).
    pub service: String,
    /// What tells it apart for as long as it lives: a container id, a pod's uid.
    pub id: String,
    /// Its name for people: the container's or the pod's.
    pub name: String,
    /// Its base URL, `http://IP:PORT`.
    pub url: String,
    /// The orchestrator's replica number for it (a swarm task's slot), if it has one.
    pub slot: Option<u32>,
}

/// What changed between two looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaChange {
    /// A replica under a label no instance had in this roster.
    Added {
        label: ServiceId,
        instance: Instance,
    },
    /// A replica stopped running (or being ready); its label is free again.
    Removed { label: ServiceId, name: String },
    /// A new instance under the label another had: `previous` is that one's name.
    Replaced {
        label: ServiceId,
        previous: String,
        instance: Instance,
    },
}

impl ReplicaChange {
    /// The label the change is about.
    pub fn label(&self) -> &ServiceId {
        match self {
            ReplicaChange::Added { label, .. }
            | ReplicaChange::Removed { label, .. }
            | ReplicaChange::Replaced { label, .. } => label,
        }
    }

    /// The stored name of the change: `replica:added`, `replica:removed`, `replica:replaced`.
    pub fn event_name(&self) -> &'static str {
        match self {
            ReplicaChange::Added { .. } => "replica:added",
            ReplicaChange::Removed { .. } => "replica:removed",
            ReplicaChange::Replaced { .. } => "replica:replaced",
        }
    }
}

/// Who holds (or last held) a label.
#[derive(Debug, Clone)]
struct Holder {
    instance: Instance,
    running: bool,
}

/// The labels of every instance seen; see the module documentation.
#[derive(Debug, Clone, Default)]
pub struct Roster {
    by_label: BTreeMap<ServiceId, Holder>,
}

impl Roster {
    pub fn new() -> Self {
        Roster::default()
    }

    /// Takes the orchestrator's current list of running instances and returns what changed since the last one,
    /// removals first, then additions and replacements in service and label order. An instance whose service is
    /// not a valid name is an error naming it.
    pub fn update(&mut self, instances: &[Instance]) -> Result<Vec<ReplicaChange>, ServiceIdError> {
        let seen: BTreeSet<&str> = instances.iter().map(|i| i.id.as_str()).collect();
        let mut changes = Vec::new();
        for (label, holder) in &mut self.by_label {
            if holder.running && !seen.contains(holder.instance.id.as_str()) {
                holder.running = false;
                changes.push(ReplicaChange::Removed {
                    label: label.clone(),
                    name: holder.instance.name.clone(),
                });
            }
        }
        let mut newcomers: Vec<&Instance> = instances
            .iter()
            .filter(|instance| self.label_of(&instance.id).is_none())
            .collect();
        // Slots first, then names: the same list always gets the same labels.
        newcomers.sort_by(|a, b| {
            (&a.service, a.slot.is_none(), a.slot, &a.name).cmp(&(
                &b.service,
                b.slot.is_none(),
                b.slot,
                &b.name,
            ))
        });
        for instance in newcomers {
            let service = ServiceId::new(instance.service.as_str())?;
            let label = self.free_label(&service, instance.slot);
            let held = Holder {
                instance: instance.clone(),
                running: true,
            };
            let change = match self.by_label.insert(label.clone(), held) {
                Some(before) => ReplicaChange::Replaced {
                    label,
                    previous: before.instance.name,
                    instance: instance.clone(),
                },
                None => ReplicaChange::Added {
                    label,
                    instance: instance.clone(),
                },
            };
            changes.push(change);
        }
        Ok(changes)
    }

    /// Every running replica's label and base URL, in label order (`checkout` before `checkout#2`).
    pub fn running(&self) -> Vec<(ServiceId, String)> {
        self.by_label
            .iter()
            .filter(|(_, holder)| holder.running)
            .map(|(label, holder)| (label.clone(), holder.instance.url.clone()))
            .collect()
    }

    /// The running instance under `label`, if any.
    pub fn instance(&self, label: &str) -> Option<&Instance> {
        self.by_label
            .get(label)
            .filter(|holder| holder.running)
            .map(|holder| &holder.instance)
    }

    fn label_of(&self, id: &str) -> Option<&ServiceId> {
        self.by_label
            .iter()
            .find(|(_, holder)| holder.running && holder.instance.id == id)
            .map(|(label, _)| label)
    }

    fn is_free(&self, label: &ServiceId) -> bool {
        self.by_label
            .get(label)
            .is_none_or(|holder| !holder.running)
    }

    /// The slot's label when it is free, else the lowest free number of the service.
    fn free_label(&self, service: &ServiceId, slot: Option<u32>) -> ServiceId {
        if let Some(slot) = slot.filter(|slot| *slot >= 1) {
            let label = service.replica(slot);
            if self.is_free(&label) {
                return label;
            }
        }
        (1..)
            .map(|number| service.replica(number))
            .find(|label| self.is_free(label))
            .unwrap_or_else(|| service.clone())
    }
}

/// Updates `roster` (shared with the runs) with what an orchestrator's watch saw and sends each change on
/// `changes`; `what` names the watch in the logs. No receiver (between runs) is no error: the roster still
/// moves on.
pub fn publish(
    roster: &parking_lot::Mutex<Roster>,
    instances: &[Instance],
    changes: &tokio::sync::broadcast::Sender<ReplicaChange>,
    what: &str,
) {
    let seen = roster.lock().update(instances);
    match seen {
        Ok(seen) => {
            for change in seen {
                tracing::info!(label = %change.label(), event = change.event_name(), "{what} replica");
                let _ = changes.send(change);
            }
        }
        Err(error) => tracing::warn!(%error, "{what}: an instance's service"),
    }
}

/// A testbed's services (`(label, URL)`, as it was built) as they are now: a label the roster runs gets its
/// current URL, a further replica's label it no longer runs is left out, a label it runs that the testbed did
/// not have is added at the end (in label order). A plain service name the roster does not run stays as it was
/// (a run against it fails as it should).
pub fn current_services(
    services: &[(ServiceId, String)],
    running: &[(ServiceId, String)],
) -> Vec<(ServiceId, String)> {
    let now: BTreeMap<&ServiceId, &String> =
        running.iter().map(|(label, url)| (label, url)).collect();
    let mut current: Vec<(ServiceId, String)> = services
        .iter()
        .filter_map(|(label, url)| match now.get(label) {
            Some(url) => Some((label.clone(), (*url).clone())),
            None if label.is_replica() => None,
            None => Some((label.clone(), url.clone())),
        })
        .collect();
    for (label, url) in running {
        if !services.iter().any(|(known, _)| known == label) {
            current.push((label.clone(), url.clone()));
        }
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(service: &str, id: &str, slot: Option<u32>) -> Instance {
        Instance {
            service: service.into(),
            id: id.into(),
            name: format!("{service}-{id}"),
            url: format!("http://10.0.0.{}:8080", id.len()),
            slot,
        }
    }

    fn labels(changes: &[ReplicaChange]) -> Vec<(&'static str, &str)> {
        changes
            .iter()
            .map(|change| (change.event_name(), change.label().as_str()))
            .collect()
    }

    #[test]
    fn instances_without_slots_are_numbered_by_name_and_keep_their_labels() {
        let mut roster = Roster::new();
        let first = [
            instance("checkout", "b", None),
            instance("checkout", "a", None),
            instance("cart", "c", None),
        ];
        let changes = roster.update(&first).unwrap();
        assert_eq!(
            labels(&changes),
            [
                ("replica:added", "cart"),
                ("replica:added", "checkout"),
                ("replica:added", "checkout#2")
            ]
        );
        // `checkout-a` sorts first: it is `checkout`; a second look changes nothing.
        assert_eq!(roster.instance("checkout").unwrap().id, "a");
        assert!(roster.update(&first).unwrap().is_empty());
        // A third replica does not move the others.
        let mut more = first.to_vec();
        more.insert(0, instance("checkout", "0", None));
        assert_eq!(
            labels(&roster.update(&more).unwrap()),
            [("replica:added", "checkout#3")]
        );
        assert_eq!(roster.instance("checkout#3").unwrap().id, "0");
    }

    #[test]
    fn a_pod_that_replaces_another_takes_its_label_and_says_whom_it_replaced() {
        let mut roster = Roster::new();
        roster
            .update(&[
                instance("checkout", "a", None),
                instance("checkout", "b", None),
            ])
            .unwrap();
        let changes = roster.update(&[instance("checkout", "a", None)]).unwrap();
        assert_eq!(
            changes,
            [ReplicaChange::Removed {
                label: ServiceId::new("checkout#2").unwrap(),
                name: "checkout-b".into()
            }]
        );
        let replacement = instance("checkout", "c", None);
        let changes = roster
            .update(&[instance("checkout", "a", None), replacement.clone()])
            .unwrap();
        assert_eq!(
            changes,
            [ReplicaChange::Replaced {
                label: ServiceId::new("checkout#2").unwrap(),
                previous: "checkout-b".into(),
                instance: replacement,
            }]
        );
        assert_eq!(
            roster.running(),
            [
                (
                    ServiceId::new("checkout").unwrap(),
                    "http://10.0.0.1:8080".into()
                ),
                (
                    ServiceId::new("checkout#2").unwrap(),
                    "http://10.0.0.1:8080".into()
                )
            ]
        );
    }

    #[test]
    fn a_swarm_task_takes_its_slot_and_a_replacement_in_the_same_look_replaces() {
        let mut roster = Roster::new();
        let changes = roster
            .update(&[
                instance("checkout", "t3", Some(3)),
                instance("checkout", "t1", Some(1)),
                instance("checkout", "t2", Some(2)),
            ])
            .unwrap();
        assert_eq!(
            labels(&changes),
            [
                ("replica:added", "checkout"),
                ("replica:added", "checkout#2"),
                ("replica:added", "checkout#3")
            ]
        );
        assert_eq!(roster.instance("checkout#3").unwrap().id, "t3");
        // Task t2 died and t2b runs in its slot before the next look: removed, then replaced.
        let changes = roster
            .update(&[
                instance("checkout", "t1", Some(1)),
                instance("checkout", "t2b", Some(2)),
                instance("checkout", "t3", Some(3)),
            ])
            .unwrap();
        assert_eq!(
            labels(&changes),
            [
                ("replica:removed", "checkout#2"),
                ("replica:replaced", "checkout#2")
            ]
        );
        assert_eq!(roster.instance("checkout#2").unwrap().id, "t2b");
    }

    #[test]
    fn a_slot_held_by_a_running_instance_gives_the_newcomer_the_lowest_free_number() {
        let mut roster = Roster::new();
        roster
            .update(&[instance("ad", "x", Some(1)), instance("ad", "y", Some(1))])
            .unwrap();
        assert_eq!(roster.instance("ad").unwrap().id, "x");
        assert_eq!(roster.instance("ad#2").unwrap().id, "y");
    }

    #[test]
    fn the_testbeds_services_follow_the_roster_between_runs() {
        let id = |label: &str| ServiceId::new(label).unwrap();
        let entry = |label: &str, url: &str| (id(label), url.to_owned());
        let built = [
            entry("cart", "http://cart:8080"),
            entry("checkout", "http://10.0.0.3:8080"),
            entry("checkout#2", "http://10.0.0.4:8080"),
            entry("checkout#3", "http://10.0.0.5:8080"),
        ];
        let running = [
            entry("checkout", "http://10.0.0.3:8080"),
            entry("checkout#2", "http://10.0.0.9:8080"),
            entry("checkout#4", "http://10.0.0.7:8080"),
        ];
        assert_eq!(
            current_services(&built, &running),
            [
                entry("cart", "http://cart:8080"),
                entry("checkout", "http://10.0.0.3:8080"),
                entry("checkout#2", "http://10.0.0.9:8080"),
                entry("checkout#4", "http://10.0.0.7:8080"),
            ]
        );
    }

    #[test]
    fn a_service_that_is_no_service_name_is_an_error_naming_it() {
        let error = Roster::new()
            .update(&[instance("check out", "a", None)])
            .unwrap_err();
        assert!(error.to_string().contains("check out"), "{error}");
    }
}
