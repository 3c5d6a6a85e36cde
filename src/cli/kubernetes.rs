//! Tolerant on Kubernetes: `tolerant kubernetes manifests` prints what `kubectl apply -f -` installs (the
//! controller and dashboard, with `--testbed` the ten services and the agent), and `--kubernetes NAMESPACE` of
//! `tolerant run` and `resume` runs against the pods of a namespace: targets found by label, every ready pod a
//! replica (`checkout`, `checkout#2`, … stable per pod for the run), pods watched so a replacement is followed
//! and recorded, container fault kinds applied as pod faults under annotation leases.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use boutique::ServiceName;
use controller::kubernetes::manifests::{self, ManifestOptions};
use controller::kubernetes::{Cluster, DEFAULT_SELECTOR, discovery};
use controller::lease::PodStack;
use controller::roster::Roster;
use controller::testbed::Testbed;
use parking_lot::Mutex;

use crate::cli::output::out;

/// How often this controller sweeps the namespace for pod faults whose lease has run out.
const SWEEP_PERIOD: Duration = Duration::from_secs(1);
/// Replica changes a run may fall behind by before it is told it skipped some.
const REPLICA_CHANGES_CAPACITY: usize = 256;
/// Longest `--selector`.
const MAX_SELECTOR_BYTES: usize = 256;

#[derive(Debug, clap::Args)]
pub struct KubernetesArgs {
    #[command(subcommand)]
    pub command: KubernetesCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum KubernetesCommand {
    /// Print the manifests to install Tolerant (`tolerant kubernetes manifests | kubectl apply -f -`).
    Manifests(ManifestArgs),
}

#[derive(Debug, clap::Args)]
pub struct ManifestArgs {
    /// The namespace everything goes in (create it first: `kubectl create namespace NS`).
    #[arg(long, default_value = "tolerant")]
    pub namespace: String,
    /// Also the ten Online Boutique services as Deployments with Services, and the agent as a sidecar.
    #[arg(long)]
    pub testbed: bool,
    /// The service whose pod carries the agent sidecar (with --testbed).
    #[arg(long, value_name = "SERVICE", default_value = "payment")]
    pub agent_in: String,
    /// The image every container runs (the one `bash scripts/images` builds).
    #[arg(long, default_value = "tolerant:latest")]
    pub image: String,
    /// Checkout's replicas (with --testbed), 1 to 20.
    #[arg(long, default_value_t = 1)]
    pub checkout_replicas: u32,
    /// Size of the database's PersistentVolumeClaim in GiB, 1 to 1024.
    #[arg(long, default_value_t = 1)]
    pub storage_gib: u32,
    /// A Secret whose key `url` holds a postgres:// URL: the database is there, and no claim is made.
    #[arg(long, value_name = "SECRET")]
    pub database_secret: Option<String>,
    /// Load workers to run as the Deployment tolerant-load-worker, 0 to 1000 (0: none). A spec they drive
    /// waits for them with `[load] workers_listen = "0.0.0.0:7070"` (the controller Service's `workers` port).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub load_workers: u32,
    /// Users each load worker holds (its --capacity), 1 to 100000.
    #[arg(long, value_name = "USERS", default_value_t = manifests::DEFAULT_LOAD_WORKER_CAPACITY)]
    pub load_worker_capacity: u32,
    /// The token of every mutation (16 to 128 characters); default TOLERANT_TOKEN, else a fresh random one.
    #[arg(long, env = "TOLERANT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
}

/// `--kubernetes NAMESPACE` of `run` and `resume`.
#[derive(Debug, Clone, clap::Args)]
pub struct KubernetesRunArgs {
    /// Run against the pods of this Kubernetes namespace (a kubeconfig from outside, or the service account
    /// inside the cluster).
    #[arg(long, value_name = "NAMESPACE", conflicts_with_all = ["compose", "swarm"])]
    pub kubernetes: Option<String>,
    /// Which pods are targets (a label selector); each names its service with app.kubernetes.io/name.
    #[arg(long, value_name = "SELECTOR", default_value = DEFAULT_SELECTOR)]
    pub selector: String,
    /// The service whose pod runs the agent sidecar (its control API on port 9090).
    #[arg(long, value_name = "SERVICE", default_value = "payment")]
    pub agent_in: String,
}

pub async fn run(args: KubernetesArgs) -> anyhow::Result<()> {
    match args.command {
        KubernetesCommand::Manifests(args) => {
            let options = manifest_options(args)?;
            out!("{}", manifests::render(&options)?.trim_end());
            Ok(())
        }
    }
}

fn agent_service(flag: &str, name: &str) -> anyhow::Result<ServiceName> {
    name.parse::<ServiceName>()
        .with_context(|| format!("{flag}: `{name}` is not a boutique service"))
}

fn manifest_options(args: ManifestArgs) -> anyhow::Result<ManifestOptions> {
    let token = args
        .token
        .filter(|token| !token.is_empty())
        .unwrap_or_else(random_token);
    let options = ManifestOptions {
        namespace: args.namespace,
        image: args.image,
        testbed: args.testbed,
        agent_in: agent_service("--agent-in", &args.agent_in)?,
        checkout_replicas: args.checkout_replicas,
        storage_gib: args.storage_gib,
        database_secret: args.database_secret,
        token,
        load_workers: args.load_workers,
        load_worker_capacity: args.load_worker_capacity,
    };
    options.check()?;
    Ok(options)
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

/// Everything a run against a namespace needs.
pub struct Connected {
    pub testbed: Testbed,
    pub pods: PodStack,
    /// The sweep and the pod watch: abort them when done.
    pub tasks: Vec<tokio::task::JoinHandle<()>>,
    pub replica_changes: super::compose::ReplicaWatch,
}

/// Connects to the cluster, sweeps faults left behind, finds the namespace's pods, and starts the sweep and the
/// watch.
pub async fn connect(
    args: &KubernetesRunArgs,
    namespace: &str,
    token: Option<String>,
) -> anyhow::Result<Connected> {
    let token = token.context(
        "--token or TOLERANT_TOKEN: the testbed's token (its tolerant-token Secret) is needed",
    )?;
    if args.selector.is_empty() || args.selector.len() > MAX_SELECTOR_BYTES {
        anyhow::bail!("--selector: 1 to {MAX_SELECTOR_BYTES} bytes");
    }
    let agent_in = agent_service("--agent-in", &args.agent_in)?;
    let cluster = Cluster::connect(namespace).await?;
    let undone = cluster.sweep(Some(controller::clock::now_ms())).await?;
    if !undone.is_empty() {
        tracing::info!(?undone, "pod faults left behind undone");
    }
    let pods = cluster.pods_matching(&args.selector).await?;
    let mut roster = Roster::new();
    roster.update(&discovery::instances(&pods, manifests::SERVICE_PORT))?;
    let replicas: Vec<(String, String)> = roster
        .running()
        .into_iter()
        .map(|(label, url)| (label.into_string(), url))
        .collect();
    let what = format!("--kubernetes {namespace} (--selector {})", args.selector);
    let testbed = super::compose::testbed_from(
        &what,
        &replicas,
        Some((agent_in, manifests::AGENT_CONTROL_PORT)),
        token,
    )?;
    let roster = Arc::new(Mutex::new(roster));
    let (changes, _) = tokio::sync::broadcast::channel(REPLICA_CHANGES_CAPACITY);
    let watch = {
        let (cluster, selector, roster, changes) = (
            cluster.clone(),
            args.selector.clone(),
            Arc::clone(&roster),
            changes.clone(),
        );
        tokio::spawn(async move {
            cluster
                .watch(&selector, manifests::SERVICE_PORT, roster, changes)
                .await
        })
    };
    let tasks = vec![cluster.spawn_sweep(SWEEP_PERIOD), watch];
    Ok(Connected {
        testbed,
        pods: PodStack {
            cluster,
            roster: Arc::clone(&roster),
            owner: controller::docker::lease::owner_name(),
        },
        tasks,
        replica_changes: (changes, roster),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(change: impl FnOnce(&mut ManifestArgs)) -> ManifestArgs {
        let mut args = ManifestArgs {
            namespace: "tolerant".into(),
            testbed: true,
            agent_in: "payment".into(),
            image: "tolerant:latest".into(),
            checkout_replicas: 1,
            storage_gib: 1,
            database_secret: None,
            token: Some("0123456789abcdef".into()),
            load_workers: 0,
            load_worker_capacity: manifests::DEFAULT_LOAD_WORKER_CAPACITY,
        };
        change(&mut args);
        args
    }

    #[test]
    fn an_unknown_agent_service_is_refused_naming_the_flag() {
        let error = manifest_options(args(|a| a.agent_in = "database".into())).unwrap_err();
        assert!(
            format!("{error:#}").starts_with("--agent-in: `database`"),
            "{error:#}"
        );
    }

    #[test]
    fn without_a_token_a_random_one_is_made() {
        let options = manifest_options(args(|a| a.token = None)).unwrap();
        assert_eq!(options.token.len(), 32);
        assert_ne!(
            options.token,
            manifest_options(args(|a| a.token = None)).unwrap().token
        );
    }
}
