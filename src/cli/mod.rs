//! Command-line surface: one subcommand per part of the tool.

mod agent;
mod boutique;
mod compose;
mod condition_table;
mod controller;
mod healthcheck;
mod kubernetes;
mod load_worker;
pub(crate) mod output;
mod results;
mod serve;
mod signal;
mod simulate;
mod stored;
mod tune;

pub use signal::stop_signal;

use clap::{Parser, Subcommand};

/// Tolerant: measure what your circuit breakers cost and buy.
#[derive(Debug, Parser)]
#[command(name = "tolerant", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the fault-injection sidecar proxy in front of an HTTP service.
    Agent(agent::AgentArgs),
    /// Run the Online Boutique services (`all` or one service by name).
    Boutique(boutique::BoutiqueArgs),
    /// Run an experiment spec (exit status 2 when the spec does not validate).
    Run(controller::RunArgs),
    /// Resume a stored experiment: clear faults, discard the interrupted run, run what is left.
    Resume(controller::ResumeArgs),
    /// List stored experiments.
    List(stored::ListArgs),
    /// Show one stored experiment and its runs.
    Show(stored::ShowArgs),
    /// Report a stored experiment: markdown with SVG plots, CSV or JSON.
    Report(results::ReportArgs),
    /// Judge a spec's validation criteria on stored intervals (exit 0 pass, 1 fail, 2 bad spec).
    Validate(results::ValidateArgs),
    /// Clear every fault on every known agent; every known service's breakers back to their startup config.
    Halt(results::HaltArgs),
    /// Simulate a breaker on a virtual clock: totals with and without it, per second (no services needed).
    Simulate(simulate::SimulateArgs),
    /// Which breaker settings to ship: search the simulator for the input's traffic, failures and costs.
    Tune(tune::TuneArgs),
    /// Tolerant on Kubernetes: `kubernetes manifests` prints what `kubectl apply -f -` installs.
    Kubernetes(kubernetes::KubernetesArgs),
    /// Drive a share of a controller's virtual users (a spec with `[load] workers`) and stream its seconds back.
    LoadWorker(load_worker::LoadWorkerArgs),
    /// Exit 0 when `GET URL` answers 2xx (the containers' health check: their images hold no shell).
    Healthcheck(healthcheck::HealthcheckArgs),
}

pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt().with_env_filter(filter).init();
}

pub async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Some(Command::Agent(args)) => agent::run(args).await,
        Some(Command::Boutique(args)) => boutique::run(args).await,
        Some(Command::Run(args)) => controller::run(args).await,
        Some(Command::Resume(args)) => controller::resume(args).await,
        Some(Command::List(args)) => stored::list(args).await,
        Some(Command::Show(args)) => stored::show(args).await,
        Some(Command::Report(args)) => results::report(args).await,
        Some(Command::Validate(args)) => results::validate(args).await,
        Some(Command::Halt(args)) => results::halt(args).await,
        Some(Command::Simulate(args)) => simulate::run(args),
        Some(Command::Tune(args)) => tune::run(args).await,
        Some(Command::Healthcheck(args)) => healthcheck::run(args),
        Some(Command::Kubernetes(args)) => kubernetes::run(args).await,
        Some(Command::LoadWorker(args)) => load_worker::run(args).await,
        None => serve::run().await,
    }
}
