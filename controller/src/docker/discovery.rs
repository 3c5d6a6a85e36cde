//! The compose stack's containers, found by their compose labels (project, service, replica number).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use bollard::container::ListContainersOptions;
use bollard::models::ContainerSummary;

use super::{Deployment, DockerError, Engine, NUMBER_LABEL, PROJECT_LABEL, SERVICE_LABEL};
use crate::target::replica_label;

/// The replica label of a container recorded by name (`shop_checkout_2` of `checkout` → `checkout#2`): its
/// number is what follows the name's last `_` or `-`, 1 when that is not a number.
pub fn replica_of_container(service: &str, container_name: &str) -> String {
    let number = container_name
        .rsplit(['_', '-'])
        .next()
        .and_then(|number| number.parse::<u32>().ok())
        .unwrap_or(1);
    replica_label(service, number)
}

/// One container of a compose project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackContainer {
    pub id: String,
    /// The container's name without the leading `/` (e.g. `shop_checkout_2`).
    pub name: String,
    /// The compose service it runs.
    pub service: String,
    /// Which replica of the service it is (1 when not scaled).
    pub number: u32,
    /// The engine's state: `running`, `paused`, `exited`, …
    pub state: String,
    /// Its address on each network it is attached to, by network name.
    pub addresses: BTreeMap<String, IpAddr>,
}

impl StackContainer {
    /// A label that tells replicas apart: `checkout` for the first, `checkout#2` for the second.
    pub fn replica(&self) -> String {
        replica_label(&self.service, self.number)
    }

    /// Its address on any network (networks in name order), if it has one.
    pub fn address(&self) -> Option<IpAddr> {
        self.addresses.values().next().copied()
    }

    /// A compose container from the engine's summary; `None` without a compose service label.
    fn from_summary(summary: ContainerSummary) -> Option<StackContainer> {
        StackContainer::from_labelled(summary, |labels| {
            let service = labels.get(SERVICE_LABEL)?.clone();
            let number = labels
                .get(NUMBER_LABEL)
                .and_then(|number| number.parse().ok())
                .unwrap_or(1);
            Some((service, number))
        })
    }

    /// A container from the engine's summary, its service and replica number read from its labels by
    /// `service_of` (`None`: not one of the stack's).
    pub(super) fn from_labelled(
        summary: ContainerSummary,
        service_of: impl FnOnce(&HashMap<String, String>) -> Option<(String, u32)>,
    ) -> Option<StackContainer> {
        let labels = summary.labels.unwrap_or_default();
        let (service, number) = service_of(&labels)?;
        let name = summary
            .names
            .unwrap_or_default()
            .first()
            .map(|name| name.trim_start_matches('/').to_owned())
            .unwrap_or_default();
        let addresses = summary
            .network_settings
            .and_then(|settings| settings.networks)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(network, endpoint)| {
                let ip = endpoint.ip_address?.parse().ok()?;
                Some((network, ip))
            })
            .collect();
        Some(StackContainer {
            id: summary.id?,
            name,
            service,
            number,
            state: summary.state.unwrap_or_default(),
            addresses,
        })
    }
}

impl Engine {
    /// Every container of `deployment`: a compose project's (running or not), a swarm stack's running tasks.
    pub async fn containers(
        &self,
        deployment: &Deployment,
    ) -> Result<Vec<StackContainer>, DockerError> {
        match deployment {
            Deployment::Compose(project) => self.stack(project).await,
            Deployment::Swarm(stack) => self.swarm_stack(stack).await,
        }
    }

    /// Every container of compose project `project` (running or not), by service then replica number.
    pub async fn stack(&self, project: &str) -> Result<Vec<StackContainer>, DockerError> {
        let filters = HashMap::from([(
            "label".to_owned(),
            vec![format!("{PROJECT_LABEL}={project}")],
        )]);
        let summaries = self
            .docker
            .list_containers(Some(ListContainersOptions {
                all: true,
                filters,
                ..ListContainersOptions::default()
            }))
            .await
            .map_err(|source| self.failed("list containers of project", project, source))?;
        let mut containers: Vec<StackContainer> = summaries
            .into_iter()
            .filter_map(StackContainer::from_summary)
            .collect();
        containers.sort_by(|a, b| (&a.service, a.number).cmp(&(&b.service, b.number)));
        Ok(containers)
    }

    /// The containers of one service of `project` (its replicas); an error when there is none.
    pub async fn service(
        &self,
        project: &str,
        service: &str,
    ) -> Result<Vec<StackContainer>, DockerError> {
        let replicas: Vec<StackContainer> = self
            .stack(project)
            .await?
            .into_iter()
            .filter(|container| container.service == service)
            .collect();
        if replicas.is_empty() {
            return Err(DockerError::NoSuchService {
                deployment: super::Deployment::Compose(project.to_owned()),
                service: service.to_owned(),
            });
        }
        Ok(replicas)
    }
}

impl Engine {
    /// The compose project container `container` (an id, a prefix of one, or a name) belongs to: how a
    /// controller running in the stack finds its own project (its hostname is its container id).
    pub async fn project_of(&self, container: &str) -> Result<String, DockerError> {
        let inspected = self
            .docker
            .inspect_container(container, None)
            .await
            .map_err(|source| self.failed("inspect", container, source))?;
        inspected
            .config
            .and_then(|config| config.labels)
            .and_then(|mut labels| labels.remove(PROJECT_LABEL))
            .ok_or_else(|| DockerError::Invalid {
                field: "container".into(),
                message: format!(
                    "container {container} has no {PROJECT_LABEL} label: it was not started by compose"
                ),
            })
    }
}

/// Base URLs `http://IP:PORT` of the first replica of every service that has an address, by service.
pub fn service_urls(containers: &[StackContainer], port: u16) -> BTreeMap<String, String> {
    let mut urls = BTreeMap::new();
    for container in containers {
        if let Some(ip) = container.address() {
            urls.entry(container.service.clone())
                .or_insert_with(|| format!("http://{}", std::net::SocketAddr::new(ip, port)));
        }
    }
    urls
}

/// Base URLs `http://IP:PORT` of every running replica that has an address, in service then replica order,
/// labelled as the runner and the dashboard follow them: the first running replica of a service by the service's
/// name (`checkout`), every further one by its replica label ([`StackContainer::replica`], `checkout#2`).
pub fn replica_urls(containers: &[StackContainer], port: u16) -> Vec<(String, String)> {
    let mut seen = std::collections::BTreeSet::new();
    containers
        .iter()
        .filter(|container| container.state == "running")
        .filter_map(|container| {
            let url = format!(
                "http://{}",
                std::net::SocketAddr::new(container.address()?, port)
            );
            let label = if seen.insert(container.service.as_str()) {
                container.service.clone()
            } else {
                container.replica()
            };
            Some((label, url))
        })
        .collect()
}
