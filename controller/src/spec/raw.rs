//! Raw, span-keeping spec structs and the validation that turns them into an `ExperimentSpec`.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::Duration;

use crate::docker::fault::SIGNALS;
use crate::stats::{Criterion, CriterionError, check_against_spec, parse_criteria};
use serde::Deserialize;
use toml::Spanned;

use super::{
    BreakerMode, BreakerSpec, ExperimentSpec, FaultKind, FaultKindName, FaultSpec, LoadSpec,
    MatchRule, Mix, Order, SERVICE_NAMES, SpecError, StopSpec,
};

/// Default per-request client timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default fault lease asked of the agent.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// Default time a stop condition must hold.
pub const DEFAULT_STOP_WINDOW: Duration = Duration::from_secs(10);
/// A run shorter than this after scaling measures nothing useful.
pub const MIN_RUN_DURATION: Duration = Duration::from_secs(1);
/// Upper bound on virtual users (each is a task with its own connection).
pub const MAX_USERS: u32 = 100_000;
/// Upper bound on `rounds`.
pub const MAX_ROUNDS: u32 = 1_000;
/// Upper bound on the runs of one experiment (conditions × rounds), each stored as a row.
pub const MAX_RUNS: usize = 10_000;
/// Upper bound on `fault.rates` levels.
pub const MAX_RATE_LEVELS: usize = 101;
/// Upper bound on any duration as written (a year: a longer one is a typo, not a study).
pub const MAX_WRITTEN_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);
/// Upper bound on one run's warmup + measured time after scaling.
pub const MAX_RUN_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);
/// `time_scale` bounds: a study can be slowed down a thousandfold or sped up a millionfold.
pub const TIME_SCALE_RANGE: (f64, f64) = (1e-3, 1e6);
/// Open-model arrival rate bounds in tasks per second.
pub const RATE_RANGE: (f64, f64) = (1e-2, 1e6);
/// Upper bound on the per-request client timeout.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// Upper bound on a think time (as written).
pub const MAX_THINK_TIME: Duration = Duration::from_secs(3600);
/// Upper bound on a delay fault's delay and jitter (the agent caps a hold at `--max-hold` too).
pub const MAX_FAULT_DELAY: Duration = Duration::from_secs(3600);
/// Upper bound on the fault lease asked of the agent (its own maximum may be lower).
pub const MAX_LEASE: Duration = Duration::from_secs(3600);
/// Upper bound on the time a stop condition must hold.
pub const MAX_STOP_WINDOW: Duration = Duration::from_secs(24 * 3600);
/// Upper bound on the name's length in bytes.
pub const MAX_NAME_BYTES: usize = 200;
/// Upper bound on a match path prefix in bytes (the agent's).
pub const MAX_PATH_PREFIX_BYTES: usize = agent::api::MAX_PATH_PREFIX_BYTES;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    name: Spanned<String>,
    rounds: Option<Spanned<u32>>,
    duration: Spanned<String>,
    warmup: Option<Spanned<String>>,
    time_scale: Option<Spanned<f64>>,
    order: Option<Order>,
    seed: Option<u64>,
    load: Spanned<RawLoad>,
    fault: Option<Spanned<RawFault>>,
    breaker: Option<Spanned<RawBreaker>>,
    stop: Option<Spanned<RawStop>>,
    targets: Option<BTreeMap<Spanned<String>, Spanned<super::targets::RawTarget>>>,
    /// Release-gate criteria (`[[validate]]`), checked by [`crate::stats::parse_criteria`].
    validate: Option<Spanned<toml::Value>>,
    /// Foreign breaker sources (`[[sources]]`), checked by [`super::sources`].
    sources: Option<Spanned<Vec<Spanned<super::sources::RawSource>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLoad {
    users: Spanned<u32>,
    target: Option<Spanned<String>>,
    /// A workload of your own (instead of `mix`).
    tasks: Option<Spanned<Vec<Spanned<super::workload::RawTask>>>>,
    values: Option<Spanned<BTreeMap<String, super::workload::RawValues>>>,
    cookies: Option<Spanned<bool>>,
    /// Requests each user makes once when it starts (with `tasks`).
    on_start: Option<super::workload::RawOnStart>,
    think_time: Option<Spanned<Vec<Spanned<String>>>>,
    mix: Option<Mix>,
    rate: Option<Spanned<f64>>,
    timeout: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    target: Spanned<String>,
    kind: Option<Spanned<FaultKindName>>,
    kinds: Option<Spanned<Vec<Spanned<FaultKindName>>>>,
    status: Option<Spanned<u16>>,
    rates: Spanned<Vec<Spanned<f64>>>,
    delay: Option<Spanned<String>>,
    jitter: Option<Spanned<String>>,
    /// The signal of kind `kill` (default SIGKILL).
    signal: Option<Spanned<String>>,
    #[serde(rename = "match")]
    match_rule: Option<Spanned<MatchRule>>,
    lease: Option<Spanned<String>>,
    /// When the fault is on inside a run (default: the whole run), checked by [`super::schedule`].
    schedule: Option<Spanned<super::schedule::RawSchedule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBreaker {
    modes: Spanned<Vec<Spanned<BreakerMode>>>,
    trip: Option<Spanned<breaker::TripConfig>>,
    open: Option<Spanned<breaker::OpenConfig>>,
    half_open: Option<Spanned<breaker::HalfOpenConfig>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStop {
    availability_below: Option<Spanned<f64>>,
    window: Option<Spanned<String>>,
}

/// Collects field errors in source order; the first one is returned.
pub(super) struct Checker<'a> {
    source: &'a str,
}

impl<'a> Checker<'a> {
    pub(super) fn new(source: &'a str) -> Self {
        Checker { source }
    }

    pub(super) fn error(
        &self,
        field: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> SpecError {
        SpecError::field_at(self.source, field, span, message)
    }

    /// A duration as written, at most `max`.
    fn duration_at_most(
        &self,
        field: &str,
        value: &Spanned<String>,
        max: Duration,
    ) -> Result<Duration, SpecError> {
        let duration = humantime::parse_duration(value.get_ref().trim()).map_err(|error| {
            self.error(
                field,
                value.span(),
                format!(
                    "`{}` is not a duration ({error}); write e.g. \"30s\", \"250ms\", \"5m\"",
                    value.get_ref()
                ),
            )
        })?;
        if duration > max {
            return Err(self.error(
                field,
                value.span(),
                format!(
                    "{} is longer than the maximum {}",
                    value.get_ref().trim(),
                    humantime::format_duration(max)
                ),
            ));
        }
        Ok(duration)
    }

    /// A duration as written, at most [`MAX_WRITTEN_DURATION`].
    pub(super) fn duration(
        &self,
        field: &str,
        value: &Spanned<String>,
    ) -> Result<Duration, SpecError> {
        self.duration_at_most(field, value, MAX_WRITTEN_DURATION)
    }

    /// A finite number within `range` (inclusive).
    fn number_in(
        &self,
        field: &str,
        value: &Spanned<f64>,
        (min, max): (f64, f64),
        unit: &str,
    ) -> Result<f64, SpecError> {
        let v = *value.get_ref();
        if !(v.is_finite() && (min..=max).contains(&v)) {
            return Err(self.error(
                field,
                value.span(),
                format!("{v} is not a number of {unit} between {min} and {max}"),
            ));
        }
        Ok(v)
    }

    fn fraction(&self, field: &str, value: &Spanned<f64>) -> Result<f64, SpecError> {
        let v = *value.get_ref();
        if !(0.0..=1.0).contains(&v) {
            return Err(self.error(
                field,
                value.span(),
                format!("{v} is not a fraction between 0 and 1"),
            ));
        }
        Ok(v)
    }
}

pub(super) fn parse(source: &str) -> Result<ExperimentSpec, SpecError> {
    let raw: RawSpec = toml::from_str(source).map_err(|e| SpecError::from_toml(source, &e))?;
    let check = Checker { source };

    let name = raw.name.get_ref().trim().to_owned();
    if name.is_empty() {
        return Err(check.error("name", raw.name.span(), "must not be empty"));
    }

    if name.len() > MAX_NAME_BYTES {
        return Err(check.error(
            "name",
            raw.name.span(),
            format!("is longer than {MAX_NAME_BYTES} bytes"),
        ));
    }

    let rounds = match &raw.rounds {
        Some(rounds) if !(1..=MAX_ROUNDS).contains(rounds.get_ref()) => {
            return Err(check.error(
                "rounds",
                rounds.span(),
                format!("{} is not between 1 and {MAX_ROUNDS}", rounds.get_ref()),
            ));
        }
        Some(rounds) => *rounds.get_ref(),
        None => 1,
    };

    let time_scale = match &raw.time_scale {
        Some(scale) => check.number_in("time_scale", scale, TIME_SCALE_RANGE, "times")?,
        None => 1.0,
    };

    let duration = check.duration("duration", &raw.duration)?;
    if super::scale_duration(duration, time_scale) < MIN_RUN_DURATION {
        return Err(check.error(
            "duration",
            raw.duration.span(),
            format!(
                "{} divided by time_scale {time_scale} is shorter than {}",
                raw.duration.get_ref(),
                humantime::format_duration(MIN_RUN_DURATION)
            ),
        ));
    }
    let warmup = match &raw.warmup {
        Some(warmup) => {
            let v = check.duration("warmup", warmup)?;
            if v >= duration {
                return Err(check.error(
                    "warmup",
                    warmup.span(),
                    format!(
                        "{} is not shorter than duration {}",
                        warmup.get_ref(),
                        raw.duration.get_ref()
                    ),
                ));
            }
            v
        }
        None => Duration::ZERO,
    };
    let run_length = super::scale_duration(duration.saturating_add(warmup), time_scale);
    if run_length > MAX_RUN_DURATION {
        return Err(check.error(
            "duration",
            raw.duration.span(),
            format!(
                "warmup + duration divided by time_scale {time_scale} is {}, longer than the maximum {}",
                humantime::format_duration(run_length),
                humantime::format_duration(MAX_RUN_DURATION)
            ),
        ));
    }

    let load = load(&check, raw.load.get_ref())?;
    let mut fault = match &raw.fault {
        Some(fault) => self::fault(&check, fault.get_ref())?,
        // No [fault]: one level, no injection.
        None => FaultSpec {
            target: "payment".into(),
            kinds: vec![FaultKind::Error { status: 500 }],
            rates: vec![0.0],
            match_rule: MatchRule::default(),
            lease: DEFAULT_LEASE,
            schedule: None,
        },
    };
    let breaker = match &raw.breaker {
        Some(breaker) => self::breaker(&check, breaker.get_ref(), time_scale)?,
        None => BreakerSpec {
            modes: vec![BreakerMode::Enforce],
            config: breaker::BreakerConfig::default(),
        },
    };
    let stop = match &raw.stop {
        Some(stop) => Some(self::stop(&check, stop.get_ref())?),
        None => None,
    };

    let (targets, offers) = match &raw.targets {
        Some(raw_targets) => super::targets::targets(&check, raw_targets)?,
        None => Default::default(),
    };
    // A fault names a Tolerant service, or with targets of your own any of them (the dependency behind the agent).
    if let Some(raw_fault) = &raw.fault {
        let target = raw_fault.get_ref().target.get_ref();
        if !SERVICE_NAMES.contains(&target.as_str()) && !targets.contains_key(target) {
            return Err(check.error(
                "fault.target",
                raw_fault.get_ref().target.span(),
                format!(
                    "unknown target `{target}`; known: {}{}",
                    SERVICE_NAMES.join(", "),
                    targets
                        .keys()
                        .map(|name| format!(", {name}"))
                        .collect::<String>()
                ),
            ));
        }
    }
    // A schedule is checked against the run's length, known only now.
    if let Some(raw_schedule) = raw
        .fault
        .as_ref()
        .and_then(|f| f.get_ref().schedule.as_ref())
    {
        if let Some(kind) = fault.kinds.iter().find(|k| k.name().is_container()) {
            return Err(check.error(
                "fault.schedule",
                raw_schedule.span(),
                format!(
                    "kind \"{}\" acts on containers for the whole run; a schedule is for the agent's kinds (error, hang, delay, reset)",
                    kind.name().as_str()
                ),
            ));
        }
        fault.schedule = Some(super::schedule::schedule(
            &check,
            raw_schedule,
            duration.saturating_add(warmup),
            time_scale,
        )?);
    }
    // The virtual users load one target: `load.target`, the frontend by default.
    if !targets.is_empty() && !targets.contains_key(&load.target) {
        return Err(check.error(
            "load.target",
            raw.load.span(),
            format!(
                "`{}` is not in [targets]; the virtual users need a target to load",
                load.target
            ),
        ));
    }

    let sources = match &raw.sources {
        Some(sources) => super::sources::sources(&check, sources)?,
        None => Vec::new(),
    };

    let spec = ExperimentSpec {
        name,
        rounds,
        duration,
        warmup,
        time_scale,
        order: raw.order.unwrap_or_default(),
        seed: raw.seed.unwrap_or(0),
        load,
        fault,
        breaker,
        stop,
        targets,
        offers,
        sources,
        validate: Vec::new(),
        source: source.to_owned(),
    };
    let runs = spec
        .fault
        .kinds
        .len()
        .saturating_mul(spec.fault.rates.len())
        .saturating_mul(spec.breaker.modes.len())
        .saturating_mul(rounds as usize);
    if runs > MAX_RUNS {
        let span = raw.rounds.as_ref().map_or(0..0, Spanned::span);
        return Err(check.error(
            "rounds",
            span,
            format!(
                "conditions × rounds is {runs} runs, more than the maximum {MAX_RUNS} (lower rounds or the fault rates, kinds or breaker modes)"
            ),
        ));
    }
    let validate = match &raw.validate {
        Some(value) => criteria(&check, value, &spec)?,
        None => Vec::new(),
    };
    Ok(ExperimentSpec { validate, ..spec })
}

/// The `[[validate]]` criteria, each naming a condition `spec` runs; an error names the criterion's
/// field and points at the `validate` tables.
fn criteria(
    check: &Checker<'_>,
    value: &Spanned<toml::Value>,
    spec: &ExperimentSpec,
) -> Result<Vec<Criterion>, SpecError> {
    let blame = |error: CriterionError| {
        let field = match &error {
            CriterionError::Field { field, .. } => field.clone(),
            CriterionError::NotInSpec { index, .. } => format!("validate[{index}]"),
        };
        let message = match error {
            CriterionError::Field { message, .. } => message,
            CriterionError::NotInSpec { message, .. } => message,
        };
        check.error(&field, value.span(), message)
    };
    let criteria = parse_criteria(value.get_ref().clone()).map_err(blame)?;
    check_against_spec(&criteria, spec).map_err(blame)?;
    Ok(criteria)
}

fn load(check: &Checker<'_>, raw: &RawLoad) -> Result<LoadSpec, SpecError> {
    let users = *raw.users.get_ref();
    if users == 0 || users > MAX_USERS {
        return Err(check.error(
            "load.users",
            raw.users.span(),
            format!("{users} is not between 1 and {MAX_USERS}"),
        ));
    }
    let think_time = match &raw.think_time {
        Some(range) => {
            let [min, max] = range.get_ref().as_slice() else {
                return Err(check.error(
                    "load.think_time",
                    range.span(),
                    "must be [min, max], e.g. [\"1s\", \"10s\"]",
                ));
            };
            let min_value = check.duration_at_most("load.think_time[0]", min, MAX_THINK_TIME)?;
            let max_value = check.duration_at_most("load.think_time[1]", max, MAX_THINK_TIME)?;
            if min_value > max_value {
                return Err(check.error(
                    "load.think_time",
                    range.span(),
                    format!(
                        "minimum {} is above maximum {}",
                        min.get_ref(),
                        max.get_ref()
                    ),
                ));
            }
            (min_value, max_value)
        }
        None => (Duration::from_secs(1), Duration::from_secs(10)),
    };
    let rate = match &raw.rate {
        Some(rate) => Some(check.number_in("load.rate", rate, RATE_RANGE, "tasks per second")?),
        None => None,
    };
    let timeout = match &raw.timeout {
        Some(timeout) => {
            let v = check.duration_at_most("load.timeout", timeout, MAX_TIMEOUT)?;
            if v.is_zero() {
                return Err(check.error("load.timeout", timeout.span(), "must be above zero"));
            }
            v
        }
        None => DEFAULT_TIMEOUT,
    };
    let target = match &raw.target {
        Some(target) if target.get_ref().trim().is_empty() => {
            return Err(check.error("load.target", target.span(), "must not be empty"));
        }
        Some(target) => target.get_ref().trim().to_owned(),
        None => "frontend".to_owned(),
    };
    let custom = match &raw.tasks {
        Some(tasks) => {
            if raw.mix.is_some() {
                return Err(check.error(
                    "load.mix",
                    tasks.span(),
                    "give either `mix` or `tasks`, not both",
                ));
            }
            let cookies = raw.cookies.as_ref().is_none_or(|c| *c.get_ref());
            Some(super::workload::shared(super::workload::custom(
                check,
                tasks,
                raw.values.as_ref(),
                raw.on_start.as_ref(),
                cookies,
            )?))
        }
        None => {
            for (name, span) in [
                ("load.values", raw.values.as_ref().map(Spanned::span)),
                ("load.cookies", raw.cookies.as_ref().map(Spanned::span)),
                ("load.on_start", raw.on_start.as_ref().map(Spanned::span)),
            ] {
                if let Some(span) = span {
                    return Err(check.error(name, span, "only used with `[[load.tasks]]`"));
                }
            }
            None
        }
    };
    Ok(LoadSpec {
        users,
        target,
        custom,
        think_time,
        mix: raw.mix.unwrap_or_default(),
        rate,
        timeout,
    })
}

fn fault(check: &Checker<'_>, raw: &RawFault) -> Result<FaultSpec, SpecError> {
    // Checked against the services and `[targets]` once both are known (see `parse`).
    let target = raw.target.get_ref().as_str();

    let names: Vec<Spanned<FaultKindName>> = match (&raw.kind, &raw.kinds) {
        (Some(_), Some(kinds)) => {
            return Err(check.error(
                "fault.kinds",
                kinds.span(),
                "give either `kind` or `kinds`, not both",
            ));
        }
        (Some(kind), None) => vec![kind.clone()],
        (None, Some(kinds)) => {
            if kinds.get_ref().is_empty() {
                return Err(check.error("fault.kinds", kinds.span(), "must not be empty"));
            }
            kinds.get_ref().clone()
        }
        (None, None) => vec![Spanned::new(0..0, FaultKindName::Error)],
    };
    for (i, name) in names.iter().enumerate() {
        if names[..i].iter().any(|n| n.get_ref() == name.get_ref()) {
            return Err(check.error(
                &format!("fault.kinds[{i}]"),
                name.span(),
                format!("`{}` is listed twice", name.get_ref().as_str()),
            ));
        }
    }
    let has = |kind: FaultKindName| names.iter().any(|n| *n.get_ref() == kind);

    let status = match &raw.status {
        Some(status) => {
            let v = *status.get_ref();
            if !(400..=599).contains(&v) {
                return Err(check.error(
                    "fault.status",
                    status.span(),
                    format!("{v} is not an HTTP error status (400 to 599)"),
                ));
            }
            if !has(FaultKindName::Error) {
                return Err(check.error(
                    "fault.status",
                    status.span(),
                    "only used by kind \"error\"",
                ));
            }
            v
        }
        None => 500,
    };
    let delay = match &raw.delay {
        Some(delay) => {
            if !has(FaultKindName::Delay) {
                return Err(check.error(
                    "fault.delay",
                    delay.span(),
                    "only used by kind \"delay\"",
                ));
            }
            let v = check.duration_at_most("fault.delay", delay, MAX_FAULT_DELAY)?;
            if v.is_zero() {
                return Err(check.error("fault.delay", delay.span(), "must be above zero"));
            }
            Some(v)
        }
        None => None,
    };
    let jitter = match &raw.jitter {
        Some(jitter) => {
            if !has(FaultKindName::Delay) {
                return Err(check.error(
                    "fault.jitter",
                    jitter.span(),
                    "only used by kind \"delay\"",
                ));
            }
            check.duration_at_most("fault.jitter", jitter, MAX_FAULT_DELAY)?
        }
        None => Duration::ZERO,
    };

    let signal = match &raw.signal {
        Some(signal) => {
            if !has(FaultKindName::Kill) {
                return Err(check.error(
                    "fault.signal",
                    signal.span(),
                    "only used by kind \"kill\"",
                ));
            }
            let wanted = signal.get_ref().trim().to_ascii_uppercase();
            let wanted = if wanted.starts_with("SIG") {
                wanted
            } else {
                format!("SIG{wanted}")
            };
            let Some(known) = SIGNALS.iter().find(|known| **known == wanted) else {
                return Err(check.error(
                    "fault.signal",
                    signal.span(),
                    format!("`{wanted}` is not one of {}", SIGNALS.join(", ")),
                ));
            };
            *known
        }
        None => "SIGKILL",
    };

    let mut kinds = Vec::with_capacity(names.len());
    for name in &names {
        kinds.push(match name.get_ref() {
            FaultKindName::Error => FaultKind::Error { status },
            FaultKindName::Hang => FaultKind::Hang,
            FaultKindName::Reset => FaultKind::Reset,
            FaultKindName::Pause => FaultKind::Pause,
            FaultKindName::Stop => FaultKind::Stop,
            FaultKindName::Kill => FaultKind::Kill { signal },
            FaultKindName::Restart => FaultKind::Restart,
            FaultKindName::Delay => {
                let Some(delay) = delay else {
                    return Err(check.error(
                        "fault.delay",
                        name.span(),
                        "kind \"delay\" needs `delay` (e.g. \"500ms\")",
                    ));
                };
                FaultKind::Delay { delay, jitter }
            }
        });
    }

    if raw.rates.get_ref().is_empty() {
        return Err(check.error("fault.rates", raw.rates.span(), "must not be empty"));
    }
    if raw.rates.get_ref().len() > MAX_RATE_LEVELS {
        return Err(check.error(
            "fault.rates",
            raw.rates.span(),
            format!(
                "{} levels is more than the maximum {MAX_RATE_LEVELS}",
                raw.rates.get_ref().len()
            ),
        ));
    }
    let mut rates = Vec::with_capacity(raw.rates.get_ref().len());
    for (i, rate) in raw.rates.get_ref().iter().enumerate() {
        let field = format!("fault.rates[{i}]");
        let v = check.fraction(&field, rate)?;
        if rates.contains(&v) {
            return Err(check.error(&field, rate.span(), format!("{v} is listed twice")));
        }
        rates.push(v);
    }

    let mut match_rule = raw
        .match_rule
        .as_ref()
        .map(|rule| rule.get_ref().clone())
        .unwrap_or_default();
    if let Some(method) = &match_rule.method {
        // The agent's rule, so a spec never asks for a fault the agent refuses.
        let span = raw.match_rule.as_ref().map_or(0..0, Spanned::span);
        let method = agent::api::checked_method(method)
            .map_err(|error| check.error("fault.match.method", span, error.message))?;
        match_rule.method = Some(method);
    }
    if let Some(prefix) = &match_rule.path_prefix {
        let span = raw.match_rule.as_ref().map_or(0..0, Spanned::span);
        if prefix.len() > MAX_PATH_PREFIX_BYTES {
            return Err(check.error(
                "fault.match.path_prefix",
                span,
                format!("is longer than {MAX_PATH_PREFIX_BYTES} bytes"),
            ));
        }
        if !prefix.starts_with('/') {
            return Err(check.error(
                "fault.match.path_prefix",
                span,
                format!("`{prefix}` must start with /"),
            ));
        }
    }

    let lease = match &raw.lease {
        Some(lease) => {
            let v = check.duration_at_most("fault.lease", lease, MAX_LEASE)?;
            if v < Duration::from_secs(1) {
                return Err(check.error(
                    "fault.lease",
                    lease.span(),
                    "must be at least 1s (it is renewed at a third of its length)",
                ));
            }
            v
        }
        None => DEFAULT_LEASE,
    };

    Ok(FaultSpec {
        target: target.to_owned(),
        kinds,
        rates,
        match_rule,
        lease,
        schedule: None,
    })
}

fn breaker(
    check: &Checker<'_>,
    raw: &RawBreaker,
    time_scale: f64,
) -> Result<BreakerSpec, SpecError> {
    if raw.modes.get_ref().is_empty() {
        return Err(check.error("breaker.modes", raw.modes.span(), "must not be empty"));
    }
    let mut modes = Vec::new();
    for (i, mode) in raw.modes.get_ref().iter().enumerate() {
        if modes.contains(mode.get_ref()) {
            return Err(check.error(
                &format!("breaker.modes[{i}]"),
                mode.span(),
                format!("`{}` is listed twice", mode.get_ref().as_str()),
            ));
        }
        modes.push(*mode.get_ref());
    }
    let config = breaker::BreakerConfig {
        mode: breaker::Mode::Enforce,
        trip: raw
            .trip
            .as_ref()
            .map(|t| t.get_ref().clone())
            .unwrap_or_default(),
        open: raw
            .open
            .as_ref()
            .map(|o| o.get_ref().clone())
            .unwrap_or_default(),
        half_open: raw
            .half_open
            .as_ref()
            .map(|h| h.get_ref().clone())
            .unwrap_or_default(),
    };
    let section_span = |field: &str| {
        let section = match field.split('.').next() {
            Some("trip") => raw.trip.as_ref().map(Spanned::span),
            Some("open") => raw.open.as_ref().map(Spanned::span),
            Some("half_open") => raw.half_open.as_ref().map(Spanned::span),
            _ => None,
        };
        section.unwrap_or_else(|| raw.modes.span())
    };
    if let Err(error) = config.validate() {
        return Err(check.error(
            &format!("breaker.{}", error.field),
            section_span(&error.field),
            error.message,
        ));
    }
    if let Err(error) = super::scale_breaker_config(&config, time_scale).validate() {
        return Err(check.error(
            &format!("breaker.{}", error.field),
            section_span(&error.field),
            format!(
                "after dividing by time_scale {time_scale}: {}",
                error.message
            ),
        ));
    }
    Ok(BreakerSpec { modes, config })
}

fn stop(check: &Checker<'_>, raw: &RawStop) -> Result<StopSpec, SpecError> {
    let availability_below = match &raw.availability_below {
        Some(v) => Some(check.fraction("stop.availability_below", v)?),
        None => None,
    };
    let window = match &raw.window {
        Some(window) => {
            let v = check.duration_at_most("stop.window", window, MAX_STOP_WINDOW)?;
            if v < Duration::from_secs(1) {
                return Err(check.error("stop.window", window.span(), "must be at least 1s"));
            }
            v
        }
        None => DEFAULT_STOP_WINDOW,
    };
    Ok(StopSpec {
        availability_below,
        window,
    })
}
