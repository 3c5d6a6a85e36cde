//! The spec file's top-level table as read (every value keeps its span) and `parse`, which checks each
//! section in turn and builds the valid `ExperimentSpec`; the sections' own tables live beside it.

mod breaker;
mod fault;
mod load;
mod stop;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::spec::bounds::{
    DEFAULT_LEASE, MAX_NAME_BYTES, MAX_ROUNDS, MAX_RUN_DURATION, MAX_RUNS, MIN_RUN_DURATION,
    TIME_SCALE_RANGE,
};
use crate::spec::checker::Checker;
use crate::spec::criteria::{Criterion, CriterionError, parse_criteria};
use crate::spec::error::SpecError;
use crate::spec::experiment::ExperimentSpec;
use crate::spec::model::{
    BreakerMode, BreakerSpec, ConditionFault, FaultFactor, FaultKindName, MatchRule, Order,
};
use crate::spec::targets::SERVICE_NAMES;
use breaker::RawBreaker;
use fault::RawFault;
use load::RawLoad;
use stop::RawStop;

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
    targets: Option<BTreeMap<Spanned<String>, Spanned<crate::spec::targets::RawTarget>>>,
    /// Release-gate criteria (`[[validate]]`), checked by [`crate::stats::parse_criteria`].
    validate: Option<Spanned<toml::Value>>,
    /// Foreign breaker sources (`[[sources]]`), checked by [`crate::spec::sources`].
    sources: Option<Spanned<Vec<Spanned<crate::spec::sources::RawSource>>>>,
}

pub(super) fn parse(source: &str) -> Result<ExperimentSpec, SpecError> {
    let raw: RawSpec = toml::from_str(source).map_err(|e| SpecError::from_toml(source, &e))?;
    let check = Checker::new(source);

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
    if crate::spec::scale_duration(duration, time_scale) < MIN_RUN_DURATION {
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
    let run_length = crate::spec::scale_duration(duration.saturating_add(warmup), time_scale);
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

    let load = load::load(&check, raw.load.get_ref())?;
    let mut fault = match &raw.fault {
        Some(fault) => fault::fault(&check, fault.get_ref())?,
        // No [fault]: one level, no injection.
        None => FaultFactor {
            target: boutique::ServiceName::Payment.into(),
            kinds: vec![ConditionFault::Error {
                status: agent::api::ErrorStatus::INTERNAL_SERVER_ERROR,
            }],
            rates: vec![0.0],
            match_rule: MatchRule::default(),
            lease: DEFAULT_LEASE,
            schedule: None,
            profiles: Vec::new(),
        },
    };
    let breaker = match &raw.breaker {
        Some(breaker) => breaker::breaker(&check, breaker.get_ref(), time_scale)?,
        None => BreakerSpec {
            modes: vec![BreakerMode::Enforce],
            services: None,
            instances: 1,
            config: ::breaker::BreakerConfig::default(),
            configs: Vec::new(),
        },
    };
    let stop = match &raw.stop {
        Some(stop) => Some(stop::stop(&check, stop.get_ref())?),
        None => None,
    };

    let (targets, offers) = match &raw.targets {
        Some(raw_targets) => crate::spec::targets::targets(&check, raw_targets)?,
        None => Default::default(),
    };
    // A fault names a Tolerant service (every replica of it) or one replica's label (`checkout#2`, a container
    // fault on that replica only), or with targets of your own any of them (the dependency behind the agent).
    if let Some(raw_fault) = &raw.fault {
        let target = &fault.target;
        if !SERVICE_NAMES.contains(&target.service()) && !targets.contains_key(target) {
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
        fault.schedule = Some(crate::spec::schedule::schedule(
            &check,
            raw_schedule,
            duration.saturating_add(warmup),
            time_scale,
        )?);
    }
    // Profiles' schedules are checked against the run's length too.
    if let Some(raw_profiles) = raw
        .fault
        .as_ref()
        .and_then(|f| f.get_ref().profiles.as_ref())
    {
        fault.profiles = fault::profiles(
            &check,
            raw_profiles,
            duration.saturating_add(warmup),
            time_scale,
        )?;
        if let Some(kind) = fault.kinds.iter().find(|k| k.name().is_container()) {
            return Err(check.error(
                "fault.profiles",
                raw_profiles.span(),
                format!(
                    "kind \"{}\" acts on containers for the whole run; profiles are for the agent's kinds",
                    kind.name().as_str()
                ),
            ));
        }
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
        Some(sources) => crate::spec::sources::sources(&check, sources)?,
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
        .saturating_mul(spec.fault.rates.len().max(spec.fault.profiles.len()))
        .saturating_mul(spec.breaker.configs.len().max(1))
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

impl ExperimentSpec {
    /// Parses and validates a spec. The returned spec is runnable; any problem is a [`SpecError`].
    pub fn parse(source: &str) -> Result<Self, SpecError> {
        parse(source)
    }

    /// Reads and validates a spec file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, SpecError> {
        let path = path.as_ref();
        let source = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&source)
    }
}

/// Checks that every criterion names a condition `spec` runs (a fault rate, breaker mode and fault
/// kind it has).
pub fn check_against_spec(
    criteria: &[Criterion],
    spec: &ExperimentSpec,
) -> Result<(), CriterionError> {
    for (index, criterion) in criteria.iter().enumerate() {
        let not_in_spec = |message: String| CriterionError::NotInSpec { index, message };
        if !spec
            .fault
            .rates
            .iter()
            .any(|rate| (rate - criterion.fault_rate).abs() < 1e-9)
        {
            return Err(not_in_spec(format!(
                "fault_rate {} is not one of fault.rates",
                criterion.fault_rate
            )));
        }
        if !spec.breaker.modes.contains(&criterion.breaker) {
            return Err(not_in_spec(format!(
                "breaker `{}` is not one of breaker.modes",
                criterion.breaker.as_str()
            )));
        }
        let kinds: Vec<FaultKindName> = spec.fault.kinds.iter().map(|k| k.name()).collect();
        match criterion.fault_kind {
            Some(kind) if !kinds.contains(&kind) => {
                return Err(not_in_spec(format!(
                    "fault_kind `{}` is not one of the spec's fault kinds",
                    kind.as_str()
                )));
            }
            None if kinds.len() > 1 => {
                return Err(not_in_spec(
                    "fault_kind is needed: the experiment has several fault kinds".to_owned(),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}
