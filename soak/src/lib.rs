//! `scripts/soak`: the whole stack for a long time under every kind of traffic at once, sampled every second
//! into a CSV and judged at the end (issue 26, "The soak"; the figures of a 30-minute run are `RELIABILITY.md`).
//!
//! Three processes of the built `tolerant` binary, on loopback ports of their own: the ten services with the
//! agent in Payment (`tolerant boutique all`), the dashboard over them (`tolerant` with `TOLERANT_TARGETS`) and
//! the controller running an experiment sweep over and over (`tolerant run`, killed with SIGKILL every
//! `kill_every` and resumed with `tolerant resume`). Beside them, from this process ([`traffic`], [`chaos`]):
//! Payment's faults flapping every 10 s, breaker modes switched and a halt every `mode_every`, 50 websocket
//! clients on the dashboard of which 10 never read, a push-ingest client and a flapping Prometheus source at
//! their documented maximum rates. [`sample`] writes a row a second; [`verdict`] judges the criteria; [`plot`]
//! draws RSS and descriptors; the printed verdicts are also kept in `verdicts.txt` beside the CSV. [`size`]
//! finds the size to run it at (`soak --find-size`).

pub mod chaos;
pub mod config;
pub mod journal;
pub mod plot;
pub mod sample;
pub mod size;
pub mod stack;
pub mod sweep;
pub mod traffic;
pub mod verdict;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::time::Instant;

pub use config::{Config, TOKEN};

/// What a soak found: the verdicts, and where its figures are.
#[derive(Debug)]
pub struct Outcome {
    pub verdicts: Vec<verdict::Verdict>,
    pub csv: PathBuf,
    pub wall: Duration,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|verdict| verdict.passed)
    }
}

/// Runs the soak to its end and judges it. Every process it started is stopped before it returns.
pub async fn run(mut config: Config) -> anyhow::Result<Outcome> {
    config.check()?;
    std::fs::create_dir_all(&config.out)
        .with_context(|| format!("out: cannot create {}", config.out.display()))?;
    // The processes run in the output folder: both paths absolute.
    config.tolerant = std::fs::canonicalize(&config.tolerant)?;
    config.out = std::fs::canonicalize(&config.out)?;
    let started = Instant::now();
    let deadline = started + config.length;
    let stack = Arc::new(stack::Stack::start(&config).await?);
    let journal = Arc::new(journal::Journal::default());
    let csv = config.out.join("soak.csv");

    let source = traffic::prometheus::FlappingSource::start(config.seed).await?;
    let sweep = sweep::Sweep::new(&config, &stack, source.url())?;
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(sample::sample_every_second(
        stack.clone(),
        sweep.controller_pid(),
        csv.clone(),
        started,
        deadline,
    ));
    tasks.spawn(traffic::websockets::run(stack.dashboard_ws(), deadline));
    tasks.spawn(traffic::push::run(stack.dashboard_url(), deadline));
    tasks.spawn(chaos::run(
        stack.clone(),
        journal.clone(),
        sweep.halts(),
        config.flap_every,
        config.mode_every,
        config.seed,
        deadline,
    ));
    let swept = sweep.run(journal.clone(), deadline).await;
    // The clients end at the deadline by themselves; each is bounded in time.
    while let Some(done) = tasks.join_next().await {
        if let Err(error) = done.context("a soak task panicked")? {
            journal.note(format!("a soak task failed: {error:#}"));
        }
    }
    drop(source);
    let summary = match swept {
        Ok(summary) => summary,
        Err(error) => {
            stack.stop().await;
            return Err(error.context("the sweep"));
        }
    };
    let verdicts = verdict::judge(&config, &csv, &journal, &summary).await?;
    plot::plots(&csv, &config.out)?;
    stack.stop().await;
    let outcome = Outcome {
        verdicts,
        csv,
        wall: started.elapsed(),
    };
    // The printed report kept beside the CSV: the event criteria's figures (kills, runs, halts, stats) are
    // nowhere else.
    let verdicts = config.out.join("verdicts.txt");
    std::fs::write(&verdicts, format!("{}\n", report(&outcome)))
        .with_context(|| format!("writing {}", verdicts.display()))?;
    Ok(outcome)
}

/// One line per verdict: `PASS`/`FAIL`, the criterion, what was measured.
pub fn verdict_lines(verdicts: &[verdict::Verdict]) -> String {
    let mut text = String::new();
    for verdict in verdicts {
        let mark = if verdict.passed { "PASS" } else { "FAIL" };
        text.push_str(&format!(
            "{mark}  {}: {}\n",
            verdict.criterion, verdict.detail
        ));
    }
    text
}

/// The verdicts as text: one line per criterion, `PASS`/`FAIL`, what was measured; then the wall time and CSV.
pub fn report(outcome: &Outcome) -> String {
    let mut text = verdict_lines(&outcome.verdicts);
    text.push_str(&format!(
        "wall time {:.0} s; samples in {}",
        outcome.wall.as_secs_f64(),
        outcome.csv.display()
    ));
    text
}
