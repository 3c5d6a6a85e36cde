//! `tolerant run | resume`: run an experiment spec against the testbed (resuming its unfinished experiment
//! unless `--fresh`) and resume a stored experiment by id, printing progress and, at the end, the table per
//! condition (`condition_table.rs`). A spec that does not validate — its own checks, or what a run asks of it
//! (`check_for_run`) — exits with status 2 and stores nothing.
//! (`list | show` are in `stored.rs`; the push source's listener is `web::push_listener`.)

use crate::cli::output::err_out;
use std::cell::Cell;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use controller::runner::{
    Progress, ResumePoint, Runner, RunnerError, StartChoice, WORKERS_WAIT, choose_start,
};
use controller::sources::PushInbox;
use controller::spec::{AGENT_TARGET, ExperimentSpec};
use controller::store::{
    DEFAULT_DATABASE, ExperimentId, RunId, STOP_CONDITION_REASON, Status, Store,
};
use controller::testbed::{Testbed, start_embedded_stack};
use controller::workers::WorkerPool;
use tokio_util::sync::CancellationToken;

use super::compose::ComposeArgs;
use super::kubernetes::KubernetesRunArgs;
use super::stored::{open_experiment, open_store};

/// Exit status of a spec that does not validate.
pub const EXIT_BAD_SPEC: i32 = 2;
/// Exit status when a run of this invocation failed (it panicked, its load generator failed), was aborted
/// for a reason other than its stop condition, or did not apply its fault: the results are not the
/// measurement asked for. Which runs and why are printed on stderr.
pub const EXIT_RUNS_FAILED: i32 = 3;

/// What `run` and `resume` both take: where to store, how to reach external targets, how to print, and a
/// compose project, a swarm stack or a Kubernetes namespace to run against.
#[derive(Debug, clap::Args)]
pub struct ExecuteArgs {
    /// Database: a SQLite file path, sqlite://… or postgres://…
    #[arg(long, default_value = DEFAULT_DATABASE, env = "TOLERANT_DB")]
    pub db: String,
    /// Bearer token of external targets' admin and agent APIs (the embedded stack makes its own).
    #[arg(long, env = "TOLERANT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print JSON instead of text: run and resume print the summary; tune the keys recommended, why, front and
    /// current.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub compose: ComposeArgs,
    #[command(flatten)]
    pub kubernetes: KubernetesRunArgs,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Experiment spec (TOML, see experiments/).
    pub spec: PathBuf,
    /// Start a new experiment even when this spec's latest experiment is unfinished.
    #[arg(long)]
    pub fresh: bool,
    #[command(flatten)]
    pub execute: ExecuteArgs,
}

#[derive(Debug, clap::Args)]
pub struct ResumeArgs {
    /// Experiment id (from `tolerant list`).
    pub id: i64,
    #[command(flatten)]
    pub execute: ExecuteArgs,
}

/// Whether this process can hold the spec's virtual users (file descriptors; the soft limit is raised to the
/// hard one first): checked before anything is stored or started. The embedded stack runs in this process and
/// costs more per user than targets elsewhere.
fn users_fit(
    spec: &ExperimentSpec,
    execute: &ExecuteArgs,
) -> Result<(), controller::load::LoadError> {
    let embedded = execute.compose.deployment().is_none()
        && execute.kubernetes.kubernetes.is_none()
        && spec.targets.is_empty();
    controller::load::check_users_fit(spec.load.users, spec.load.workers.is_some(), embedded)
}

/// What `tolerant run` asks of a spec beyond its own checks, each error naming the field: the push source's
/// `listen`, the external targets' load target and agent (when the run is against `[targets]`), the users the
/// process can hold. Checked before anything is stored; a mistake exits [`EXIT_BAD_SPEC`].
fn check_for_run(spec: &ExperimentSpec, execute: &ExecuteArgs) -> Result<(), String> {
    web::push_listener::push_address(spec).map_err(|error| error.to_string())?;
    let orchestrated =
        execute.compose.deployment().is_some() || execute.kubernetes.kubernetes.is_some();
    if !orchestrated && !spec.targets.is_empty() {
        external_targets(spec)?;
    }
    users_fit(spec, execute).map_err(|error| error.to_string())
}

/// The frontend to load and the agent's URL from the spec's `[targets]` table; the error names the field.
fn external_targets(spec: &ExperimentSpec) -> Result<(SocketAddr, String), String> {
    let loaded = &spec.load.target;
    let frontend = (spec.targets.get(loaded))
        .ok_or_else(|| format!("targets.{loaded}: needed to load (load.target)"))?;
    let frontend: SocketAddr = (frontend.trim_start_matches("http://").parse())
        .map_err(|_| format!("targets.{loaded}: `{frontend}` is not http://IP:PORT"))?;
    let agent = (spec.targets.get(AGENT_TARGET))
        .or_else(|| spec.targets.get(&spec.fault.target))
        .ok_or_else(|| {
            format!(
                "targets.agent: needed (or targets.{}) to inject faults",
                spec.fault.target
            )
        })?;
    Ok((frontend, agent.clone()))
}

/// External targets from the spec's `[targets]` table.
fn external_testbed(spec: &ExperimentSpec, token: Option<String>) -> anyhow::Result<Testbed> {
    let (frontend, agent) = external_targets(spec).map_err(anyhow::Error::msg)?;
    let token = token.context("--token or TOLERANT_TOKEN: needed for external targets")?;
    Ok(Testbed {
        frontend,
        services: spec
            .targets
            .iter()
            .filter(|(name, _)| name.as_str() != AGENT_TARGET)
            .map(|(name, url)| (name.clone(), url.clone()))
            .collect(),
        agent,
        token,
    })
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    let spec = match ExperimentSpec::from_file(&args.spec) {
        Ok(spec) => spec,
        Err(error) => {
            err_out!("{}: {error}", args.spec.display());
            std::process::exit(EXIT_BAD_SPEC);
        }
    };
    if let Err(error) = check_for_run(&spec, &args.execute) {
        err_out!("{}: {error}", args.spec.display());
        std::process::exit(EXIT_BAD_SPEC);
    }
    let store = open_store(&args.execute.db).await?;
    let choice = choose_start(&store, &spec, args.fresh).await?;
    execute(&store, &spec, choice, args.execute).await
}

pub async fn resume(args: ResumeArgs) -> anyhow::Result<()> {
    let (store, row) = open_experiment(&args.execute.db, args.id).await?;
    let spec = ExperimentSpec::parse(&row.spec_toml)
        .with_context(|| format!("experiment {}: its stored spec", args.id))?;
    users_fit(&spec, &args.execute)
        .with_context(|| format!("experiment {}: its stored spec", args.id))?;
    execute(&store, &spec, StartChoice::Resume(row.id), args.execute).await
}

/// Runs a spec's plan: a new experiment, or the rest of a resumed one (faults cleared and the
/// interrupted attempt discarded first), then prints the summary.
async fn execute(
    store: &Store,
    spec: &ExperimentSpec,
    choice: StartChoice,
    args: ExecuteArgs,
) -> anyhow::Result<()> {
    let quiet = args.json;
    let experiment = execute_quietly(store, spec, choice, args).await?;
    super::condition_table::print(store, experiment, quiet).await
}

/// [`execute`] without the summary: the experiment's id (`tolerant tune --verify` reads its runs itself).
pub(super) async fn execute_quietly(
    store: &Store,
    spec: &ExperimentSpec,
    choice: StartChoice,
    args: ExecuteArgs,
) -> anyhow::Result<ExperimentId> {
    let ExecuteArgs {
        token,
        compose,
        kubernetes,
        json: quiet,
        ..
    } = args;
    let mut background = Vec::new();
    let given_token = token.clone();
    let mut containers = None;
    let mut replica_changes = None;
    let mut pods = None;
    let (stack, testbed) = if let Some(namespace) = &kubernetes.kubernetes {
        let connected = super::kubernetes::connect(&kubernetes, namespace, token).await?;
        background = connected.tasks;
        pods = Some(connected.pods);
        replica_changes = Some(connected.replica_changes);
        (None, connected.testbed)
    } else if let Some(deployment) = compose.deployment() {
        let connected = super::compose::connect(&compose, &deployment, store, token).await?;
        background = connected.tasks;
        containers = Some(connected.stack);
        replica_changes = connected.replica_changes;
        (None, connected.testbed)
    } else if spec.targets.is_empty() {
        let (stack, testbed) = start_embedded_stack(spec).await?;
        (Some(stack), testbed)
    } else {
        (None, external_testbed(spec, token)?)
    };
    let cancel = CancellationToken::new();
    let token = testbed.token.clone();
    let mut runner = Runner::new(store.clone(), testbed).with_cancel(cancel.clone());
    if let Some(containers) = containers {
        runner = runner.with_containers(containers);
    }
    if let Some(pods) = pods {
        runner = runner.with_pods(pods);
    }
    if let Some((changes, roster)) = replica_changes {
        runner = runner.with_replica_changes(changes, roster);
    }
    let workers = match spec.load.workers {
        Some(wanted) => {
            let worker_token = given_token.clone().unwrap_or_else(|| token.clone());
            let pool = WorkerPool::listen(wanted.listen, wanted.count as usize, worker_token)
                .await
                .with_context(|| format!("load.workers_listen: {}", wanted.listen))?;
            err_out!(
                "waiting for {} load worker(s) at {} (tolerant load-worker --controller {} --token {})",
                wanted.count,
                pool.url(),
                pool.url(),
                match given_token {
                    Some(_) => "\"$TOLERANT_TOKEN\"".to_owned(),
                    None => token.clone(),
                }
            );
            runner = runner.with_workers(pool.clone());
            Some(pool)
        }
        None => None,
    };
    let ingest = match web::push_listener::bind(spec).await {
        Ok(Some((listener, addr))) => {
            let inbox = PushInbox::default();
            runner = runner.with_push_inbox(inbox.clone());
            if !quiet {
                err_out!(
                    "taking pushed breaker events on http://{addr}/api/breaker-events (bearer token: --token)"
                );
            }
            Some(web::push_listener::spawn(listener, inbox, token))
        }
        Ok(None) => None,
        Err(error) => {
            if let Some(stack) = stack {
                stack.shutdown().await;
            }
            return Err(error.into());
        }
    };
    // Every target must answer and take the token before anything is stored or changed; each is probed for what
    // it offers, and what it does not offer is said (a run cannot measure it there).
    let checked = match runner.check_spec_targets(spec).await {
        Ok(lines) => {
            // On stderr also with --json: what a target cannot measure is never left unsaid.
            for line in lines {
                err_out!("{line}");
            }
            Ok(())
        }
        // A spec beyond what the testbed takes (a lease over the agent's cap …) is a spec mistake: nothing is stored.
        Err(RunnerError::Spec(message)) => {
            err_out!("{message}");
            std::process::exit(EXIT_BAD_SPEC);
        }
        Err(error) => Err(anyhow::Error::from(error)),
    };
    // The preflight waits a bounded time for every load worker and names the missing ones.
    let checked = match (checked, &workers) {
        (Ok(()), Some(pool)) => match pool.wait_for_all(WORKERS_WAIT).await {
            Ok(()) => {
                let names: Vec<String> = pool.statuses().into_iter().map(|s| s.name).collect();
                err_out!("load workers connected: {}", names.join(", "));
                Ok(())
            }
            Err(missing) => Err(missing.into()),
        },
        (checked, _) => checked,
    };
    // Runs of this invocation that did not end as planned, said on stderr at the end.
    let mut unplanned = Vec::new();
    let result = match checked {
        Ok(()) => {
            // Ctrl-C ends the run in progress as a finish would (fault removed first, every task
            // stopped); the run is marked interrupted and `tolerant resume` redoes it.
            let interrupt = async {
                if tokio::signal::ctrl_c().await.is_ok() {
                    err_out!(
                        "interrupted: ending the run in progress (its fault is removed first)"
                    );
                    cancel.cancel();
                }
                std::future::pending::<()>().await
            };
            tokio::select! {
                driven = drive(&runner, spec, choice, quiet, &mut unplanned) => driven,
                () = interrupt => unreachable!("the interrupt waiter never ends"),
            }
        }
        Err(error) => Err(error),
    };
    if let Some(pool) = workers {
        pool.finish_and_wait(Duration::from_secs(5)).await;
    }
    if let Some(ingest) = ingest {
        ingest.abort();
    }
    if let Some(stack) = stack {
        stack.shutdown().await;
    }
    for task in background {
        task.abort();
    }
    if unplanned.is_empty() {
        return result;
    }
    err_out!(
        "{} run(s) did not end as planned; their figures are not a measurement:",
        unplanned.len()
    );
    for run in &unplanned {
        err_out!("  {run}");
    }
    match result {
        Ok(experiment) => {
            if let Err(error) = super::condition_table::print(store, experiment, quiet).await {
                err_out!("error: {error:#}");
            }
        }
        Err(error) => err_out!("error: {error:#}"),
    }
    std::process::exit(EXIT_RUNS_FAILED);
}

/// A run that did not end as planned: failed (a panic, its load generator), or aborted for a reason other
/// than its stop condition (its fault not applied, …). `None` for a finished run or one its stop condition
/// ended (a verdict).
fn unplanned_end(
    run: RunId,
    condition: &str,
    round: u32,
    status: Status,
    reason: Option<&str>,
) -> Option<String> {
    let stopped = reason.is_some_and(|r| r.starts_with(STOP_CONDITION_REASON));
    match status {
        Status::Failed | Status::Degraded => {}
        Status::Aborted if !stopped => {}
        _ => return None,
    }
    Some(format!(
        "run {run} (round {}, {condition}): {} — {}",
        round + 1,
        status.as_str(),
        reason.unwrap_or("no reason given")
    ))
}

/// Creates or resumes the experiment and runs what is left of its plan, reporting progress.
#[allow(clippy::disallowed_methods)] // the CLI's progress shows wall time
async fn drive(
    runner: &Runner,
    spec: &ExperimentSpec,
    choice: StartChoice,
    quiet: bool,
    unplanned: &mut Vec<String>,
) -> anyhow::Result<ExperimentId> {
    let per_run = spec.run_warmup() + spec.run_duration();
    let started = Instant::now();
    // Positions a resume skips (known once it is prepared): they count as done in the bar.
    let skipped = Cell::new(0usize);
    let resumed = |point: &ResumePoint| {
        skipped.set(point.done.len());
        if !quiet {
            err_out!(
                "resuming experiment {}: {} of {} runs finished, {} interrupted attempt(s) \
                 discarded, {} fault(s) cleared, {} run(s) stopped by the stop condition (not run \
                 again)",
                point.experiment,
                point.done.len() - point.stopped,
                point.total,
                point.interrupted,
                point.faults_cleared,
                point.stopped,
            );
        }
    };
    let mut ran = 0usize;
    let progress = |event: Progress| match event {
        Progress::RunStarted { planned, total, .. } => {
            let left = total.saturating_sub(skipped.get() + ran);
            let eta = if ran == 0 {
                per_run * u32::try_from(left).unwrap_or(u32::MAX)
            } else {
                started.elapsed().div_f64(ran as f64) * u32::try_from(left).unwrap_or(0)
            };
            if !quiet {
                err_out!(
                    "{} [{}/{total}] round {} · {} · ETA {}",
                    progress_bar(skipped.get() + ran, total, PROGRESS_BAR_WIDTH),
                    planned.sequence + 1,
                    planned.round + 1,
                    planned.condition.label(),
                    humantime::format_duration(Duration::from_secs(eta.as_secs())),
                );
            }
        }
        Progress::RunFinished {
            run,
            planned,
            status,
            availability,
            reason,
            ..
        } => {
            ran += 1;
            unplanned.extend(unplanned_end(
                run,
                &planned.condition.label(),
                planned.round,
                status,
                reason.as_deref(),
            ));
            if !quiet {
                err_out!(
                    "        {} · availability {}{}",
                    status.as_str(),
                    availability.map_or("-".to_owned(), |a| format!("{:.3}", a)),
                    reason
                        .as_deref()
                        .map(|r| format!(" · {r}"))
                        .unwrap_or_default()
                );
            }
        }
    };
    Ok(runner.start(spec, choice, resumed, progress).await?)
}

/// Characters of the progress bar printed before each run.
const PROGRESS_BAR_WIDTH: usize = 24;

/// `done` of `total` as a bar of `width` cells, e.g. `[█████·····]  50%`.
fn progress_bar(done: usize, total: usize, width: usize) -> String {
    let fraction = if total == 0 {
        1.0
    } else {
        done.min(total) as f64 / total as f64
    };
    let filled = (fraction * width as f64).round() as usize;
    format!(
        "[{}{}] {:>3.0}%",
        "█".repeat(filled),
        "·".repeat(width - filled),
        fraction * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::progress_bar;

    #[test]
    fn the_progress_bar_fills_with_the_runs_done() {
        assert_eq!(progress_bar(0, 4, 8), "[········]   0%");
        assert_eq!(progress_bar(1, 4, 8), "[██······]  25%");
        assert_eq!(progress_bar(4, 4, 8), "[████████] 100%");
        // More done than planned (never expected) stays a full bar.
        assert_eq!(progress_bar(5, 4, 8), "[████████] 100%");
        assert_eq!(progress_bar(0, 0, 4), "[████] 100%");
    }
}
