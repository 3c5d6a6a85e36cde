//! `tolerant`: the one command-line binary that wires the workspace's parts together.

mod cli;

use std::process::ExitCode;

use clap::Parser;

/// A user's error is one line on stderr (`error: what: why`) and exit 1; a backtrace belongs to a panic, so none is
/// printed here whatever `RUST_BACKTRACE` says.
#[tokio::main]
async fn main() -> ExitCode {
    cli::init_tracing();
    let args = cli::Cli::parse();
    match cli::dispatch(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined on one line (`{:#}`), any line break of a message folded into a space.
fn one_line(error: &anyhow::Error) -> String {
    format!("{error:#}")
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
