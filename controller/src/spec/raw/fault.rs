//! The `[fault]` table as read and its check: target, kinds, rates, delay and jitter, signal, match, lease
//! and the schedule (checked by `spec::schedule` once the run's length is known).

use std::time::Duration;

use crate::docker::fault::SIGNALS;
use serde::Deserialize;
use toml::Spanned;

use crate::spec::bounds::{
    DEFAULT_LEASE, MAX_FAULT_DELAY, MAX_LEASE, MAX_PATH_PREFIX_BYTES, MAX_RATE_LEVELS,
};
use crate::spec::checker::Checker;
use crate::spec::{FaultKind, FaultKindName, FaultSpec, MatchRule, SpecError};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) target: Spanned<String>,
    pub(super) kind: Option<Spanned<FaultKindName>>,
    pub(super) kinds: Option<Spanned<Vec<Spanned<FaultKindName>>>>,
    pub(super) status: Option<Spanned<u16>>,
    pub(super) rates: Spanned<Vec<Spanned<f64>>>,
    pub(super) delay: Option<Spanned<String>>,
    pub(super) jitter: Option<Spanned<String>>,
    /// The signal of kind `kill` (default SIGKILL).
    pub(super) signal: Option<Spanned<String>>,
    #[serde(rename = "match")]
    pub(super) match_rule: Option<Spanned<MatchRule>>,
    pub(super) lease: Option<Spanned<String>>,
    /// When the fault is on inside a run (default: the whole run), checked by [`crate::spec::schedule`].
    pub(super) schedule: Option<Spanned<crate::spec::schedule::RawSchedule>>,
}

pub(super) fn fault(check: &Checker<'_>, raw: &RawFault) -> Result<FaultSpec, SpecError> {
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
            let v = *status.get_ref();
            if !(400..=599).contains(&v) {
                return Err(check.error(
                    "fault.status",
                    status.span(),
                    format!("{v} is not an HTTP error status (400 to 599)"),
                ));
            }
            used_by(&[FaultKindName::Error], "fault.status", status.span())?;
            v
        }
        None => 500,
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
            FaultKindName::Error => FaultKind::Error { status },
            FaultKindName::Hang => FaultKind::Hang,
            FaultKindName::Reset => FaultKind::Reset,
            FaultKindName::Pause => FaultKind::Pause,
            FaultKindName::Stop => FaultKind::Stop,
            FaultKindName::Kill => FaultKind::Kill { signal },
            FaultKindName::Restart => FaultKind::Restart,
            FaultKindName::NetLoss => FaultKind::NetLoss,
            FaultKindName::NetDelay => FaultKind::NetDelay {
                delay: needs_delay("200ms")?,
            },
            FaultKindName::Delay => FaultKind::Delay {
                delay: needs_delay("500ms")?,
                jitter,
            },
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
        target,
        kinds,
        rates,
        match_rule,
        lease,
        schedule: None,
    })
}
