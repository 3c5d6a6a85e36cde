//! `--compose PROJECT` and `--swarm STACK` of `tolerant run` and `resume`: the testbed is the compose project's
//! containers or the swarm stack's running tasks on this node, found through the Docker Engine by their labels
//! (each service at its container's address, port 8080 as in `docker-compose.yml`); container fault kinds and
//! per-container samples come with it. A swarm stack is watched while the runs go: a task the orchestrator
//! starts in place of another is followed under its slot's label and recorded on the run's timeline.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use boutique::ServiceName;
use controller::docker::{self, ContainerLeases, Deployment, Engine, StackContainer};
use controller::lease::ContainerStack;
use controller::roster::{ReplicaChange, Roster};
use controller::store::Store;
use controller::target::ServiceId;
use controller::testbed::Testbed;

/// The port every service listens on inside its container (see `docker-compose.yml`).
pub const SERVICE_PORT: u16 = 8080;
/// How often this controller sweeps for container faults whose lease has run out.
const SWEEP_PERIOD: Duration = Duration::from_secs(1);
/// How often a swarm stack's tasks are listed again while runs go.
const SWARM_WATCH_PERIOD: Duration = Duration::from_secs(1);
/// Replica changes a run may fall behind by before it is told it skipped some.
const REPLICA_CHANGES_CAPACITY: usize = 256;

#[derive(Debug, Clone, clap::Args)]
pub struct ComposeArgs {
    /// Run against the containers of this compose project (e.g. the directory name `docker-compose up`
    /// used, or its -p) instead of the embedded stack or [targets].
    #[arg(long, value_name = "PROJECT", conflicts_with = "swarm")]
    pub compose: Option<String>,
    /// Run against the running tasks of this swarm stack on this node (`docker stack deploy -c FILE STACK`):
    /// a task swarm starts in place of a dead one is followed under its slot's label.
    #[arg(long, value_name = "STACK")]
    pub swarm: Option<String>,
    /// The Docker Engine's socket (default: DOCKER_HOST's unix:// path, else /var/run/docker.sock).
    #[arg(long, value_name = "PATH")]
    pub docker_socket: Option<String>,
}

impl ComposeArgs {
    /// The compose project or swarm stack named, if one is.
    pub fn deployment(&self) -> Option<Deployment> {
        match (&self.compose, &self.swarm) {
            (Some(project), _) => Some(Deployment::Compose(project.clone())),
            (None, Some(stack)) => Some(Deployment::Swarm(stack.clone())),
            (None, None) => None,
        }
    }

    /// The engine's socket path.
    pub fn socket(&self) -> String {
        self.docker_socket
            .clone()
            .unwrap_or_else(docker::socket_from_env)
    }
}

/// The testbed of `deployment`'s containers: every boutique service at its first running replica's address, the
/// agent in Payment, and every further replica of a scaled service (`--scale checkout=5`, `replicas: 3`) under
/// its own label (`checkout#2`), so the runner resets it, pushes it the breaker config, follows its transitions
/// and samples it like a service. `replicas` are the labelled base URLs (see [`replicas_of`]).
pub fn testbed_of(
    deployment: &Deployment,
    containers: &[StackContainer],
    replicas: &[(String, String)],
    token: String,
) -> anyhow::Result<Testbed> {
    let what = match deployment {
        Deployment::Compose(name) => format!("--compose {name}"),
        Deployment::Swarm(name) => format!("--swarm {name}"),
    };
    for service in ServiceName::ALL {
        let labelled = replicas.iter().any(|(label, _)| label == service.as_str());
        if let Some(container) = containers
            .iter()
            .find(|c| c.service == service.as_str() && c.state == "running")
            .filter(|_| !labelled)
        {
            anyhow::bail!("{what}: container {} has no address", container.name);
        }
    }
    testbed_from(&what, replicas, None, token)
}

/// A testbed from labelled replicas (`what` names where they are, for errors): every boutique service at its
/// plain label's URL, every further replica of one beside it, the frontend loaded, the agent in Payment or —
/// given `(service, port)` — in that service's first replica at that port (a sidecar).
pub fn testbed_from(
    what: &str,
    replicas: &[(String, String)],
    agent: Option<(ServiceName, u16)>,
    token: String,
) -> anyhow::Result<Testbed> {
    let url = |service: &str| -> anyhow::Result<String> {
        match replicas.iter().find(|(label, _)| label == service) {
            Some((_, url)) => Ok(url.clone()),
            None => anyhow::bail!("{what}: no running replica of service `{service}`"),
        }
    };
    let mut services = Vec::with_capacity(replicas.len());
    for service in ServiceName::ALL {
        services.push((service.into(), url(service.as_str())?));
    }
    services.extend(further_replicas(replicas));
    let frontend = url(ServiceName::Frontend.as_str())?;
    let frontend: SocketAddr = frontend
        .trim_start_matches("http://")
        .parse()
        .with_context(|| format!("{what}: frontend address {frontend}"))?;
    let agent = match agent {
        None => url(ServiceName::Payment.as_str())?,
        Some((service, port)) => {
            let base = url(service.as_str())?;
            let authority: SocketAddr = base
                .trim_start_matches("http://")
                .parse()
                .with_context(|| format!("{what}: {service} address {base}"))?;
            format!("http://{}", SocketAddr::new(authority.ip(), port))
        }
    };
    Ok(Testbed {
        frontend,
        agent,
        services,
        token,
    })
}

/// Labelled base URLs: `("checkout#2", "http://10.0.0.4:8080")`.
pub type Replicas = Vec<(String, String)>;

/// The labelled base URLs of `containers` as the runner follows them, and for a swarm stack the roster that
/// gave the labels (its watch goes on from it): a compose project's first running replica of a service by the
/// service's name, every further one by its replica label; a swarm stack's by their slots.
pub fn replicas_of(
    deployment: &Deployment,
    containers: &[StackContainer],
) -> anyhow::Result<(Replicas, Option<Roster>)> {
    match deployment {
        Deployment::Compose(_) => Ok((
            docker::discovery::replica_urls(containers, SERVICE_PORT),
            None,
        )),
        Deployment::Swarm(_) => {
            let mut roster = Roster::new();
            roster.update(&docker::swarm::instances(containers, SERVICE_PORT))?;
            let replicas = roster
                .running()
                .into_iter()
                .map(|(label, url)| (label.into_string(), url))
                .collect();
            Ok((replicas, Some(roster)))
        }
    }
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

/// An orchestrator's replica changes and the roster its watch keeps.
pub type ReplicaWatch = (
    tokio::sync::broadcast::Sender<ReplicaChange>,
    std::sync::Arc<parking_lot::Mutex<Roster>>,
);

/// Everything a run against a compose project or a swarm stack needs.
pub struct Connected {
    pub testbed: Testbed,
    /// The containers and their faults' leases, for the runner.
    pub stack: ContainerStack,
    /// The sweep that undoes faults whose lease ran out, and a swarm stack's watch: abort them when done.
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
    /// A swarm stack's replica changes and the roster its watch keeps, for
    /// [`controller::runner::Runner::with_replica_changes`].
    pub replica_changes: Option<ReplicaWatch>,
}

/// Watches swarm stack `stack` from `roster` (the replicas the testbed was built from) on: its changes, and the
/// task that looks (abort it when done).
pub fn watch_swarm(
    engine: &Engine,
    stack: &str,
    roster: Roster,
) -> (ReplicaWatch, tokio::task::JoinHandle<()>) {
    let (changes, _) = tokio::sync::broadcast::channel(REPLICA_CHANGES_CAPACITY);
    let roster = std::sync::Arc::new(parking_lot::Mutex::new(roster));
    let watching = docker::swarm::spawn_watch(
        engine.clone(),
        stack.to_owned(),
        SERVICE_PORT,
        std::sync::Arc::clone(&roster),
        SWARM_WATCH_PERIOD,
        changes.clone(),
    );
    ((changes, roster), watching)
}

/// Connects to the engine, sweeps faults left behind, finds `deployment`'s containers and starts the sweep (and
/// a swarm stack's watch).
pub async fn connect(
    args: &ComposeArgs,
    deployment: &Deployment,
    store: &Store,
    token: Option<String>,
) -> anyhow::Result<Connected> {
    let token =
        token.context("--token or TOLERANT_TOKEN: the stack's token (TOLERANT_TOKEN) is needed")?;
    let engine = Engine::connect(&args.socket()).await?;
    if engine.containers(deployment).await?.is_empty() {
        anyhow::bail!(
            "{deployment}: the engine at {} has no running container of it",
            engine.socket()
        );
    }
    let leases = ContainerLeases::new(engine, store.clone());
    // Faults a killed controller left behind whose lease has ended are undone before anything is checked.
    let undone = leases.sweep(controller::clock::now_ms()).await?;
    if undone > 0 {
        tracing::info!(undone, "container faults left behind undone");
    }
    let containers = leases.engine().containers(deployment).await?;
    let (replicas, roster) = replicas_of(deployment, &containers)?;
    let testbed = testbed_of(deployment, &containers, &replicas, token)?;
    let mut tasks = vec![leases.spawn_watchdog(SWEEP_PERIOD)];
    let mut replica_changes = None;
    if let (Deployment::Swarm(stack), Some(roster)) = (deployment, roster) {
        let (watch, watching) = watch_swarm(leases.engine(), stack, roster);
        tasks.push(watching);
        replica_changes = Some(watch);
    }
    Ok(Connected {
        testbed,
        stack: ContainerStack {
            leases,
            deployment: deployment.clone(),
        },
        tasks,
        replica_changes,
    })
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
