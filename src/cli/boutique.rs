//! `tolerant boutique`: run all ten Online Boutique services or one of them.

use crate::cli::output::out;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{Context, bail};
use boutique::config::{DEFAULT_POOL_CAPACITY, DEFAULT_POOL_QUEUE, parse_duration};
use boutique::{
    PoolConfig, RawStackConfig, RunningService, RunningStack, ServiceName, StackConfig,
};

#[derive(Debug, clap::Args)]
pub struct BoutiqueArgs {
    /// `all` (ten services in this process) or one service: frontend, productcatalog, cart, currency,
    /// payment, shipping, email, checkout, recommendation, ad.
    pub target: String,
    /// Address every service binds to.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// Port of a service, as NAME=PORT (repeatable); unlisted services get an ephemeral port.
    #[arg(long = "port", value_name = "NAME=PORT")]
    pub ports: Vec<String>,
    /// With `all`: give the services consecutive ports from this one, in `ServiceName::ALL` order.
    #[arg(long, value_name = "PORT")]
    pub base_port: Option<u16>,
    /// Base URL of a dependency when running one service, as NAME=URL (repeatable, or comma-separated
    /// in TOLERANT_PEERS).
    #[arg(
        long = "peer",
        value_name = "NAME=URL",
        env = "TOLERANT_PEERS",
        value_delimiter = ','
    )]
    pub peers: Vec<String>,
    /// Breaker configuration file (TOML, the vocabulary of docs/spec.md); default: 5 consecutive failures, 30 s open.
    #[arg(long, value_name = "FILE")]
    pub breaker_config: Option<PathBuf>,
    /// Timeout of every inter-service call.
    #[arg(long, default_value = "3s")]
    pub call_timeout: String,
    /// Requests each service handles at once.
    #[arg(long, default_value_t = DEFAULT_POOL_CAPACITY)]
    pub pool_capacity: usize,
    /// Requests that may wait for a worker before 503s start.
    #[arg(long, default_value_t = DEFAULT_POOL_QUEUE)]
    pub pool_queue: usize,
    /// File holding the bearer token for admin and agent mutations (else env TOLERANT_TOKEN).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Seed of every random choice the services and the agent make.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

fn parse_pair<'a>(flag: &str, text: &'a str) -> anyhow::Result<(ServiceName, &'a str)> {
    let (name, value) = text
        .split_once('=')
        .with_context(|| format!("--{flag} {text:?}: expected NAME=VALUE"))?;
    let service = name
        .trim()
        .parse::<ServiceName>()
        .with_context(|| format!("--{flag} {text:?}"))?;
    Ok((service, value.trim()))
}

fn read_token(args: &BoutiqueArgs) -> anyhow::Result<Option<String>> {
    if let Some(path) = &args.token_file {
        let token = std::fs::read_to_string(path)
            .with_context(|| format!("--token-file {}: cannot read", path.display()))?;
        let token = token.trim().to_owned();
        if token.is_empty() {
            bail!("--token-file {}: the file is empty", path.display());
        }
        return Ok(Some(token));
    }
    Ok(std::env::var("TOLERANT_TOKEN")
        .ok()
        .map(|token| token.trim().to_owned())
        .filter(|token| !token.is_empty()))
}

fn stack_config(args: &BoutiqueArgs) -> anyhow::Result<StackConfig> {
    let mut ports = BTreeMap::new();
    if let Some(base) = args.base_port {
        for (offset, service) in ServiceName::ALL.into_iter().enumerate() {
            let port = u16::try_from(usize::from(base) + offset)
                .ok()
                .with_context(|| format!("--base-port {base}: ports would run past 65535"))?;
            ports.insert(service, port);
        }
    }
    for text in &args.ports {
        let (service, port) = parse_pair("port", text)?;
        let port: u16 = port
            .parse()
            .with_context(|| format!("--port {text:?}: {port:?} is not a port number"))?;
        ports.insert(service, port);
    }
    let breaker = match &args.breaker_config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("--breaker-config {}: cannot read", path.display()))?;
            breaker::BreakerConfig::from_toml_str(&text)
                .with_context(|| format!("--breaker-config {}", path.display()))?
        }
        None => breaker::BreakerConfig::default(),
    };
    let token = read_token(args)?;
    let agent = agent::RawAgentConfig {
        token: token.clone(),
        seed: args.seed,
        ..agent::RawAgentConfig::default()
    }
    .build()?;
    let config = RawStackConfig {
        host: args.host,
        ports,
        breaker,
        call_timeout: parse_duration("--call-timeout", &args.call_timeout)?,
        pool: PoolConfig {
            capacity: args.pool_capacity,
            queue: args.pool_queue,
        },
        token,
        agent,
        seed: args.seed,
        head_read_timeout: serving::HEADER_READ_TIMEOUT,
    };
    Ok(config.build()?)
}

pub async fn run(args: BoutiqueArgs) -> anyhow::Result<()> {
    let config = stack_config(&args)?;
    if config.token().is_none() {
        tracing::warn!(
            "no token (TOLERANT_TOKEN or --token-file): admin and agent mutations are refused"
        );
    }
    if args.target == "all" {
        let stack = RunningStack::start(config).await?;
        for (service, addr) in stack.addrs() {
            out!("{service:<15} http://{addr}");
        }
        super::stop_signal().await;
        stack.shutdown().await;
        return Ok(());
    }
    let service: ServiceName = args.target.parse()?;
    let mut peers = BTreeMap::new();
    for text in &args.peers {
        let (peer, url) = parse_pair("peer", text)?;
        peers.insert(peer, url.trim_end_matches('/').to_owned());
    }
    let running = RunningService::start(service, config, peers).await?;
    out!("{service:<15} http://{}", running.addr());
    running.serve_until(super::stop_signal()).await?;
    Ok(())
}
