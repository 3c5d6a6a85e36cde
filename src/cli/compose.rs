//! `--compose PROJECT` of `tolerant run` and `resume`: the testbed is the compose project's containers, found
//! through the Docker Engine by their labels (each service at its container's address, port 8080 as in
//! `docker-compose.yml`); container fault kinds and per-container samples come with it.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use boutique::ServiceName;
use controller::docker::{self, ContainerLeases, Engine, StackContainer};
use controller::lease::ContainerStack;
use controller::store::Store;
use controller::target::ServiceId;
use controller::testbed::Testbed;

/// The port every service listens on inside its container (see `docker-compose.yml`).
pub const SERVICE_PORT: u16 = 8080;
/// How often this controller sweeps for container faults whose lease has run out.
const SWEEP_PERIOD: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, clap::Args)]
pub struct ComposeArgs {
    /// Run against the containers of this compose project (e.g. the directory name `docker-compose up`
    /// used, or its -p) instead of the embedded stack or [targets].
    #[arg(long, value_name = "PROJECT")]
    pub compose: Option<String>,
    /// The Docker Engine's socket (default: DOCKER_HOST's unix:// path, else /var/run/docker.sock).
    #[arg(long, value_name = "PATH")]
    pub docker_socket: Option<String>,
}

impl ComposeArgs {
    /// The engine's socket path.
    pub fn socket(&self) -> String {
        self.docker_socket
            .clone()
            .unwrap_or_else(docker::socket_from_env)
    }
}

/// The project's testbed: every boutique service at its first running replica's address, the agent in Payment,
/// and every further replica of a scaled service (`--scale checkout=5`) under its own label (`checkout#2`), so
/// the runner resets it, pushes it the breaker config, follows its transitions and samples it like a service.
pub fn testbed_of(
    project: &str,
    containers: &[StackContainer],
    token: String,
) -> anyhow::Result<Testbed> {
    let replicas = docker::discovery::replica_urls(containers, SERVICE_PORT);
    let url = |service: &str| -> anyhow::Result<String> {
        if let Some((_, url)) = replicas.iter().find(|(label, _)| label == service) {
            return Ok(url.clone());
        }
        match containers
            .iter()
            .find(|c| c.service == service && c.state == "running")
        {
            Some(container) => anyhow::bail!(
                "--compose {project}: container {} has no address",
                container.name
            ),
            None => {
                anyhow::bail!("--compose {project}: no running container of service `{service}`")
            }
        }
    };
    let mut services = Vec::with_capacity(replicas.len());
    for service in ServiceName::ALL {
        services.push((service.into(), url(service.as_str())?));
    }
    services.extend(further_replicas(&replicas));
    let frontend = url(ServiceName::Frontend.as_str())?;
    let frontend: SocketAddr = frontend
        .trim_start_matches("http://")
        .parse()
        .with_context(|| format!("--compose {project}: frontend address {frontend}"))?;
    Ok(Testbed {
        frontend,
        agent: url(ServiceName::Payment.as_str())?,
        services,
        token,
    })
}

/// The replicas past the first of the boutique services (`checkout#2`, …) among `replica_urls`' entries.
fn further_replicas(replicas: &[(String, String)]) -> Vec<(ServiceId, String)> {
    replicas
        .iter()
        .filter_map(|(label, url)| Some((ServiceId::new(label.as_str()).ok()?, url.clone())))
        .filter(|(label, _)| {
            label.is_replica()
                && ServiceName::ALL
                    .iter()
                    .any(|service| label.service() == service.as_str())
        })
        .collect()
}

/// The further replicas of every scaled boutique service among `containers`, followed by the dashboard beside
/// the services it was given by name: a scaled service's name resolves to any of its replicas, so its entry is
/// pinned to the first replica's address and every further replica is added under its label (`checkout#2`).
/// Replicas started later are not followed (the dashboard reads the project once, at start).
pub fn follow_replicas(services: &mut Vec<(ServiceId, String)>, containers: &[StackContainer]) {
    let replicas = docker::discovery::replica_urls(containers, SERVICE_PORT);
    let scaled = further_replicas(&replicas);
    for (name, url) in services.iter_mut() {
        let is_scaled = scaled
            .iter()
            .any(|(label, _)| label.is_replica_of(name.as_str()));
        if let Some((_, first)) = replicas.iter().find(|(label, _)| name == label.as_str())
            && is_scaled
        {
            *url = first.clone();
        }
    }
    services.extend(scaled);
}

/// Everything a run against a compose project needs: the testbed, the container stack for the runner, and
/// the sweep that undoes faults whose lease ran out (abort it when done).
pub async fn connect(
    args: &ComposeArgs,
    project: &str,
    store: &Store,
    token: Option<String>,
) -> anyhow::Result<(Testbed, ContainerStack, tokio::task::JoinHandle<()>)> {
    let token = token.context("--token or TOLERANT_TOKEN: the compose stack's token is needed")?;
    let engine = Engine::connect(&args.socket()).await?;
    let containers = engine.stack(project).await?;
    if containers.is_empty() {
        anyhow::bail!(
            "--compose {project}: the engine at {} has no container of that project",
            engine.socket()
        );
    }
    let leases = ContainerLeases::new(engine, store.clone());
    // Faults a killed controller left behind whose lease has ended are undone before anything is checked.
    let undone = leases.sweep(controller::clock::now_ms()).await?;
    if undone > 0 {
        tracing::info!(undone, "container faults left behind undone");
    }
    let containers = leases.engine().stack(project).await?;
    let testbed = testbed_of(project, &containers, token)?;
    let sweep = leases.spawn_watchdog(SWEEP_PERIOD);
    Ok((
        testbed,
        ContainerStack {
            leases,
            project: project.to_owned(),
        },
        sweep,
    ))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::net::IpAddr;

    use super::*;

    fn container(service: &str, number: u32, ip: [u8; 4]) -> StackContainer {
        StackContainer {
            id: format!("{service}{number}"),
            name: format!("shop_{service}_{number}"),
            service: service.into(),
            number,
            state: "running".into(),
            addresses: BTreeMap::from([("shop_boutique".to_owned(), IpAddr::from(ip))]),
        }
    }

    #[test]
    fn a_scaled_service_is_pinned_to_its_first_replica_and_the_others_follow() {
        let containers = [
            container("cart", 1, [10, 0, 0, 2]),
            container("checkout", 1, [10, 0, 0, 3]),
            container("checkout", 2, [10, 0, 0, 4]),
            container("controller", 1, [10, 0, 0, 9]),
        ];
        let id = |name: &str| ServiceId::new(name).unwrap();
        let mut services = vec![
            (id("cart"), "http://cart:8080".to_owned()),
            (id("checkout"), "http://checkout:8080".to_owned()),
        ];
        follow_replicas(&mut services, &containers);
        assert_eq!(
            services,
            [
                ("cart", "http://cart:8080"),
                ("checkout", "http://10.0.0.3:8080"),
                ("checkout#2", "http://10.0.0.4:8080"),
            ]
            .map(|(name, url)| (id(name), url.to_owned()))
        );
    }
}
