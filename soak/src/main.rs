//! `soak MINUTES`: the soak of `scripts/soak` (see the library's documentation); prints a verdict per criterion
//! and exits 1 when one failed. `soak --find-size`: the sizing ladder (`soak::size`); exits 1 when no size
//! was healthy.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use soak::size::{DEFAULT_SIZES, DEFAULT_STEP_SECONDS, SizeConfig};

/// The whole stack for MINUTES under every kind of traffic, sampled every second, judged for leaks and lost work;
/// or, with --find-size, the largest size of the stack that stays healthy on this machine.
#[derive(Debug, Parser)]
#[command(name = "soak")]
struct Args {
    /// How long the soak lasts, in minutes (0.5 to 1440; fractions allowed). Not with --find-size.
    minutes: Option<f64>,
    /// Instead of a soak: the sizing ladder, one run without fault effect per size of --sizes over the soak's
    /// stack and background traffic, up to the first unhealthy size; prints the largest healthy one.
    #[arg(long, conflicts_with_all = [
        "minutes", "judge", "users", "run_seconds", "kill_every", "mode_every", "warmup", "window",
    ])]
    find_size: bool,
    /// With --find-size: users of each size, comma-separated, strictly increasing (1 to 2000, at most 12).
    #[arg(long, value_name = "USERS,...")]
    sizes: Option<String>,
    /// With --find-size: measured seconds of each size's run, 5 to 600 (default 30; a quarter of it is added as
    /// warmup).
    #[arg(long)]
    step_seconds: Option<u64>,
    /// The `tolerant` binary to run.
    #[arg(long, default_value = "target/release/tolerant")]
    tolerant: PathBuf,
    /// Folder for the CSV, the plots, the databases and the logs (default target/soak; with --find-size,
    /// target/soak-size, its rows in size.csv).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Seconds left out of the stability criterion at the start (default: 300, the first 5 minutes).
    #[arg(long)]
    warmup: Option<u64>,
    /// Seconds between SIGKILLs of the controller (default 300).
    #[arg(long)]
    kill_every: Option<u64>,
    /// Seconds between breaker-mode switches, each after a halt (default 60).
    #[arg(long)]
    mode_every: Option<u64>,
    /// Virtual users of each run of the sweep (default 40).
    #[arg(long)]
    users: Option<u32>,
    /// Measured seconds of each run of the sweep (default 20).
    #[arg(long)]
    run_seconds: Option<u64>,
    /// Seconds of each window the stability criterion compares (default: a tenth of the judged part, ≥ 10).
    #[arg(long)]
    window: Option<u64>,
    /// Judges the CSV of an earlier soak of the same MINUTES (its stability criteria only: the kills, halts
    /// and runs are in that soak's journal) instead of running one.
    #[arg(long, value_name = "CSV")]
    judge: Option<PathBuf>,
}

fn config(args: Args) -> anyhow::Result<soak::Config> {
    // Checked here rather than by clap: a `requires` on a flag that defaults to false is always satisfied.
    for (flag, given) in [
        ("--sizes", args.sizes.is_some()),
        ("--step-seconds", args.step_seconds.is_some()),
    ] {
        if given {
            anyhow::bail!("{flag}: only with --find-size");
        }
    }
    let minutes = (args.minutes)
        .context("MINUTES is missing: give the soak's length (0.5 to 1440), or --find-size")?;
    let out = args.out.unwrap_or_else(|| "target/soak".into());
    let mut config = soak::Config::minutes(args.tolerant, out, minutes)?;
    let seconds = Duration::from_secs;
    config.warmup = args.warmup.map(seconds).unwrap_or(config.warmup);
    config.kill_every = args.kill_every.map(seconds).unwrap_or(config.kill_every);
    config.mode_every = args.mode_every.map(seconds).unwrap_or(config.mode_every);
    config.users = args.users.unwrap_or(config.users);
    config.run_length = args.run_seconds.map(seconds).unwrap_or(config.run_length);
    config.window = args.window.map(seconds);
    Ok(config)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if args.find_size {
        return find_size(args).await;
    }
    let judge = args.judge.clone();
    let config = match config(args) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("soak: {error:#}");
            return ExitCode::from(2);
        }
    };
    if let Some(csv) = judge {
        return judge_csv(&config, &csv);
    }
    let outcome = soak::run(config).await;
    match outcome {
        Ok(outcome) => {
            println!("{}", soak::report(&outcome));
            if outcome.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("soak: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// Prints the stability verdicts of `csv`; exits 1 when one failed, 2 when the CSV cannot be read.
fn judge_csv(config: &soak::Config, csv: &std::path::Path) -> ExitCode {
    match soak::verdict::stability_verdicts(config, csv) {
        Ok(verdicts) => {
            print!("{}", soak::verdict_lines(&verdicts));
            if verdicts.iter().all(|verdict| verdict.passed) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("soak: {}: {error:#}", csv.display());
            ExitCode::from(2)
        }
    }
}

/// The sizing ladder: a line per size, the largest healthy size and the soak to run at it. Exits 0 when a size
/// was healthy, 1 when none was, 2 on a bad flag or when the ladder could not run.
async fn find_size(args: Args) -> ExitCode {
    let config = SizeConfig::new(
        args.tolerant,
        args.out.unwrap_or_else(|| "target/soak-size".into()),
        args.sizes.as_deref().unwrap_or(DEFAULT_SIZES),
        args.step_seconds.unwrap_or(DEFAULT_STEP_SECONDS),
    );
    let config = match config {
        Ok(config) => config,
        Err(error) => {
            eprintln!("soak: {error:#}");
            return ExitCode::from(2);
        }
    };
    match soak::size::find_size(config).await {
        Ok(ladder) => {
            println!("{}", soak::size::conclusion(&ladder));
            if ladder.largest_healthy().is_some() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("soak --find-size: {error:#}");
            ExitCode::from(2)
        }
    }
}
