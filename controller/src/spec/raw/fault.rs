//! The `[fault]` table as read and its check: target, kinds, rates, delay and jitter, signal, match, lease
//! and the schedule (checked by `spec::schedule` once the run's length is known).

use std::time::Duration;

use crate::docker::fault::SIGNALS;
use serde::Deserialize;
use toml::Spanned;

use crate::spec::bounds::{DEFAULT_LEASE, MAX_FAULT_DELAY, MAX_LEASE, MAX_RATE_LEVELS};
use crate::spec::checker::Checker;
use crate::spec::error::SpecError;
use crate::spec::model::{ConditionFault, FaultFactor, FaultKindName, MatchRule};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) target: Spanned<String>,
    pub(super) kind: Option<Spanned<FaultKindName>>,
    pub(super) kinds: Option<Spanned<Vec<Spanned<FaultKindName>>>>,
    pub(super) status: Option<Spanned<u16>>,
    pub(super) rates: Option<Spanned<Vec<Spanned<f64>>>>,
    pub(super) delay: Option<Spanned<String>>,
    pub(super) jitter: Option<Spanned<String>>,
    /// The signal of kind `kill` (default SIGKILL).
    pub(super) signal: Option<Spanned<String>>,
    #[serde(rename = "match")]
    pub(super) match_rule: Option<Spanned<MatchRule>>,
    pub(super) lease: Option<Spanned<String>>,
    /// When the fault is on inside a run (default: the whole run), checked by [`crate::spec::schedule`].
    pub(super) schedule: Option<Spanned<crate::spec::schedule::RawSchedule>>,
    /// `[[fault.profiles]]`: named (rate, schedule) levels instead of `rates` (and `schedule`).
    pub(super) profiles: Option<Spanned<Vec<Spanned<RawFaultProfile>>>>,
}

/// One `[[fault.profiles]]` table.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFaultProfile {
    name: Spanned<String>,
    rate: Spanned<f64>,
    schedule: Option<Spanned<crate::spec::schedule::RawSchedule>>,
}

/// `[[fault.profiles]]`: names, rates and schedules (checked against the run's length, as `fault.schedule`).
pub(super) fn profiles(
    check: &Checker<'_>,
    raw: &Spanned<Vec<Spanned<RawFaultProfile>>>,
    run_length: Duration,
    time_scale: f64,
) -> Result<Vec<crate::spec::FaultProfile>, SpecError> {
    use super::breaker::{MAX_NAMED_LEVELS, level_name};
    if raw.get_ref().is_empty() || raw.get_ref().len() > MAX_NAMED_LEVELS {
        return Err(check.error(
            "fault.profiles",
            raw.span(),
            format!("must list 1 to {MAX_NAMED_LEVELS} profiles"),
        ));
    }
    let mut profiles: Vec<crate::spec::FaultProfile> = Vec::new();
    for (i, entry) in raw.get_ref().iter().enumerate() {
        let table = entry.get_ref();
        let taken: Vec<String> = profiles.iter().map(|p| p.name.clone()).collect();
        let name = level_name(
            check,
            &format!("fault.profiles[{i}].name"),
            &table.name,
            &taken,
        )?;
        let rate = check.fraction(&format!("fault.profiles[{i}].rate"), &table.rate)?;
        let schedule = match &table.schedule {
            Some(schedule) => Some(
                crate::spec::schedule::schedule(check, schedule, run_length, time_scale).map_err(
                    |error| match error {
                        SpecError::Field {
                            field,
                            location,
                            message,
                        } => SpecError::Field {
                            field: field.replacen("fault.", &format!("fault.profiles[{i}]."), 1),
                            location,
                            message,
                        },
                        other => other,
                    },
                )?,
            ),
            None => None,
        };
        profiles.push(crate::spec::FaultProfile {
            name,
            rate,
            schedule,
        });
    }
    Ok(profiles)
}

pub(super) fn fault(check: &Checker<'_>, raw: &RawFault) -> Result<FaultFactor, SpecError> {
    // Checked against the services and `[targets]` once both are known (see `parse`).
    let target = check.replica_id("fault.target", &raw.target)?;

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
    // A setting of some kinds only: an error naming them when none of them is listed.
    let used_by = |kinds: &[FaultKindName], field: &str, span: std::ops::Range<usize>| {
        if kinds.iter().any(|kind| has(*kind)) {
            return Ok(());
        }
        let quoted: Vec<String> = kinds
            .iter()
            .map(|kind| format!("\"{}\"", kind.as_str()))
            .collect();
        let message = match quoted.as_slice() {
            [one] => format!("only used by kind {one}"),
            _ => format!("only used by kinds {}", quoted.join(" and ")),
        };
        Err(check.error(field, span, message))
    };

    let status = match &raw.status {
        Some(status) => {
            // The agent's own rule (400–599), so a spec never plans a status the agent refuses.
            let checked = agent::api::ErrorStatus::new(*status.get_ref())
                .map_err(|error| check.error("fault.status", status.span(), error.message))?;
            used_by(&[FaultKindName::Error], "fault.status", status.span())?;
            checked
        }
        None => agent::api::ErrorStatus::INTERNAL_SERVER_ERROR,
    };
    let delay = match &raw.delay {
        Some(delay) => {
            used_by(
                &[FaultKindName::Delay, FaultKindName::NetDelay],
                "fault.delay",
                delay.span(),
            )?;
            let v = check.duration_at_most("fault.delay", delay, MAX_FAULT_DELAY)?;
            if v.is_zero() {
                return Err(check.error("fault.delay", delay.span(), "must be above zero"));
            }
            if has(FaultKindName::NetDelay) && v > crate::docker::netem::MAX_NET_DELAY {
                return Err(check.error(
                    "fault.delay",
                    delay.span(),
                    format!(
                        "kind \"net_delay\" adds at most {}",
                        humantime::format_duration(crate::docker::netem::MAX_NET_DELAY)
                    ),
                ));
            }
            Some(v)
        }
        None => None,
    };
    let jitter = match &raw.jitter {
        Some(jitter) => {
            used_by(&[FaultKindName::Delay], "fault.jitter", jitter.span())?;
            check.duration_at_most("fault.jitter", jitter, MAX_FAULT_DELAY)?
        }
        None => Duration::ZERO,
    };

    let signal = match &raw.signal {
        Some(signal) => {
            used_by(&[FaultKindName::Kill], "fault.signal", signal.span())?;
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
        // A delay kind without `delay`: an error at the kind, with an example.
        let needs_delay = |example: &str| {
            delay.ok_or_else(|| {
                check.error(
                    "fault.delay",
                    name.span(),
                    format!(
                        "kind \"{}\" needs `delay` (e.g. \"{example}\")",
                        name.get_ref().as_str()
                    ),
                )
            })
        };
        kinds.push(match name.get_ref() {
            FaultKindName::Error => ConditionFault::Error { status },
            FaultKindName::Hang => ConditionFault::Hang,
            FaultKindName::Reset => ConditionFault::Reset,
            FaultKindName::Pause => ConditionFault::Pause,
            FaultKindName::Stop => ConditionFault::Stop,
            FaultKindName::Kill => ConditionFault::Kill { signal },
            FaultKindName::Restart => ConditionFault::Restart,
            FaultKindName::NetLoss => ConditionFault::NetLoss,
            FaultKindName::NetDelay => ConditionFault::NetDelay {
                delay: needs_delay("200ms")?,
            },
            FaultKindName::Delay => ConditionFault::Delay {
                delay: needs_delay("500ms")?,
                jitter,
            },
        });
    }

    let written_rates = match (&raw.rates, &raw.profiles) {
        (Some(rates), None) => rates,
        (None, Some(_)) => &Spanned::new(0..0, Vec::new()),
        (Some(rates), Some(_)) => {
            return Err(check.error(
                "fault.rates",
                rates.span(),
                "give either `rates` or [[fault.profiles]], not both",
            ));
        }
        (None, None) => {
            return Err(check.error(
                "fault.rates",
                raw.target.span(),
                "missing (or give [[fault.profiles]])",
            ));
        }
    };
    if let (Some(schedule), Some(_)) = (&raw.schedule, &raw.profiles) {
        return Err(check.error(
            "fault.schedule",
            schedule.span(),
            "each of [[fault.profiles]] has its own schedule",
        ));
    }
    if raw.profiles.is_none() && written_rates.get_ref().is_empty() {
        return Err(check.error("fault.rates", written_rates.span(), "must not be empty"));
    }
    if written_rates.get_ref().len() > MAX_RATE_LEVELS {
        return Err(check.error(
            "fault.rates",
            written_rates.span(),
            format!(
                "{} levels is more than the maximum {MAX_RATE_LEVELS}",
                written_rates.get_ref().len()
            ),
        ));
    }
    let mut rates = Vec::with_capacity(written_rates.get_ref().len());
    for (i, rate) in written_rates.get_ref().iter().enumerate() {
        let field = format!("fault.rates[{i}]");
        let v = check.fraction(&field, rate)?;
        if rates.contains(&v) {
            return Err(check.error(&field, rate.span(), format!("{v} is listed twice")));
        }
        rates.push(v);
    }

    // The agent's own rules (method letters and `-`, upper-cased; path prefix from `/`, bounded), so a spec
    // never asks for a fault the agent refuses; the error names the spec's field.
    let match_rule = match &raw.match_rule {
        Some(rule) => rule.get_ref().clone().checked().map_err(|error| {
            check.error(
                &format!("fault.{}", error.field),
                rule.span(),
                error.message,
            )
        })?,
        None => MatchRule::default(),
    };

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

    Ok(FaultFactor {
        target,
        kinds,
        rates,
        match_rule,
        lease,
        schedule: None,
        profiles: Vec::new(),
    })
}
