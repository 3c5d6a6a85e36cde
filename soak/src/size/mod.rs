//! `soak --find-size`: the largest healthy size of the stack on this machine (issue 26: the soak runs "the stack at
//! its largest healthy size"). The soak's stack and its standing background traffic (the websocket clients, the
//! push client, the flapping Prometheus source) run throughout; for each size of a ladder of users one
//! `tolerant run` with no fault effect (rate 0, breakers enforcing) measures its figures ([`judge`]) and the
//! machine ([`machine`]). The ladder stops at the first unhealthy size; the answer is the size before it.

pub mod judge;
pub mod machine;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use controller::clock::now_ms;
use controller::metric::{MetricKey, MetricName};
use controller::store::{ExperimentId, RunRow};

use crate::config::Config;
use crate::stack::{Stack, spawn};
use crate::sweep::{SpecBase, conditions, open, targets};
use crate::traffic;
use judge::{CSV_HEADER, Figures, Row};

/// The ladder when `--sizes` is not given.
pub const DEFAULT_SIZES: &str = "20,40,80,160,320";
/// Most sizes of a ladder.
pub const MAX_SIZES: usize = 12;
/// Bounds of each size, users.
pub const SIZE_BOUNDS: (u32, u32) = (1, 2000);
/// Bounds of `--step-seconds`.
pub const STEP_BOUNDS: (u64, u64) = (5, 600);
/// Measured seconds of a step when `--step-seconds` is not given.
pub const DEFAULT_STEP_SECONDS: u64 = 30;
/// How long a step's `tolerant run` may take beyond its warmup and measured time (starting, checking the
/// targets, writing) before the ladder gives up.
const STEP_SLACK: Duration = Duration::from_secs(300);
/// How often the machine is sampled during a step.
const SAMPLE_EVERY: Duration = Duration::from_millis(500);
/// Exit status of `tolerant run` when a run did not end as planned (its figures are no measurement).
const EXIT_RUNS_FAILED: i32 = 3;

/// What one sizing ladder does; built by [`SizeConfig::new`], which checks every bound.
#[derive(Debug, Clone)]
pub struct SizeConfig {
    pub tolerant: PathBuf,
    pub out: PathBuf,
    /// Users of each step, strictly increasing.
    pub sizes: Vec<u32>,
    /// Measured length of each step (its warmup is a quarter of it).
    pub step: Duration,
    pub seed: u64,
}

/// `--sizes`: comma-separated users, each within [`SIZE_BOUNDS`], at most [`MAX_SIZES`], strictly increasing.
pub fn parse_sizes(text: &str) -> anyhow::Result<Vec<u32>> {
    let (low, high) = SIZE_BOUNDS;
    let mut sizes: Vec<u32> = Vec::new();
    for (index, part) in text.split(',').enumerate() {
        let part = part.trim();
        let size: u32 = part.parse().map_err(|_| {
            anyhow::anyhow!(
                "--sizes: {part:?} (size {}) is not a whole number of users",
                index + 1
            )
        })?;
        if !(low..=high).contains(&size) {
            bail!("--sizes: {size} is not between {low} and {high} users");
        }
        if let Some(&before) = sizes.last()
            && size <= before
        {
            bail!("--sizes: {size} after {before}: the sizes must be strictly increasing");
        }
        sizes.push(size);
    }
    if sizes.len() > MAX_SIZES {
        bail!("--sizes: {} sizes, at most {MAX_SIZES}", sizes.len());
    }
    Ok(sizes)
}

impl SizeConfig {
    /// A ladder of `sizes` (the text of `--sizes`) with steps of `step_seconds`; every bound checked.
    pub fn new(
        tolerant: PathBuf,
        out: PathBuf,
        sizes: &str,
        step_seconds: u64,
    ) -> anyhow::Result<SizeConfig> {
        let sizes = parse_sizes(sizes)?;
        let (low, high) = STEP_BOUNDS;
        if !(low..=high).contains(&step_seconds) {
            bail!("--step-seconds: {step_seconds} is not between {low} and {high}");
        }
        if !tolerant.is_file() {
            bail!("--tolerant: {} is not a file", tolerant.display());
        }
        Ok(SizeConfig {
            tolerant,
            out,
            sizes,
            step: Duration::from_secs(step_seconds),
            seed: 1,
        })
    }

    /// The soak's settings the stack is started with (its binary and folder; the rest is not used here).
    fn stack_config(&self) -> anyhow::Result<Config> {
        let mut config = Config::minutes(self.tolerant.clone(), self.out.clone(), 1.0)?;
        config.seed = self.seed;
        Ok(config)
    }

    /// The upper bound on one step, start to end.
    fn step_limit(&self) -> Duration {
        self.step + self.step / 4 + STEP_SLACK
    }
}

/// The spec of one step: `users` on the stack with no fault effect (rate 0 at Payment) and breakers enforcing.
pub fn step_spec(
    users: u32,
    step: Duration,
    seed: u64,
    targets: Vec<(String, String)>,
    source_url: &str,
    push_port: u16,
) -> String {
    SpecBase {
        name: format!("soak-size-{users}"),
        about: format!(
            "The soak's sizing ladder (scripts/soak --find-size): {users} users, no fault effect."
        ),
        targets,
        users,
        measured: step,
        seed,
        source_url: source_url.into(),
        push_port,
    }
    .spec(&conditions(r#"["error"]"#, "[0.0]", r#"["enforce"]"#))
}

/// What a ladder found: a row per size run, and where they were written.
#[derive(Debug)]
pub struct Ladder {
    pub rows: Vec<Row>,
    pub csv: PathBuf,
}

impl Ladder {
    pub fn largest_healthy(&self) -> Option<u32> {
        judge::largest_healthy(&self.rows)
    }
}

/// Runs the ladder until its first unhealthy size (or its end); every process it started is stopped before it
/// returns. Each row is printed, and `size.csv` rewritten, as soon as its step is judged.
pub async fn find_size(mut config: SizeConfig) -> anyhow::Result<Ladder> {
    std::fs::create_dir_all(&config.out)
        .with_context(|| format!("--out: cannot create {}", config.out.display()))?;
    config.tolerant = std::fs::canonicalize(&config.tolerant)?;
    config.out = std::fs::canonicalize(&config.out)?;
    let stack = Arc::new(Stack::start(&config.stack_config()?).await?);
    let source = traffic::prometheus::FlappingSource::start(config.seed).await?;
    // The background clients are bounded by the longest the ladder may take, and stopped when it ends.
    let limit = config.step_limit() * config.sizes.len() as u32;
    let deadline = tokio::time::Instant::now() + limit;
    let mut background = tokio::task::JoinSet::new();
    background.spawn(traffic::websockets::run(stack.dashboard_ws(), deadline));
    background.spawn(traffic::push::run(stack.dashboard_url(), deadline));
    let ladder = climb(&config, &stack, &source.url()).await;
    background.abort_all();
    drop(source);
    stack.stop().await;
    ladder
}

async fn climb(config: &SizeConfig, stack: &Stack, source_url: &str) -> anyhow::Result<Ladder> {
    let csv = config.out.join("size.csv");
    let mut rows: Vec<Row> = Vec::new();
    for &users in &config.sizes {
        let (figures, samples) = step(config, stack, source_url, users).await?;
        let first = rows.first().map(|row| &row.figures);
        let health = judge::judge(&figures.figures, first);
        let row = Row {
            services_cpu_percent: figures
                .window
                .and_then(|(from, to)| machine::cpu_percent(&samples, from, to)),
            load_average: figures
                .window
                .and_then(|(_, to)| machine::load_at(&samples, to)),
            figures: figures.figures,
            health,
        };
        println!("{}", row.line());
        let healthy = row.health.healthy();
        rows.push(row);
        write_csv(&csv, &rows)?;
        if !healthy {
            break;
        }
    }
    Ok(Ladder { rows, csv })
}

/// Writes `rows` into `csv`, the header first.
pub fn write_csv(csv: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let mut file =
        std::fs::File::create(csv).with_context(|| format!("creating {}", csv.display()))?;
    writeln!(file, "{CSV_HEADER}")?;
    for row in rows {
        writeln!(file, "{}", row.csv())?;
    }
    Ok(())
}

/// A step's figures and its measured window (ms since the epoch), when its run finished.
struct Measured {
    figures: Figures,
    window: Option<(i64, i64)>,
}

/// Removes a database and its write-ahead files, so a step never resumes an earlier ladder's experiment.
fn remove_db(db: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// Runs one step: writes its spec, runs `tolerant run` on its own database while sampling the machine, reads
/// its figures.
async fn step(
    config: &SizeConfig,
    stack: &Stack,
    source_url: &str,
    users: u32,
) -> anyhow::Result<(Measured, Vec<machine::Sample>)> {
    let push_port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let name = format!("size-{users}");
    let spec_path = config.out.join(format!("{name}.toml"));
    let db = config.out.join(format!("{name}.db"));
    let spec = step_spec(
        users,
        config.step,
        config.seed,
        targets(stack),
        source_url,
        push_port,
    );
    std::fs::write(&spec_path, spec)?;
    remove_db(&db);
    let (spec_arg, db_arg) = (spec_path.display().to_string(), db.display().to_string());
    let mut process = spawn(
        &config.tolerant,
        &config.out,
        &name,
        &["run", &spec_arg, "--db", &db_arg],
        &[],
    )?;
    let started = tokio::time::Instant::now();
    let mut samples = Vec::new();
    let status: ExitStatus = loop {
        samples.push(machine::sample(stack.service_pid, now_ms()));
        if let Some(status) = process.0.try_wait()? {
            break status;
        }
        if started.elapsed() > config.step_limit() {
            bail!(
                "{users} users: tolerant run did not end within {:?} (logs {name}.err in {})",
                config.step_limit(),
                config.out.display()
            );
        }
        tokio::time::sleep(SAMPLE_EVERY).await;
    };
    let measured = match status.code() {
        Some(0) => read_figures(&db, users).await?,
        Some(EXIT_RUNS_FAILED) => Measured {
            figures: Figures {
                users,
                throughput_ok: None,
                availability: None,
                worst_p95: None,
                problem: Some(format!(
                    "the run did not end as planned (tolerant run exit {EXIT_RUNS_FAILED}, {name}.err)"
                )),
            },
            window: None,
        },
        _ => bail!(
            "{users} users: tolerant run ended with {status} (logs {name}.err in {})",
            config.out.display()
        ),
    };
    Ok((measured, samples))
}

/// The measured window of a run, ms since the epoch.
fn window(run: &RunRow) -> Option<(i64, i64)> {
    let from = run.started_at_ms? + run.warmup_ms.max(0);
    Some((from, from + run.duration_ms.max(0)))
}

/// Reads a finished step's figures (`controller::stats::load_experiment`) from its database.
async fn read_figures(db: &Path, users: u32) -> anyhow::Result<Measured> {
    let store = open(db).await?;
    let experiment = (store.experiments().await?.into_iter())
        .map(|experiment| experiment.id.0)
        .max()
        .with_context(|| format!("{}: no experiment", db.display()))?;
    let stats = controller::stats::load_experiment(&store, ExperimentId(experiment)).await?;
    let runs = store.runs(ExperimentId(experiment)).await?;
    store.close().await;
    let Some(run) = stats.runs.first() else {
        bail!("{}: the step's run did not finish", db.display());
    };
    let worst_p95 = (run.values.iter())
        .filter(|(key, _)| key.metric == MetricName::P95Ms)
        .filter_map(|(key, &p95)| Some((key.endpoint.clone()?, p95)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let window = (runs.iter())
        .find(|row| row.id == run.run_id)
        .and_then(window);
    Ok(Measured {
        figures: Figures {
            users,
            throughput_ok: run.get(&MetricKey::run(MetricName::ThroughputOk)),
            availability: run.get(&MetricKey::run(MetricName::Availability)),
            worst_p95,
            problem: None,
        },
        window,
    })
}

/// The report's last lines: the largest healthy size and the soak to run at it, or that there is none.
pub fn conclusion(ladder: &Ladder) -> String {
    match ladder.largest_healthy() {
        Some(users) => format!(
            "largest healthy size: {users} users\nrun the soak at it: bash scripts/soak 30 --users {users}\nrows in {}",
            ladder.csv.display()
        ),
        None => format!(
            "no healthy size: the smallest, {} users, is already unhealthy (rows in {})",
            ladder.rows.first().map_or(0, |row| row.figures.users),
            ladder.csv.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_parsed_and_every_bound_named() {
        assert_eq!(
            parse_sizes(DEFAULT_SIZES).unwrap(),
            vec![20, 40, 80, 160, 320]
        );
        assert_eq!(parse_sizes(" 1, 2000 ").unwrap(), vec![1, 2000]);
        for (text, says) in [
            ("0,20", "0 is not between 1 and 2000"),
            ("20,2001", "2001 is not between"),
            ("20,20", "strictly increasing"),
            ("40,20", "20 after 40"),
            ("20,x", "\"x\" (size 2)"),
            ("", "\"\" (size 1)"),
            ("20,,40", "(size 2)"),
            ("-5", "\"-5\""),
        ] {
            let error = parse_sizes(text).expect_err(text).to_string();
            assert!(
                error.starts_with("--sizes: ") && error.contains(says),
                "{text}: {error}"
            );
        }
        let twelve: Vec<String> = (1..=12).map(|n| n.to_string()).collect();
        assert_eq!(parse_sizes(&twelve.join(",")).unwrap().len(), 12);
        let thirteen = format!("{},13", twelve.join(","));
        let error = parse_sizes(&thirteen).unwrap_err().to_string();
        assert!(error.contains("13 sizes, at most 12"), "{error}");
    }

    #[test]
    fn the_step_length_is_bounded_before_anything_starts() {
        let binary = std::env::current_exe().expect("the test binary");
        let out = PathBuf::from("unused");
        for seconds in [4, 601] {
            let error = SizeConfig::new(binary.clone(), out.clone(), "20", seconds)
                .unwrap_err()
                .to_string();
            assert!(error.starts_with("--step-seconds: "), "{error}");
        }
        let config = SizeConfig::new(binary.clone(), out.clone(), "20,40", 5).unwrap();
        assert_eq!(config.step, Duration::from_secs(5));
        let error = SizeConfig::new(binary, out.clone(), "20,10", 30).unwrap_err();
        assert!(error.to_string().starts_with("--sizes: "), "{error}");
        let missing = SizeConfig::new(out.join("no-such-binary"), out, "20", 30).unwrap_err();
        assert!(missing.to_string().starts_with("--tolerant: "), "{missing}");
    }

    #[test]
    fn a_step_spec_has_no_fault_effect_and_validates() {
        let targets = crate::stack::SERVICES
            .iter()
            .enumerate()
            .map(|(i, name)| (name.to_string(), format!("http://127.0.0.1:{}", 20_000 + i)))
            .collect();
        let text = step_spec(
            80,
            Duration::from_secs(30),
            1,
            targets,
            "http://127.0.0.1:9/metrics",
            9,
        );
        let spec = controller::spec::ExperimentSpec::parse(&text)
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        assert_eq!(spec.fault.rates, vec![0.0]);
        assert_eq!(spec.load.users, 80);
        assert_eq!(spec.rounds, 1);
        assert_eq!(spec.conditions().len(), 1);
        assert!(text.contains("modes = [\"enforce\"]"), "{text}");
        assert!(text.contains("warmup = \"7500ms\""), "{text}");
    }
}
