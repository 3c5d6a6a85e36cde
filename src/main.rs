//! `tolerant`: the one command-line binary that wires the workspace's parts together.

mod cli;

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    cli::init_tracing();
    let args = cli::Cli::parse();
    cli::dispatch(args).await
}
