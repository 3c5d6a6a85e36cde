//! What one soak does: the binary, the output folder, its length and intervals, each bound checked before
//! anything starts.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;

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
