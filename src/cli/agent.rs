//! `tolerant agent`: the standalone fault-injection sidecar.

use crate::cli::output::out;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;

/// Environment variable holding the control API's bearer token.
const TOKEN_ENV: &str = "TOLERANT_TOKEN";

/// Reverse proxy in front of one HTTP/1.1 service that injects per-request faults set through its control API.
#[derive(Debug, clap::Args)]
pub struct AgentArgs {
    /// Address the proxy listens on (clients connect here instead of the upstream).
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub listen: SocketAddr,
    /// The service to forward to, `http://host:port`.
    #[arg(long)]
    pub upstream: String,
    /// Address of the control API (`/_agent/...`, `/metrics`); loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub control: SocketAddr,
    /// File holding the bearer token (first line); otherwise the TOLERANT_TOKEN environment variable.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Seed of the per-request draws (same seed + same request sequence = same decisions).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Lease of a fault put without one.
    #[arg(long, default_value = "30s", value_parser = agent::api::parse_duration)]
    pub default_lease: Duration,
    /// Longest lease a fault may ask for.
    #[arg(long, default_value = "10m", value_parser = agent::api::parse_duration)]
    pub max_lease: Duration,
    /// How long a `hang` fault holds a request before closing the connection; also the longest `delay` (with its
    /// jitter) a fault may ask for.
    #[arg(long, default_value = "60s", value_parser = agent::api::parse_duration)]
    pub max_hold: Duration,
    /// Proxy threads, each with its own single-threaded runtime and upstream pool (default: one per CPU).
    #[arg(long)]
    pub threads: Option<NonZeroUsize>,
}

/// Reads the token from `--token-file`, else from `TOLERANT_TOKEN`; `None` when neither is set. The agent's
/// config refuses an empty one.
fn read_token(token_file: Option<&PathBuf>) -> anyhow::Result<Option<String>> {
    Ok(match token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("token-file: cannot read {}", path.display()))?;
            Some(text.lines().next().unwrap_or("").trim().to_owned())
        }
        None => std::env::var(TOKEN_ENV)
            .ok()
            .map(|token| token.trim().to_owned()),
    })
}

pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    let token = read_token(args.token_file.as_ref())?;
    if token.is_none() {
        tracing::warn!(
            "no token (--token-file or {TOKEN_ENV}): every control mutation will be refused"
        );
    }
    if !args.control.ip().is_loopback() {
        tracing::warn!(control = %args.control, "the control API listens beyond loopback");
    }
    let config = agent::RawAgentConfig {
        token,
        default_lease: args.default_lease,
        max_lease: args.max_lease,
        max_hold: args.max_hold,
        seed: args.seed,
    }
    .build()?;
    let sidecar = agent::sidecar::Sidecar::bind(
        agent::Agent::new(config),
        args.listen,
        &args.upstream,
        args.control,
    )
    .await?;
    out!(
        "tolerant agent: proxy http://{} -> {}",
        sidecar.proxy_address()?,
        args.upstream
    );
    out!(
        "tolerant agent: control http://{}/_agent/faults (metrics at /metrics)",
        sidecar.control_address()?
    );
    let threads = args
        .threads
        .or_else(|| std::thread::available_parallelism().ok())
        .unwrap_or(NonZeroUsize::MIN);
    tokio::select! {
        served = sidecar.serve_threaded(threads) => served.context("sidecar stopped")?,
        _ = super::stop_signal() => out!("tolerant agent: interrupted, stopping (faults are not kept)"),
    }
    Ok(())
}
