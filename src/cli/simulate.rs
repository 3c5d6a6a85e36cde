//! `tolerant simulate`: the breaker on a virtual clock (`breaker::sim`) from flags, in milliseconds, before an hour
//! is spent measuring. Every flag is a setting of `breaker::sim::Settings` (same name, dashes for underscores);
//! a flag left out keeps the default of the model `--model` names (`at-timeout`, the default, or `published`: the
//! published simulator's model and defaults). A value out of bounds exits with status 2 and an error
//! naming the flag.

use crate::cli::output::{err_out, out, out_text};
use std::time::Duration;

use breaker::State;
use breaker::sim::{self, CallFailure, HalfOpen, Model, Settings, Simulation};
use clap::{Args, ValueEnum};
use serde_json::{Map, Value, json};

/// Exit status for a value out of bounds (as for a usage error).
pub const EXIT_BAD_INPUT: i32 = 2;

/// How failing calls fail.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Fault {
    /// No answer until the caller's timeout.
    Hang,
    /// An instant error.
    Error,
}

/// When the breaker learns a call's outcome (`breaker::sim::Model`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModelArg {
    /// At the call's end, as in production: a hang's failure arrives at the timeout (the default).
    AtTimeout,
    /// The published simulator's: every outcome seen at once, a hang still costing its caller the timeout;
    /// the flags left out take the published defaults.
    Published,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The model: at-timeout (today's, the default) or published (the published simulator's, with its defaults).
    #[arg(long, value_enum)]
    pub model: Option<ModelArg>,
    /// Simulated time (seconds, or with a unit: 60s, 30m).
    #[arg(long, value_parser = sim::parse_duration)]
    pub window: Option<Duration>,
    /// When the outage starts.
    #[arg(long, value_parser = sim::parse_duration)]
    pub outage_start: Option<Duration>,
    /// How long the outage lasts.
    #[arg(long, value_parser = sim::parse_duration)]
    pub outage: Option<Duration>,
    /// Healthy time between outages: the outage repeats, on/off (0 = once).
    #[arg(long, value_parser = sim::parse_duration)]
    pub healthy: Option<Duration>,
    /// Consecutive failures that trip the breaker.
    #[arg(long)]
    pub threshold: Option<u32>,
    /// How long the breaker stays open.
    #[arg(long, value_parser = sim::parse_duration)]
    pub open_window: Option<Duration>,
    /// Multiplier of the open window per repeated trip (1 = fixed).
    #[arg(long)]
    pub backoff: Option<f64>,
    /// Probe successes that close the breaker.
    #[arg(long)]
    pub successes_to_close: Option<u32>,
    /// Requests per second over all instances (a constant-rate workload).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Users thinking between requests instead of a constant rate (a closed workload like an experiment's).
    #[arg(long)]
    pub users: Option<u32>,
    /// Shortest think time of a user.
    #[arg(long, value_parser = sim::parse_duration)]
    pub think_min: Option<Duration>,
    /// Longest think time of a user.
    #[arg(long, value_parser = sim::parse_duration)]
    pub think_max: Option<Duration>,
    /// Share of requests that call the dependency, in (0, 1].
    #[arg(long)]
    pub share: Option<f64>,
    /// The caller's timeout: what a hanging call costs it.
    #[arg(long, value_parser = sim::parse_duration)]
    pub timeout: Option<Duration>,
    /// What a successful call costs its caller.
    #[arg(long, value_parser = sim::parse_duration)]
    pub latency: Option<Duration>,
    /// Half-open policy: every-arrival (the idealised model) or probes:N (at most N probes at once).
    #[arg(long, value_parser = <HalfOpen as std::str::FromStr>::from_str)]
    pub half_open: Option<HalfOpen>,
    /// How failing calls fail.
    #[arg(long, value_enum)]
    pub fault: Option<Fault>,
    /// Share of calls that fail during the outage, in [0, 1] (1 = all).
    #[arg(long)]
    pub failure_rate: Option<f64>,
    /// Instances of the caller, one breaker each, recovering together.
    #[arg(long)]
    pub instances: Option<u32>,
    /// Jitter of the open window, a fraction in [0, 1).
    #[arg(long)]
    pub jitter: Option<f64>,
    /// Workers per instance; a request finding all busy is refused (0 = unbounded).
    #[arg(long)]
    pub workers: Option<u32>,
    /// Calls per second the dependency serves while warming up after an outage (0 = no warm-up).
    #[arg(long)]
    pub warm_capacity: Option<f64>,
    /// How long it warms up.
    #[arg(long, value_parser = sim::parse_duration)]
    pub warmup: Option<Duration>,
    /// Seed of every random draw.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the totals and the per-second series as JSON.
    #[arg(long)]
    pub json: bool,
}

impl SimulateArgs {
    /// The model's defaults with every given flag applied.
    pub fn settings(&self) -> Settings {
        let model = match self.model {
            Some(ModelArg::Published) => Model::Published,
            Some(ModelArg::AtTimeout) | None => Model::AtTimeout,
        };
        let mut s = Settings::defaults_of(model);
        macro_rules! take {
            ($($field:ident),*) => { $( if let Some(value) = self.$field { s.$field = value; } )* };
        }
        take!(
            window,
            outage_start,
            outage,
            healthy,
            threshold,
            open_window,
            backoff,
            successes_to_close,
            rate,
            users,
            think_min,
            think_max,
            share,
            timeout,
            latency,
            half_open,
            failure_rate,
            instances,
            jitter,
            workers,
            warm_capacity,
            warmup,
            seed
        );
        if let Some(fault) = self.fault {
            s.fault = match fault {
                Fault::Hang => CallFailure::Hang,
                Fault::Error => CallFailure::Error,
            };
        }
        s
    }
}

/// The `--json` document: the totals under the keys, and the per-second series.
pub fn json_document(run: &Simulation) -> Value {
    let t = &run.totals;
    let mut doc = Map::new();
    doc.insert("model".into(), json!(run.model));
    doc.insert("reached".into(), json!(t.reached));
    doc.insert("never_made".into(), json!(t.never_made));
    doc.insert("slow_failures".into(), json!(t.slow_failures));
    doc.insert("fast_failures".into(), json!(t.fast_failures));
    doc.insert("failed_with_breaker".into(), json!(t.failed_with_breaker));
    doc.insert(
        "failed_without_breaker".into(),
        json!(t.failed_without_breaker),
    );
    doc.insert("successful".into(), json!(t.successful));
    doc.insert(
        "rejected_after_recovery_s".into(),
        json!(t.rejected_after_recovery_s),
    );
    doc.insert("caller_seconds_with".into(), json!(t.caller_seconds_with));
    doc.insert(
        "caller_seconds_without".into(),
        json!(t.caller_seconds_without),
    );
    doc.insert("seconds".into(), json!(run.seconds));
    Value::Object(doc)
}

/// One character per second: `.` closed, `O` open, `h` half-open.
fn timeline(run: &Simulation) -> String {
    run.seconds
        .iter()
        .map(|s| match s.state {
            State::Closed => '.',
            State::Open => 'O',
            State::HalfOpen => 'h',
        })
        .collect()
}

/// The model's name and what it assumes about when the breaker learns an outcome.
fn model_line(model: Model) -> String {
    match model {
        Model::AtTimeout => {
            format!("{model} (a hanging call's failure reaches the breaker at the timeout)")
        }
        Model::Published => format!(
            "{model} (the published simulator's: the breaker sees every outcome at once, the caller waits the timeout)"
        ),
    }
}

fn text_report(settings: &Settings, run: &Simulation) -> String {
    let t = &run.totals;
    let c = &run.closed_form;
    let mut out = String::new();
    let line = |out: &mut String, label: &str, with: String, without: String| {
        out.push_str(&format!("  {label:<34} {with:>12} {without:>12}\n"));
    };
    out.push_str(&format!("model: {}\n", model_line(run.model)));
    out.push_str(&format!(
        "breaker: {} consecutive failures, open {}, {} to close, half-open {}; {} instance(s)\n",
        settings.threshold,
        humantime::format_duration(settings.open_window),
        settings.successes_to_close,
        settings.half_open,
        settings.instances,
    ));
    out.push_str(&format!(
        "state per second (. closed, O open, h half-open, instance 0):\n  {}\n\n",
        timeline(run)
    ));
    out.push_str(&format!(
        "  {:<34} {:>12} {:>12}\n",
        "", "with breaker", "without"
    ));
    line(
        &mut out,
        "requests",
        t.requests.to_string(),
        t.requests.to_string(),
    );
    line(
        &mut out,
        "successful",
        t.successful.to_string(),
        t.successful_without_breaker.to_string(),
    );
    line(
        &mut out,
        "failed",
        t.failed_with_breaker.to_string(),
        t.failed_without_breaker.to_string(),
    );
    line(
        &mut out,
        "caller-seconds blocked",
        format!("{:.1}", t.caller_seconds_with),
        format!("{:.1}", t.caller_seconds_without),
    );
    line(
        &mut out,
        "refused by a full worker pool",
        t.refused_with.to_string(),
        t.refused_without.to_string(),
    );
    out.push_str(&format!(
        "\n  calls reached {}, never made {}, slow failures {}, fast failures {}\n",
        t.reached, t.never_made, t.slow_failures, t.fast_failures
    ));
    out.push_str(&format!(
        "  rejected after recovery: {:.1} s of traffic; opens {} (bound {}{}); open {:.1} s per instance\n",
        t.rejected_after_recovery_s,
        t.opens,
        c.opens_bound,
        c.opens_estimate
            .map(|e| format!(", estimate {e:.1}"))
            .unwrap_or_default(),
        t.open_s,
    ));
    out.push_str(&format!(
        "  probes {} (peak {} per second)",
        t.probes, t.peak_probes_per_s
    ));
    if let Some(jitter) = c.jitter_needed_s {
        let probes = match settings.half_open {
            HalfOpen::Probes(probes) => probes.to_string(),
            HalfOpen::EveryArrival => "p".to_owned(),
        };
        out.push_str(&format!(
            "; jitter needed Δ ≥ N × p / C_warm = {} × {probes} / {} = {jitter:.2} s",
            settings.instances, settings.warm_capacity
        ));
    }
    if let Some(exhaustion) = c.time_to_exhaustion_s {
        out.push_str(&format!("; time to pool exhaustion {exhaustion:.2} s"));
    }
    out.push('\n');
    out
}

pub fn run(args: SimulateArgs) -> anyhow::Result<()> {
    let settings = args.settings();
    let simulation = settings.scenario().map(|s| sim::simulate(&s));
    let run = match simulation {
        Ok(run) => run,
        Err(error) => {
            err_out!(
                "error: --{}: {}",
                error.field.replace('_', "-"),
                error.message
            );
            std::process::exit(EXIT_BAD_INPUT);
        }
    };
    if args.json {
        out!("{}", serde_json::to_string(&json_document(&run))?);
    } else {
        out_text!("{}", text_report(&settings, &run));
    }
    Ok(())
}
