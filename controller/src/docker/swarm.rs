//! A Docker Swarm stack (`docker stack deploy -c FILE STACK`) on this node's engine: its running tasks found by
//! the labels swarm puts on their containers (`com.docker.stack.namespace`, the service's name, the task's name
//! with its slot), each a [`StackContainer`] numbered by its slot, so a replica's label (`checkout#2`) is its
//! slot's and a task the orchestrator starts in place of a dead one takes the same label.
//!
//! What is seen is the node's own containers: a task scheduled on another node of a multi-node swarm is not
//! (the engine's task list carries no addresses in bollard's model, and the container faults act through this
//! engine anyway). Addresses: overlay networks are left out, since the host cannot reach them; a stack that is
//! driven from the host attaches its services to a swarm-scoped bridge network as well (see the README), and
//! that address is the one followed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bollard::container::ListContainersOptions;
use bollard::models::LocalNodeState;
use bollard::network::ListNetworksOptions;
use parking_lot::Mutex;
use tokio::sync::broadcast;

use super::{DockerError, Engine, StackContainer};
use crate::roster::{Instance, ReplicaChange, Roster};

/// The stack a swarm container belongs to.
pub const STACK_LABEL: &str = "com.docker.stack.namespace";
/// The swarm service a container's task runs (`STACK_checkout`).
pub const SWARM_SERVICE_LABEL: &str = "com.docker.swarm.service.name";
/// The task's name: `STACK_checkout.2.TASKID`, its slot in the middle.
pub const TASK_NAME_LABEL: &str = "com.docker.swarm.task.name";
/// Present on every container a swarm task runs.
pub const TASK_ID_LABEL: &str = "com.docker.swarm.task.id";

/// The service of stack `stack` a swarm container runs and its slot, from its labels: `STACK_checkout` and
/// `STACK_checkout.2.x` give `("checkout", 2)`. `None` for a container of another stack or no stack.
pub fn service_and_slot(stack: &str, labels: &HashMap<String, String>) -> Option<(String, u32)> {
    if labels.get(STACK_LABEL)? != stack {
        return None;
    }
    let full = labels.get(SWARM_SERVICE_LABEL)?;
    let service = full
        .strip_prefix(stack)
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or(full);
    let slot = labels
        .get(TASK_NAME_LABEL)
        .and_then(|task| task.strip_prefix(full.as_str()))
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|rest| rest.split('.').next())
        .and_then(|slot| slot.parse().ok())
        .unwrap_or(1);
    Some((service.to_owned(), slot))
}

impl Engine {
    /// Whether this engine is a swarm node (`docker swarm init` or `join` ran).
    pub async fn in_swarm(&self) -> Result<bool, DockerError> {
        let info = self
            .docker
            .info()
            .await
            .map_err(|source| self.failed("info", "", source))?;
        Ok(info
            .swarm
            .and_then(|swarm| swarm.local_node_state)
            .is_some_and(|state| state == LocalNodeState::ACTIVE))
    }

    /// Every running task container of swarm stack `stack` on this node, by service then slot, without their
    /// overlay addresses (see the module documentation). An engine not in swarm mode is an error saying so.
    pub async fn swarm_stack(&self, stack: &str) -> Result<Vec<StackContainer>, DockerError> {
        if !self.in_swarm().await? {
            return Err(DockerError::Invalid {
                field: "--swarm".into(),
                message: format!(
                    "the engine at {} is not in swarm mode (docker swarm init)",
                    self.socket
                ),
            });
        }
        let overlays: BTreeSet<String> = self
            .docker
            .list_networks(Some(ListNetworksOptions {
                filters: HashMap::from([("driver", vec!["overlay"])]),
            }))
            .await
            .map_err(|source| self.failed("list networks", stack, source))?
            .into_iter()
            .filter_map(|network| network.name)
            .collect();
        let filters = HashMap::from([("label".to_owned(), vec![format!("{STACK_LABEL}={stack}")])]);
        let summaries = self
            .docker
            .list_containers(Some(ListContainersOptions {
                all: false,
                filters,
                ..ListContainersOptions::default()
            }))
            .await
            .map_err(|source| self.failed("list containers of stack", stack, source))?;
        let mut containers: Vec<StackContainer> = summaries
            .into_iter()
            .filter_map(|summary| {
                StackContainer::from_labelled(summary, |labels| service_and_slot(stack, labels))
            })
            .map(|mut container| {
                container
                    .addresses
                    .retain(|network, _| !overlays.contains(network));
                container
            })
            .collect();
        containers.sort_by(|a, b| (&a.service, a.number).cmp(&(&b.service, b.number)));
        Ok(containers)
    }

    /// Whether container `container` runs a swarm task (its orchestrator, not an undo, restarts it).
    pub async fn is_swarm_task(&self, container: &str) -> Result<bool, DockerError> {
        let inspected = self
            .docker
            .inspect_container(container, None)
            .await
            .map_err(|source| self.failed("inspect", container, source))?;
        Ok(inspected
            .config
            .and_then(|config| config.labels)
            .is_some_and(|labels| labels.contains_key(TASK_ID_LABEL)))
    }
}

/// The running containers of a stack as roster instances: every one with an address, at `port`.
pub fn instances(containers: &[StackContainer], port: u16) -> Vec<Instance> {
    containers
        .iter()
        .filter(|container| container.state == "running")
        .filter_map(|container| {
            Some(Instance {
                service: container.service.clone(),
                id: container.id.clone(),
                name: container.name.clone(),
                url: format!(
                    "http://{}",
                    std::net::SocketAddr::new(container.address()?, port)
                ),
                slot: Some(container.number),
            })
        })
        .collect()
}

/// Looks at stack `stack` every `period`, keeps `roster` (which holds the replicas the testbed was built from)
/// up to date and sends what changed on `changes`, until the handle is aborted. An engine error is logged and
/// the next look tried.
pub fn spawn_watch(
    engine: Engine,
    stack: String,
    port: u16,
    roster: Arc<Mutex<Roster>>,
    period: Duration,
    changes: broadcast::Sender<ReplicaChange>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let containers = match engine.swarm_stack(&stack).await {
                Ok(containers) => containers,
                Err(error) => {
                    tracing::warn!(%error, "looking at the swarm stack");
                    continue;
                }
            };
            crate::roster::publish(&roster, &instances(&containers, port), &changes, "swarm");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn a_task_container_gives_its_service_without_the_stack_and_its_slot() {
        let task = labels(&[
            (STACK_LABEL, "shop"),
            (SWARM_SERVICE_LABEL, "shop_checkout"),
            (TASK_NAME_LABEL, "shop_checkout.3.m5l0ci2ztcnt"),
        ]);
        assert_eq!(
            service_and_slot("shop", &task),
            Some(("checkout".into(), 3))
        );
        assert_eq!(service_and_slot("other", &task), None);
        let no_slot = labels(&[(STACK_LABEL, "shop"), (SWARM_SERVICE_LABEL, "shop_ad")]);
        assert_eq!(service_and_slot("shop", &no_slot), Some(("ad".into(), 1)));
        assert_eq!(service_and_slot("shop", &labels(&[])), None);
    }
}
