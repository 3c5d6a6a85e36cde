//! `tolerant report | validate | halt`: reports of a stored experiment, the release gate that judges
//! a spec's `[[validate]]` criteria on stored 95 % intervals, and the emergency stop that clears every
//! fault on every known agent.

use crate::cli::output::{err_out, out, out_text};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use bytes::Bytes;
use controller::report::{Format, render_annotated, validation_markdown};
use controller::spec::{AGENT_TARGET, ExperimentSpec};
use controller::stats::{evaluate, load_experiment};
use controller::store::{DEFAULT_DATABASE, ExperimentId, Store};
use controller::testbed::{AdminClient, AdminError, Credential};
use http::Method;

/// Exit status of `validate` when a criterion fails (or cannot be judged, or nothing is stored).
pub const EXIT_FAIL: i32 = 1;
/// Exit status of `validate` when the spec or its criteria do not validate.
pub const EXIT_BAD_SPEC: i32 = 2;

const VALIDATE_HELP: &str = "\
Every criterion is judged on the 95 % confidence interval of its condition in the spec's latest
stored experiment (the one with the highest id whose name is the spec's `name`, or --experiment):
it passes only if the whole interval satisfies it. Nothing is run: run the spec with `tolerant run`
first. The markdown report goes to stdout (and to --out).

Exit status: 0 every criterion passed; 1 a criterion failed or could not be judged (e.g. fewer than
two rounds), no experiment of the spec is stored, or the store cannot be read; 2 the spec or its
criteria do not validate (a criterion naming a condition the spec does not run included).";

const HALT_HELP: &str = "\
Known agents: the agent of every stored experiment's [targets] (targets.agent, else the target of
its fault) plus every --agent. Each gets POST /_agent/halt with the bearer token. Known services:
every stored experiment's [targets] that offer `breaker_config`, plus every --service; each gets
DELETE /_admin/breakers (back to its startup breaker config, any lease ended); a stored one that
is not reachable is reported, not failed (a restarted service starts with its startup config). The
embedded stack lives only as long as its run, so it needs no halt. Container faults the database
records as in force are undone through the engine; with --kubernetes NAMESPACE, every pod fault
annotated in that namespace is undone too.

Exit status: 0 every agent and service answered (or none is known); 1 one could not be halted.";

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Experiment id (from `tolerant list`).
    pub id: i64,
    /// md: markdown plus one SVG per figure, written into a folder whose markdown path is printed;
    /// csv, json: printed to stdout (or written into --out).
    #[arg(long, default_value = "md", value_parser = parse_format)]
    pub format: Format,
    /// Database: a SQLite file path, sqlite://… or postgres://…
    #[arg(long, default_value = DEFAULT_DATABASE, env = "TOLERANT_DB")]
    pub db: String,
    /// Folder to write into (created if missing); md defaults to `report-<id>`.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Judge a spec's `[[validate]]` criteria on stored results — a release gate.
#[derive(Debug, clap::Args)]
#[command(after_help = VALIDATE_HELP)]
pub struct ValidateArgs {
    /// Experiment spec (TOML) with `[[validate]]` tables.
    pub spec: PathBuf,
    #[arg(long, default_value = DEFAULT_DATABASE, env = "TOLERANT_DB")]
    pub db: String,
    /// Judge this stored experiment instead of the spec's latest one.
    #[arg(long)]
    pub experiment: Option<i64>,
    /// Also write the markdown report to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Clear every fault on every known agent.
#[derive(Debug, clap::Args)]
#[command(after_help = HALT_HELP)]
pub struct HaltArgs {
    /// Database whose experiments name agents (skipped when the file does not exist).
    #[arg(long, default_value = DEFAULT_DATABASE, env = "TOLERANT_DB")]
    pub db: String,
    /// An agent's control API, e.g. http://127.0.0.1:9090 (repeatable).
    #[arg(long = "agent")]
    pub agents: Vec<String>,
    /// A service whose breakers go back to their startup config, e.g. http://127.0.0.1:8081 (repeatable).
    #[arg(long = "service")]
    pub services: Vec<String>,
    /// Bearer token of the agents' control APIs.
    #[arg(long, env = "TOLERANT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Also undo every pod fault annotated in this Kubernetes namespace, whoever applied it.
    #[arg(long, value_name = "NAMESPACE")]
    pub kubernetes: Option<String>,
}

fn parse_format(text: &str) -> Result<Format, String> {
    text.parse()
        .map_err(|error: controller::report::ReportError| error.to_string())
}

/// True when `db` names a SQLite file by plain path (not a URL) and that file does not exist.
fn is_missing_file(db: &str) -> bool {
    !db.contains("://") && !db.starts_with("sqlite:") && !Path::new(db).exists()
}

/// Opens an existing store: a plain SQLite path that does not exist is an error, not a new file.
async fn open_existing(db: &str) -> anyhow::Result<Store> {
    if is_missing_file(db) {
        bail!("--db {db}: no such database file");
    }
    Store::open(db).await.with_context(|| format!("--db {db}"))
}

pub async fn report(args: ReportArgs) -> anyhow::Result<()> {
    let store = open_existing(&args.db).await?;
    let id = ExperimentId(args.id);
    let stats = load_experiment(&store, id).await?;
    let annotations = store.annotations(id).await?;
    let report = render_annotated(&stats, &annotations, args.format)?;
    store.close().await;
    let directory = match (&args.out, args.format) {
        (Some(out), _) => out.clone(),
        (None, Format::Md) => PathBuf::from(format!("report-{}", args.id)),
        (None, _) => {
            out_text!("{}", report.text);
            return Ok(());
        }
    };
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("--out {}: cannot create the folder", directory.display()))?;
    let path = directory.join(format!(
        "experiment-{}.{}",
        args.id,
        args.format.extension()
    ));
    report.write(&path)?;
    out!("{}", path.display());
    Ok(())
}

/// Exits with `EXIT_BAD_SPEC` after naming the problem.
fn bad_spec(path: &Path, error: impl std::fmt::Display) -> ! {
    err_out!("{}: {error}", path.display());
    std::process::exit(EXIT_BAD_SPEC)
}

pub async fn validate(args: ValidateArgs) -> anyhow::Result<()> {
    let source = std::fs::read_to_string(&args.spec)
        .unwrap_or_else(|error| bad_spec(&args.spec, format!("cannot read: {error}")));
    // Parsing checks the criteria too: each must name a condition the spec runs.
    let spec = ExperimentSpec::parse(&source).unwrap_or_else(|error| bad_spec(&args.spec, error));
    let criteria = &spec.validate;
    if criteria.is_empty() {
        bad_spec(
            &args.spec,
            "validate: the spec has no [[validate]] criteria",
        );
    }

    let store = open_existing(&args.db).await?;
    let id = match args.experiment {
        Some(id) => ExperimentId(id),
        None => {
            let latest = store
                .experiments()
                .await?
                .into_iter()
                .filter(|row| row.name == spec.name)
                .map(|row| row.id.0)
                .max();
            match latest {
                Some(id) => ExperimentId(id),
                None => {
                    err_out!(
                        "no stored experiment is named `{}` in {}: run `tolerant run {}` first",
                        spec.name,
                        args.db,
                        args.spec.display()
                    );
                    std::process::exit(EXIT_FAIL);
                }
            }
        }
    };
    let stats = load_experiment(&store, id).await?;
    store.close().await;
    let validation = evaluate(criteria, &stats);
    let markdown = validation_markdown(&stats, &validation);
    if let Some(out) = &args.out {
        std::fs::write(out, &markdown).with_context(|| format!("--out {}", out.display()))?;
    }
    out_text!("{markdown}");
    std::process::exit(validation.exit_code())
}

/// The control API of the agent an experiment's spec names (`targets.agent`, else the target of its
/// fault), or `None` for the embedded stack (its agent lived and died with the run's process).
fn agent_of_spec(source: &str) -> Option<String> {
    let spec = ExperimentSpec::parse(source).ok()?;
    spec.targets
        .get(AGENT_TARGET)
        .or_else(|| spec.targets.get(&spec.fault.target))
        .cloned()
}

/// The services of a stored spec whose breaker config a run pushes (`[targets]` offering `breaker_config`).
fn breaker_services_of_spec(source: &str) -> Vec<String> {
    let Ok(spec) = ExperimentSpec::parse(source) else {
        return Vec::new();
    };
    spec.targets
        .iter()
        .filter(|(name, _)| {
            name.as_str() != AGENT_TARGET && spec.offers_of(name.as_str()).breaker_config
        })
        .map(|(_, url)| url.clone())
        .collect()
}

/// Undoes every container fault the database records as still in force.
async fn halt_containers(store: &Store) -> anyhow::Result<()> {
    if store.pending_container_faults(None).await?.is_empty() {
        return Ok(());
    }
    let engine =
        controller::docker::Engine::connect(&controller::docker::socket_from_env()).await?;
    let leases = controller::docker::ContainerLeases::new(engine, store.clone());
    let undone = leases.undo_all(controller::clock::now_ms()).await?;
    println!("containers: {undone} container fault(s) undone");
    Ok(())
}

pub async fn halt(args: HaltArgs) -> anyhow::Result<()> {
    if let Some(namespace) = &args.kubernetes {
        let cluster = controller::kubernetes::Cluster::connect(namespace).await?;
        let undone = cluster.sweep(None).await?;
        out!(
            "kubernetes: {} pod fault(s) undone in namespace {namespace}",
            undone.len()
        );
    }
    let mut agents: BTreeSet<String> = args
        .agents
        .iter()
        .map(|url| url.trim_end_matches('/').to_owned())
        .collect();
    let given: BTreeSet<String> = args
        .services
        .iter()
        .map(|url| url.trim_end_matches('/').to_owned())
        .collect();
    let mut services = given.clone();
    if !is_missing_file(&args.db) {
        let store = Store::open(&args.db)
            .await
            .with_context(|| format!("--db {}", args.db))?;
        for experiment in store.experiments().await? {
            if let Some(url) = agent_of_spec(&experiment.spec_toml) {
                agents.insert(url.trim_end_matches('/').to_owned());
            }
            for url in breaker_services_of_spec(&experiment.spec_toml) {
                services.insert(url.trim_end_matches('/').to_owned());
            }
        }
        // Container faults still in force: undone through the engine (only then is one needed).
        let containers = halt_containers(&store).await;
        store.close().await;
        containers?;
    }
    if agents.is_empty() && services.is_empty() {
        out!(
            "no known agents or services: the stored experiments name none and no --agent or --service was given"
        );
        return Ok(());
    }
    let token = args
        .token
        .context("--token or TOLERANT_TOKEN: the agents' and services' control APIs need it")?;
    let client = AdminClient::new(token);
    let mut failed = 0usize;
    for agent in &agents {
        let url = format!("{agent}/_agent/halt");
        match client
            .call(Method::POST, &url, Credential::Token, None, Bytes::new())
            .await
        {
            Ok(body) => {
                let removed = serde_json::from_slice::<agent::api::HaltResponse>(&body)
                    .map(|answer| answer.removed.to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                out!("{agent}: halted, {removed} faults removed");
            }
            Err(error) => {
                failed += 1;
                err_out!("{agent}: NOT halted: {error}");
            }
        }
    }
    for service in &services {
        match client.restore_breakers(service).await {
            Ok(()) => out!("{service}: breakers back to the startup config"),
            // A stored experiment's service that is not running any more holds no pushed config: a restarted
            // service starts with its startup config. One given with --service must answer.
            Err(AdminError::Transport { message, .. }) if !given.contains(service) => {
                out!("{service}: not reachable, nothing to restore ({message})")
            }
            Err(error) => {
                failed += 1;
                err_out!("{service}: breakers NOT restored: {error}");
            }
        }
    }
    if failed > 0 {
        bail!(
            "{failed} of {} agents and services could not be halted",
            agents.len() + services.len()
        );
    }
    Ok(())
}
