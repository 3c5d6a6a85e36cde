//! The experiment sweep over and over: `tolerant run` of one spec against the stack's services (2 fault kinds × 2
//! rates × 2 breaker modes, the Online Boutique mix, the flapping Prometheus source scraped every 50 ms, a push
//! listener), killed with SIGKILL every `kill_every` and started again with `tolerant resume <id>`. After each
//! kill the faults the dead controller left at the agent are watched until gone, with no halt meanwhile: each
//! must be gone within its lease (plus [`GRACE`]) of the kill. The finished runs seen at each kill are kept, to be found again at the end.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use std::time::Duration;

use anyhow::{Context, bail};
use controller::store::{ExperimentId, Status, Store};
use tokio::time::Instant;

use crate::config::Config;
use crate::journal::{Journal, KillRecord};
use crate::sample::{ControllerWatch, agent_faults};
use crate::stack::{Process, SERVICES, Stack, spawn};

/// How late past its lease a fault the dead controller left may still be seen (the agent's expiry, the poll).
pub const GRACE: Duration = Duration::from_millis(1000);
/// The sweep's fault lease: short, so a kill's leftovers are seen to expire before the controller starts again.
pub const FAULT_LEASE: &str = "5s";
/// Exit status of a spec that does not validate (`tolerant run`): the soak's own mistake, it stops.
const EXIT_BAD_SPEC: i32 = 2;

/// What the sweep leaves for the verdicts.
#[derive(Debug, Default)]
pub struct SweepSummary {
    /// `(experiment, run)` of every run seen finished at a kill.
    pub finished_at_kills: BTreeSet<(i64, i64)>,
    /// Controllers started, and how each that ended by itself exited.
    pub starts: u64,
    pub exits: Vec<Option<i32>>,
    pub db: PathBuf,
}

/// What a spec of the soak is built from, beside its `[fault]` and `[breaker]` tables: the part the sweep and
/// the sizing ladder ([`crate::size`]) share — the stack's services as `[targets]`, the Online Boutique mix at
/// [`THINK_TIME`], one round of `measured` after a warmup of a quarter of it, the flapping Prometheus source
/// scraped every 50 ms and a push listener.
#[derive(Debug, Clone)]
pub struct SpecBase {
    pub name: String,
    /// The spec's first comment line.
    pub about: String,
    /// `(service, url)` of each service.
    pub targets: Vec<(String, String)>,
    pub users: u32,
    pub measured: Duration,
    pub seed: u64,
    pub source_url: String,
    pub push_port: u16,
}

/// The think time of every virtual user of the soak's runs.
pub const THINK_TIME: &str = r#"["200ms", "1s"]"#;

/// A spec's `[fault]` table at Payment (`kinds` and `rates` as TOML arrays, the [`FAULT_LEASE`], a delay of
/// 200 ms when `kinds` has `"delay"`) and its `[breaker]` modes (a TOML array).
pub fn conditions(kinds: &str, rates: &str, modes: &str) -> String {
    let delay = if kinds.contains("\"delay\"") {
        "delay = \"200ms\"\n"
    } else {
        ""
    };
    format!(
        r#"[fault]
target = "payment"
kinds = {kinds}
{delay}rates = {rates}
lease = "{FAULT_LEASE}"

[breaker]
modes = {modes}
"#
    )
}

/// The stack's services as `(name, url)`, in [`SERVICES`] order.
pub fn targets(stack: &Stack) -> Vec<(String, String)> {
    SERVICES
        .iter()
        .map(|name| (name.to_string(), stack.service_url(name)))
        .collect()
}

impl SpecBase {
    /// The spec: this base with `conditions` (its `[fault]` table and `[breaker]` table, see [`conditions`];
    /// the breakers' trip and open settings are added here).
    pub fn spec(&self, conditions: &str) -> String {
        let targets: String = (self.targets.iter())
            .map(|(name, url)| format!("{name} = \"{url}\"\n"))
            .collect();
        let measured = self.measured.as_millis();
        format!(
            r#"# {about}
name = "{name}"
rounds = 1
duration = "{measured}ms"
warmup = "{warmup}ms"
order = "fixed"
seed = {seed}

[targets]
{targets}
[load]
users = {users}
think_time = {THINK_TIME}
mix = "online-boutique"
timeout = "5s"

{conditions}
[breaker.trip]
consecutive_failures = 5

[breaker.open]
base = "5s"

[[sources]]
kind = "prometheus"
url = "{source_url}"
preset = "gauge"
metric = "{metric}"
label = "breaker"
values = {{ closed = 0, open = 1, half_open = 2 }}
interval = "50ms"
service = "flapper"

[[sources]]
kind = "push"
listen = "127.0.0.1:{push_port}"
"#,
            about = self.about,
            name = self.name,
            warmup = measured / 4,
            seed = self.seed,
            users = self.users,
            source_url = self.source_url,
            push_port = self.push_port,
            metric = crate::traffic::prometheus::METRIC,
        )
    }
}

/// The sweep's spec.
pub fn spec(config: &Config, stack: &Stack, source_url: &str, push_port: u16) -> String {
    SpecBase {
        name: "soak-sweep".into(),
        about: "The soak's sweep (scripts/soak): run over and over, killed and resumed.".into(),
        targets: targets(stack),
        users: config.users,
        measured: config.run_length,
        seed: config.seed,
        source_url: source_url.into(),
        push_port,
    }
    .spec(&sweep_conditions())
}

/// The sweep's conditions: 2 fault kinds × 2 rates at Payment × 2 breaker modes.
pub fn sweep_conditions() -> String {
    conditions(
        r#"["error", "delay"]"#,
        "[0.2, 0.8]",
        r#"["disabled", "enforce"]"#,
    )
}

/// The sweep, ready to run.
#[derive(Debug)]
pub struct Sweep {
    tolerant: PathBuf,
    dir: PathBuf,
    spec: PathBuf,
    watch: ControllerWatch,
    kill_every: Duration,
    stack: Arc<Stack>,
    /// Held from a kill until what the dead controller left is gone, so no halt clears it first.
    halts: Arc<tokio::sync::Mutex<()>>,
}

impl Sweep {
    pub fn new(config: &Config, stack: &Arc<Stack>, source_url: String) -> anyhow::Result<Sweep> {
        let push_port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let spec = config.out.join("sweep.toml");
        std::fs::write(&spec, self::spec(config, stack, &source_url, push_port))?;
        Ok(Sweep {
            tolerant: config.tolerant.clone(),
            dir: config.out.clone(),
            spec,
            watch: ControllerWatch {
                pid: Arc::new(AtomicU32::new(0)),
                metrics_url: format!("http://127.0.0.1:{push_port}/metrics"),
                db: config.out.join("sweep.db"),
            },
            kill_every: config.kill_every,
            stack: stack.clone(),
            halts: Arc::default(),
        })
    }

    pub fn controller_pid(&self) -> ControllerWatch {
        self.watch.clone()
    }

    /// What the halts of [`crate::chaos::run`] take: the sweep holds it while a kill's leftovers are watched.
    pub fn halts(&self) -> Arc<tokio::sync::Mutex<()>> {
        self.halts.clone()
    }

    fn start(&self, summary: &mut SweepSummary, resume: Option<i64>) -> anyhow::Result<Process> {
        summary.starts += 1;
        let (db, spec) = (
            self.watch.db.display().to_string(),
            self.spec.display().to_string(),
        );
        let id = resume.map(|id| id.to_string()).unwrap_or_default();
        let args: Vec<&str> = match resume {
            Some(_) => vec!["resume", &id, "--db", &db],
            None => vec!["run", &spec, "--db", &db],
        };
        let log = format!("controller-{}", summary.starts);
        let process = spawn(&self.tolerant, &self.dir, &log, &args, &[])?;
        self.watch.pid.store(process.pid(), Ordering::Relaxed);
        Ok(process)
    }

    /// SIGKILLs the controller, then watches what it left at the agent until gone (or late).
    async fn kill(&self, mut process: Process, started: Instant) -> KillRecord {
        // A halt in progress ends first; none starts until the leftovers are gone.
        let _no_halt = self.halts.lock().await;
        let killed_at = Instant::now();
        let at = killed_at - started;
        let _ = process.0.kill();
        let _ = process.0.wait();
        self.watch.pid.store(0, Ordering::Relaxed);
        let mut record = KillRecord {
            at,
            ..KillRecord::default()
        };
        let mut seen = BTreeSet::new();
        // The longest wait: the agent's longest lease (10 min) is far beyond ours; bound it by ours.
        let limit = killed_at + Duration::from_secs(60);
        loop {
            let Some(faults) = agent_faults(&self.stack).await else {
                record.problem = Some("the agent did not answer after the kill".into());
                break;
            };
            let now = Instant::now();
            let left: Vec<_> = faults
                .into_iter()
                .filter(|f| !f.id.starts_with("soak-"))
                .collect();
            for fault in &left {
                seen.insert(fault.id.clone());
                let due = killed_at + Duration::from_millis(fault.lease_ms) + GRACE;
                if now > due && !record.late.contains(&fault.id) {
                    record.late.push(fault.id.clone());
                }
            }
            if left.is_empty() {
                record.gone_after = Some(now - killed_at);
                break;
            }
            if now > limit {
                record.problem = Some(format!(
                    "faults still at the agent {limit:?} after the kill"
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        record.left = seen.into_iter().collect();
        record
    }

    /// The latest unfinished experiment in the sweep's database and the runs finished so far.
    async fn stored(&self) -> anyhow::Result<(Option<i64>, BTreeSet<(i64, i64)>)> {
        let store = open(&self.watch.db).await?;
        let mut finished = BTreeSet::new();
        let mut unfinished = None;
        for experiment in store.experiments().await? {
            if matches!(
                experiment.status,
                Status::Pending | Status::Running | Status::Interrupted
            ) {
                unfinished = Some(experiment.id.0);
            }
            for run in store.runs(ExperimentId(experiment.id.0)).await? {
                if run.status == Status::Finished {
                    finished.insert((experiment.id.0, run.id.0));
                }
            }
        }
        store.close().await;
        Ok((unfinished, finished))
    }

    /// Runs the sweep until `deadline`; the controller running then is killed like the others.
    pub async fn run(
        &self,
        journal: Arc<Journal>,
        deadline: Instant,
    ) -> anyhow::Result<SweepSummary> {
        let started = Instant::now();
        let mut summary = SweepSummary {
            db: self.watch.db.clone(),
            ..SweepSummary::default()
        };
        let mut next_kill = started + self.kill_every;
        let mut resume = None;
        while Instant::now() < deadline {
            let mut process = self.start(&mut summary, resume.take())?;
            let stop_at = next_kill.min(deadline);
            let exited = loop {
                if let Some(status) = process.0.try_wait()? {
                    break Some(status);
                }
                if Instant::now() >= stop_at {
                    break None;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            };
            match exited {
                Some(status) => {
                    self.watch.pid.store(0, Ordering::Relaxed);
                    summary.exits.push(status.code());
                    if status.code() == Some(EXIT_BAD_SPEC) {
                        bail!(
                            "the sweep's spec was refused (logs in {})",
                            self.dir.display()
                        );
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                None => {
                    journal.killed(self.kill(process, started).await);
                    next_kill += self.kill_every;
                    let (unfinished, finished) = self.stored().await?;
                    summary.finished_at_kills.extend(finished);
                    resume = unfinished;
                }
            }
        }
        Ok(summary)
    }
}

/// The sweep's database, opened beside the controller writing it.
pub async fn open(db: &Path) -> anyhow::Result<Store> {
    let location = db.to_str().context("the database path is not UTF-8")?;
    Ok(Store::open(location).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_spec_validates_with_its_eight_conditions() {
        let base = SpecBase {
            name: "soak-sweep".into(),
            about: "test".into(),
            targets: (SERVICES.iter().enumerate())
                .map(|(i, name)| (name.to_string(), format!("http://127.0.0.1:{}", 20_000 + i)))
                .collect(),
            users: 40,
            measured: Duration::from_secs(20),
            seed: 1,
            source_url: "http://127.0.0.1:9/metrics".into(),
            push_port: 9,
        };
        let text = base.spec(&sweep_conditions());
        let spec = controller::spec::ExperimentSpec::parse(&text)
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        assert_eq!(spec.conditions().len(), 8);
        assert_eq!(spec.fault.rates, vec![0.2, 0.8]);
        assert!(text.contains("delay = \"200ms\"\nrates"), "{text}");
        assert!(text.contains("warmup = \"5000ms\""), "{text}");
    }
}
