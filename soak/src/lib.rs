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
//! draws RSS and descriptors.

pub mod chaos;
pub mod plot;
pub mod sample;
pub mod stack;
pub mod sweep;
pub mod traffic;
pub mod verdict;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::time::Instant;

/// The bearer token every process of the soak shares.
pub const TOKEN: &str = "soak-token";

/// What one soak does; every number is checked by [`Config::check`] before anything starts.
#[derive(Debug, Clone)]
pub struct Config {
    /// The built `tolerant` binary.
    pub tolerant: PathBuf,
    /// Where the CSV, the SVG plots, the databases and the processes' logs go (created).
    pub out: PathBuf,
    /// How long the whole soak lasts.
    pub length: Duration,
    /// The first part, left out of the stability criterion (memory and descriptors settle).
    pub warmup: Duration,
    /// The controller is killed with SIGKILL this often, and resumed.
    pub kill_every: Duration,
    /// Breaker modes are switched this often, each switch followed by a halt.
    pub mode_every: Duration,
    /// Payment's fault changes this often.
    pub flap_every: Duration,
    /// Virtual users of every run of the sweep.
    pub users: u32,
    /// Measured length of each run of the sweep (its warmup is a quarter of it).
    pub run_length: Duration,
    /// Seed of every random choice of this process.
    pub seed: u64,
    /// Length of the windows whose means the stability criterion compares; `None`: a tenth of the judged part
    /// (at least 10 s).
    pub window: Option<Duration>,
}

impl Config {
    /// The soak of `minutes` with the intervals: kills every 5 minutes, modes every minute, faults every 10 s.
    pub fn minutes(tolerant: PathBuf, out: PathBuf, minutes: f64) -> anyhow::Result<Config> {
        if !(0.5..=1440.0).contains(&minutes) {
            bail!("MINUTES: {minutes} is not between 0.5 and 1440");
        }
        Ok(Config {
            tolerant,
            out,
            length: Duration::from_secs_f64(minutes * 60.0),
            warmup: Duration::from_secs(300),
            kill_every: Duration::from_secs(300),
            mode_every: Duration::from_secs(60),
            flap_every: Duration::from_secs(10),
            users: 40,
            run_length: Duration::from_secs(20),
            seed: 1,
            window: None,
        })
    }

    /// The stability criterion's window.
    pub fn window(&self) -> Duration {
        let judged = self.length.saturating_sub(self.warmup);
        (self.window).unwrap_or((judged / 10).max(Duration::from_secs(10)))
    }

    /// Every bound, each error naming the setting.
    pub fn check(&self) -> anyhow::Result<()> {
        let within = |name: &str, value: Duration, low: Duration, high: Duration| {
            if value < low || value > high {
                bail!("{name}: {value:?} is not between {low:?} and {high:?}");
            }
            Ok(())
        };
        let (second, day) = (Duration::from_secs(1), Duration::from_secs(86_400));
        within("length", self.length, Duration::from_secs(30), day)?;
        within("warmup", self.warmup, Duration::ZERO, self.length)?;
        within("kill_every", self.kill_every, 10 * second, day)?;
        within("mode_every", self.mode_every, 5 * second, day)?;
        within("flap_every", self.flap_every, second, day)?;
        within(
            "run_length",
            self.run_length,
            2 * second,
            Duration::from_secs(3600),
        )?;
        within("window", self.window(), second, self.length)?;
        if !(1..=2000).contains(&self.users) {
            bail!("users: {} is not between 1 and 2000", self.users);
        }
        if !self.tolerant.is_file() {
            bail!("tolerant: {} is not a file", self.tolerant.display());
        }
        Ok(())
    }
}

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
    let journal = Arc::new(verdict::Journal::default());
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
    Ok(Outcome {
        verdicts,
        csv,
        wall: started.elapsed(),
    })
}

/// The verdicts as text: one line per criterion, `PASS`/`FAIL`, what was measured; then the wall time and CSV.
pub fn report(outcome: &Outcome) -> String {
    let mut text = String::new();
    for verdict in &outcome.verdicts {
        let mark = if verdict.passed { "PASS" } else { "FAIL" };
        text.push_str(&format!(
            "{mark}  {}: {}\n",
            verdict.criterion, verdict.detail
        ));
    }
    text.push_str(&format!(
        "wall time {:.0} s; samples in {}",
        outcome.wall.as_secs_f64(),
        outcome.csv.display()
    ));
    text
}
