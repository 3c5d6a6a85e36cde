//! `tolerant load-worker --controller URL --token …`: a load worker. Connects to the controller a spec with
//! `[load] workers` waits at (retrying until `--wait` runs out: the controller may start later), drives the share
//! of each run's users it is given and streams its seconds back; exits 0 when the experiment is over. With
//! `--health ADDR:PORT` it answers `GET /_healthz` there while it runs (its pod's probes: it serves nothing else).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use controller::load::{EXTERNAL_COST, open_descriptors, raise_descriptor_limit, users_within};
use controller::workers::{WorkerError, WorkerOptions, run_worker, wire::MAX_CAPACITY};
use tokio::time::Instant;

use crate::cli::output::err_out;

/// Longest `--wait`.
const MAX_WAIT: Duration = Duration::from_secs(3600);

#[derive(Debug, clap::Args)]
pub struct LoadWorkerArgs {
    /// The controller's worker URL, as `tolerant run` prints it (`ws://HOST:PORT/workers`; http:// is taken too).
    #[arg(long)]
    pub controller: String,
    /// The controller's bearer token.
    #[arg(long, env = "TOLERANT_TOKEN", hide_env_values = true)]
    pub token: String,
    /// This worker's name (unique among the controller's workers; default: the host name).
    #[arg(long)]
    pub name: Option<String>,
    /// Users this worker can hold (default and upper bound: what its file-descriptor limit allows).
    #[arg(long)]
    pub capacity: Option<u32>,
    /// Load HOST:PORT instead of the address the controller gives (the same frontend, as reached from here).
    #[arg(long)]
    pub target: Option<String>,
    /// How long to keep trying to reach the controller (at most 1h).
    #[arg(long, default_value = "60s", value_parser = agent::api::parse_duration)]
    pub wait: Duration,
    /// Answer `GET /_healthz` at ADDR:PORT while this worker runs (for a pod's probes).
    #[arg(long, value_name = "ADDR:PORT")]
    pub health: Option<SocketAddr>,
}

/// Serves `GET /_healthz` at `address` until the process ends.
async fn serve_health(address: SocketAddr) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("--health: cannot listen at {address}"))?;
    let router = axum::Router::new().route("/_healthz", axum::routing::get(|| async { "ok" }));
    tokio::spawn(async move {
        let served = serving::serve(
            listener,
            router,
            serving::HEADER_READ_TIMEOUT,
            std::future::pending(),
        );
        if let Err(error) = served.await {
            tracing::warn!(%error, "the load worker's health endpoint stopped");
        }
    });
    Ok(())
}

pub async fn run(args: LoadWorkerArgs) -> anyhow::Result<()> {
    if args.wait > MAX_WAIT {
        bail!("--wait: {:?} is longer than {MAX_WAIT:?}", args.wait);
    }
    if let Some(address) = args.health {
        serve_health(address).await?;
    }
    let limit = raise_descriptor_limit();
    let most = match limit.soft {
        Some(soft) => users_within(soft, open_descriptors().unwrap_or(0), EXTERNAL_COST)
            .min(u64::from(MAX_CAPACITY)) as u32,
        None => MAX_CAPACITY,
    };
    let capacity = args.capacity.unwrap_or(most);
    if capacity == 0 || capacity > most {
        bail!(
            "--capacity: {capacity} is not between 1 and {most} (what this process's descriptor limit holds, \
             one per user)"
        );
    }
    let name = match args.name {
        Some(name) => name,
        None => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|name| name.trim().to_owned())
            .ok()
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| format!("worker-{}", std::process::id())),
    };
    let options = WorkerOptions {
        controller: args.controller,
        token: args.token,
        name,
        capacity,
        target: args.target,
    };
    let until = Instant::now() + args.wait;
    loop {
        match run_worker(&options).await {
            Ok(()) => return Ok(()),
            Err(WorkerError::Connect(reason)) if Instant::now() < until => {
                tracing::debug!("controller not reachable yet: {reason}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(error) => {
                err_out!("load worker `{}`: {error}", options.name);
                return Err(error).context("load-worker");
            }
        }
    }
}
