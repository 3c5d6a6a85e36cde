//! `tolerant` with no arguments: the whole embedded stack — ten services, the agent in Payment, the
//! controller and the dashboard — on loopback. Ctrl-C stops it with every fault cleared.
//!
//! Settings come from the environment: `TOLERANT_BIND` (default `127.0.0.1:8080`), `TOLERANT_DB` (default
//! `tolerant.db` in the working directory, or a `postgres://` URL) and `TOLERANT_TOKEN` (default: a fresh
//! random token, printed). With `TOLERANT_TARGETS` (comma-separated `NAME=URL`, every service plus `agent`,
//! as in a spec's `[targets]`) no service starts here: the dashboard drives those (the compose stack's
//! controller container runs this way).
//!
//! With `TOLERANT_COMPOSE` as well, the dashboard reaches the Docker Engine (`DOCKER_HOST`'s unix socket, else
//! `/var/run/docker.sock`) and the compose project the targets run as: container faults on the game-day page
//! and in runs, per-container stats. Its value is the project's name, or `auto`: the project of the
//! container this runs in (the compose stack's controller, whose hostname is its container id). An engine
//! that does not answer is said once, naming the socket, and the dashboard goes on without container faults.
//!
//! With `TOLERANT_SWARM` (a swarm stack's name) instead, the same over the stack's running tasks on this node;
//! without `TOLERANT_TARGETS` the targets are then the tasks themselves, each replica under its slot's label,
//! watched: a run follows a task swarm starts in place of another.
//!
//! With `TOLERANT_KUBERNETES` (a namespace), the targets are that namespace's ready pods (every pod with
//! `app.kubernetes.io/name`, or `TOLERANT_KUBERNETES_SELECTOR`), the agent the sidecar in Payment's pod (or
//! `TOLERANT_KUBERNETES_AGENT_IN`'s), the pods watched, and runs apply container fault kinds as pod faults
//! under annotation leases (the controller's service account: the Role `tolerant kubernetes manifests` prints).

use crate::cli::output::out;
use std::net::SocketAddr;

use anyhow::{Context, bail};
use controller::docker::{self, Deployment, Engine};
use web::{ComposeProject, DashboardConfig, ExternalTestbed, Orchestrator, RunningDashboard};

/// The name under which `TOLERANT_TARGETS` gives the agent's control API.
const AGENT_TARGET: &str = "agent";
/// `TOLERANT_COMPOSE=auto`: the project of the container this process runs in.
const OWN_PROJECT: &str = "auto";

/// The compose project `TOLERANT_COMPOSE` names (or the swarm stack `TOLERANT_SWARM` names), on the engine;
/// `None` (said why) when the engine does not answer or does not know it.
async fn compose_project(deployment: Deployment) -> Option<ComposeProject> {
    let socket = docker::socket_from_env();
    let found = async {
        let engine = Engine::connect(&socket).await?;
        let deployment = match deployment {
            Deployment::Compose(name) if name == OWN_PROJECT => {
                let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
                Deployment::Compose(engine.project_of(hostname.trim()).await?)
            }
            other => other,
        };
        if engine.containers(&deployment).await?.is_empty() {
            return Err(docker::DockerError::Invalid {
                field: match deployment {
                    Deployment::Compose(_) => "TOLERANT_COMPOSE",
                    Deployment::Swarm(_) => "TOLERANT_SWARM",
                }
                .into(),
                message: format!("the engine at {socket} has no container of {deployment}"),
            });
        }
        Ok(ComposeProject { engine, deployment })
    };
    match found.await {
        Ok(compose) => {
            out!(
                "Containers: {} on {}",
                compose.deployment,
                compose.engine.socket()
            );
            Some(compose)
        }
        Err(error) => {
            out!("Containers: none ({error}); container faults are off");
            None
        }
    }
}

/// A non-empty variable's trimmed value.
fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// The testbed of a swarm stack's running tasks (`TOLERANT_SWARM` without `TOLERANT_TARGETS`), and its watch.
async fn swarm_testbed(
    compose: &ComposeProject,
) -> anyhow::Result<(ExternalTestbed, Orchestrator, tokio::task::JoinHandle<()>)> {
    let containers = compose.engine.containers(&compose.deployment).await?;
    let (replicas, roster) = super::compose::replicas_of(&compose.deployment, &containers)?;
    let testbed =
        super::compose::testbed_of(&compose.deployment, &containers, &replicas, String::new())?;
    let (watch, watching) = super::compose::watch_swarm(
        &compose.engine,
        compose.deployment.name(),
        roster.unwrap_or_default(),
    );
    let orchestrator = Orchestrator {
        pods: None,
        replicas: Some(watch),
    };
    Ok((external(testbed), orchestrator, watching))
}

fn external(testbed: controller::testbed::Testbed) -> ExternalTestbed {
    ExternalTestbed {
        frontend: testbed.frontend,
        services: testbed.services,
        agent: testbed.agent,
    }
}

/// The testbed of a Kubernetes namespace's pods (`TOLERANT_KUBERNETES`), its pod faults, its watch and sweep.
async fn kubernetes_testbed(
    namespace: &str,
    token: Option<String>,
) -> anyhow::Result<(
    ExternalTestbed,
    Orchestrator,
    Vec<tokio::task::JoinHandle<()>>,
)> {
    let args = super::kubernetes::KubernetesRunArgs {
        kubernetes: Some(namespace.to_owned()),
        selector: env_value("TOLERANT_KUBERNETES_SELECTOR")
            .unwrap_or_else(|| controller::kubernetes::DEFAULT_SELECTOR.to_owned()),
        agent_in: env_value("TOLERANT_KUBERNETES_AGENT_IN").unwrap_or_else(|| "payment".into()),
    };
    let connected = super::kubernetes::connect(&args, namespace, token)
        .await
        .with_context(|| format!("TOLERANT_KUBERNETES={namespace}"))?;
    out!("Kubernetes: namespace {namespace}, pod faults under annotation leases");
    let orchestrator = Orchestrator {
        pods: Some(connected.pods),
        replicas: Some(connected.replica_changes),
    };
    Ok((external(connected.testbed), orchestrator, connected.tasks))
}

/// Parses `TOLERANT_TARGETS`: `frontend` is resolved (names included) to the address the virtual users
/// load; `agent` is the agent's control API; every other entry is a service by name.
async fn external_testbed(text: &str) -> anyhow::Result<ExternalTestbed> {
    let mut services = Vec::new();
    let mut agent = None;
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, url) = entry
            .split_once('=')
            .with_context(|| format!("TOLERANT_TARGETS: `{entry}` is not NAME=URL"))?;
        let (name, url) = (name.trim(), url.trim().trim_end_matches('/'));
        if !url.starts_with("http://") {
            bail!("TOLERANT_TARGETS: {name}: `{url}` is not an http:// URL");
        }
        if name == AGENT_TARGET {
            agent = Some(url.to_owned());
        } else {
            let service = name
                .parse::<boutique::ServiceName>()
                .with_context(|| format!("TOLERANT_TARGETS: `{name}`"))?;
            services.push((service.into(), url.to_owned()));
        }
    }
    let agent = agent.context("TOLERANT_TARGETS: no `agent=URL` entry")?;
    let frontend_url = services
        .iter()
        .find(|(name, _)| name == "frontend")
        .map(|(_, url)| url.clone())
        .context("TOLERANT_TARGETS: no `frontend=URL` entry")?;
    let authority = frontend_url.trim_start_matches("http://");
    let authority = authority.split('/').next().unwrap_or(authority);
    let frontend = tokio::net::lookup_host(authority)
        .await
        .with_context(|| format!("TOLERANT_TARGETS: frontend: cannot resolve `{authority}`"))?
        .next()
        .with_context(|| format!("TOLERANT_TARGETS: frontend: `{authority}` has no address"))?;
    Ok(ExternalTestbed {
        frontend,
        services,
        agent,
    })
}

pub async fn run() -> anyhow::Result<()> {
    let mut config = DashboardConfig::default();
    if let Ok(bind) = std::env::var("TOLERANT_BIND") {
        config.bind = bind.parse::<SocketAddr>().with_context(|| {
            format!("TOLERANT_BIND: `{bind}` is not an address like 127.0.0.1:8080")
        })?;
    }
    if let Ok(database) = std::env::var("TOLERANT_DB") {
        config.database = database;
    }
    config.token = std::env::var("TOLERANT_TOKEN")
        .ok()
        .filter(|token| !token.is_empty());
    let token_from_env = config.token.is_some();
    let swarm = env_value("TOLERANT_SWARM");
    let kubernetes = env_value("TOLERANT_KUBERNETES");
    if kubernetes.is_some() {
        // The namespace's pods are the targets: another source of them is a mistake, said before anything starts.
        for other in ["TOLERANT_SWARM", "TOLERANT_COMPOSE", "TOLERANT_TARGETS"] {
            if env_value(other).is_some() {
                bail!(
                    "TOLERANT_KUBERNETES and {other}: set one of them (the namespace's pods are the targets)"
                );
            }
        }
    }
    // The orchestrator's watch and sweep, stopped at shutdown.
    let mut background = Vec::new();
    if let Some(namespace) = kubernetes {
        let (external, orchestrator, tasks) =
            kubernetes_testbed(&namespace, config.token.clone()).await?;
        config.external = Some(external);
        config.orchestrator = orchestrator;
        background = tasks;
    } else if let Ok(targets) = std::env::var("TOLERANT_TARGETS") {
        config.external = Some(external_testbed(&targets).await?);
        let deployment = match (env_value("TOLERANT_COMPOSE"), swarm) {
            (Some(_), Some(_)) => bail!("TOLERANT_COMPOSE and TOLERANT_SWARM: set one of them"),
            (Some(project), None) => Some(Deployment::Compose(project)),
            (None, Some(stack)) => Some(Deployment::Swarm(stack)),
            (None, None) => None,
        };
        if let Some(deployment) = deployment {
            config.compose = compose_project(deployment).await;
            // Every replica of a scaled service gets its own tiles and lanes.
            if let (Some(compose), Some(external)) = (&config.compose, &mut config.external)
                && let Ok(containers) = compose.engine.containers(&compose.deployment).await
            {
                super::compose::follow_replicas(&mut external.services, &containers);
            }
        }
    } else if let Some(stack) = swarm {
        // The stack's tasks are the targets, each replica under its slot's label, watched.
        let compose = compose_project(Deployment::Swarm(stack.clone()))
            .await
            .with_context(|| format!("TOLERANT_SWARM: stack `{stack}` not reached"))?;
        let (external, orchestrator, watching) = swarm_testbed(&compose).await?;
        config.external = Some(external);
        config.orchestrator = orchestrator;
        config.compose = Some(compose);
        background.push(watching);
    } else if std::env::var_os("TOLERANT_COMPOSE").is_some() {
        bail!("TOLERANT_COMPOSE: needs TOLERANT_TARGETS (the services the compose project runs)");
    }

    let dashboard = RunningDashboard::start(config)
        .await
        .context("starting the embedded stack and dashboard")?;
    out!("Tolerant dashboard: {}", dashboard.url());
    out!("Online Boutique shop: {}", dashboard.shop_url());
    if token_from_env {
        out!("Token: from TOLERANT_TOKEN");
    } else {
        out!("Token (log in with it to act): {}", dashboard.token());
    }
    out!("Ctrl-C stops everything and clears every fault.");

    super::stop_signal().await;
    out!("Stopping: clearing faults, closing the dashboard and the services…");
    dashboard.shutdown().await;
    for task in background {
        task.abort();
    }
    out!("Stopped.");
    Ok(())
}
