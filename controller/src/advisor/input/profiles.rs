//! One failure profile of the advisor's input checked: its kind's own fields, its window and weight bounded.

use std::time::Duration;

use toml::Spanned;

use super::raw::{FailingCall, KindName, RawProfile};
use super::{
    FAULT_LEAD, MAX_PROFILE_REQUESTS, MAX_PROFILE_WINDOW, MAX_WEIGHT, MIN_PROFILE_WINDOW, Profile,
    ProfileKind, Traffic,
};
use crate::spec::SpecError;
use crate::spec::checker::Checker;

pub(super) fn profile(
    check: &Checker<'_>,
    i: usize,
    raw: &RawProfile,
    traffic: &Traffic,
) -> Result<Profile, SpecError> {
    let field = |name: &str| format!("profiles[{i}].{name}");
    let name = check.name(&field("name"), &raw.name)?;
    let kind_name = *raw.kind.get_ref();
    let kind_span = raw.kind.span();
    fn needed<'v>(
        check: &Checker<'_>,
        field: &str,
        value: &'v Option<Spanned<String>>,
        kind_span: std::ops::Range<usize>,
        example: &str,
    ) -> Result<&'v Spanned<String>, SpecError> {
        let what = field.rsplit('.').next().unwrap_or(field);
        value.as_ref().ok_or_else(|| {
            check.error(
                field,
                kind_span,
                format!("this kind needs `{what}` (e.g. {example})"),
            )
        })
    }
    let needs = |value: &'_ Option<Spanned<String>>,
                 what: &str,
                 example: &str|
     -> Result<Spanned<String>, SpecError> {
        needed(check, &field(what), value, kind_span.clone(), example).cloned()
    };
    let unused = |value_span: Option<std::ops::Range<usize>>, what: &str| match value_span {
        Some(span) => Err(check.error(&field(what), span, "not used by this kind")),
        None => Ok(()),
    };
    let rate_span = raw.rate.as_ref().map(Spanned::span);
    let hang = raw
        .fault
        .as_ref()
        .is_some_and(|f| *f.get_ref() == FailingCall::Hang);
    if let (Some(fault), KindName::Hang | KindName::Outage | KindName::Baseline) =
        (&raw.fault, kind_name)
    {
        return Err(check.error(
            &field("fault"),
            fault.span(),
            "only blips and partial failures say how a call fails",
        ));
    }
    let length_span = raw.length.as_ref().map(Spanned::span);
    let every_span = raw.every.as_ref().map(Spanned::span);
    let kind = match kind_name {
        KindName::Blips => {
            unused(rate_span, "rate")?;
            let length_raw = needs(&raw.length, "length", "\"3s\"")?;
            let length =
                check.duration_at_most(&field("length"), &length_raw, MAX_PROFILE_WINDOW)?;
            let every_raw = needs(&raw.every, "every", "\"30s\"")?;
            let every = check.duration_at_most(&field("every"), &every_raw, MAX_PROFILE_WINDOW)?;
            if length < Duration::from_millis(1) {
                return Err(check.error(
                    &field("length"),
                    length_raw.span(),
                    "must be at least 1ms",
                ));
            }
            if every <= length {
                return Err(check.error(
                    &field("every"),
                    every_raw.span(),
                    "must be longer than length (blips need healthy time between them)",
                ));
            }
            ProfileKind::Blips {
                length,
                every,
                hang,
            }
        }
        KindName::Partial | KindName::Baseline => {
            unused(length_span, "length")?;
            unused(every_span, "every")?;
            let rate_raw = raw.rate.as_ref().ok_or_else(|| {
                check.error(
                    &field("rate"),
                    kind_span.clone(),
                    "this kind needs `rate` (e.g. 0.25)",
                )
            })?;
            let rate = check.fraction(&field("rate"), rate_raw)?;
            if kind_name == KindName::Partial {
                if rate == 0.0 {
                    return Err(check.error(&field("rate"), rate_raw.span(), "must be above 0"));
                }
                ProfileKind::Partial { rate, hang }
            } else {
                if rate >= 1.0 {
                    return Err(check.error(
                        &field("rate"),
                        rate_raw.span(),
                        "a baseline error rate must be below 1",
                    ));
                }
                ProfileKind::Baseline { rate }
            }
        }
        KindName::Hang | KindName::Outage => {
            unused(rate_span, "rate")?;
            unused(every_span, "every")?;
            let length_raw = needs(&raw.length, "length", "\"60s\"")?;
            let length =
                check.duration_at_most(&field("length"), &length_raw, MAX_PROFILE_WINDOW)?;
            if length < Duration::from_millis(1) {
                return Err(check.error(
                    &field("length"),
                    length_raw.span(),
                    "must be at least 1ms",
                ));
            }
            if kind_name == KindName::Hang {
                ProfileKind::Hang { length }
            } else {
                ProfileKind::Outage { length }
            }
        }
    };
    let weight = match &raw.weight {
        Some(weight) => {
            let v = check.number_in(&field("weight"), weight, (0.0, MAX_WEIGHT), "units")?;
            if v == 0.0 {
                return Err(check.error(&field("weight"), weight.span(), "must be above 0"));
            }
            v
        }
        None => 1.0,
    };
    let window = match &raw.window {
        Some(window) => {
            let v = check.duration_at_most(&field("window"), window, MAX_PROFILE_WINDOW)?;
            if v < MIN_PROFILE_WINDOW {
                return Err(check.error(&field("window"), window.span(), "must be at least 10s"));
            }
            v
        }
        None => kind.default_window().min(MAX_PROFILE_WINDOW),
    };
    let window_span = raw.window.as_ref().map_or(kind_span.clone(), Spanned::span);
    if let ProfileKind::Hang { length } | ProfileKind::Outage { length } = kind {
        if FAULT_LEAD + length > window {
            return Err(check.error(
                &field("window"),
                window_span.clone(),
                "must hold the fault's length and the 10s before it",
            ));
        }
    }
    if let ProfileKind::Blips { every, .. } = kind {
        if every > window {
            return Err(check.error(
                &field("window"),
                window_span.clone(),
                "must hold at least one blip",
            ));
        }
    }
    let requests = traffic.workload.mean_rate() * window.as_secs_f64();
    if requests > MAX_PROFILE_REQUESTS {
        return Err(check.error(
            &field("window"),
            window_span,
            format!(
                "the traffic makes {requests:.0} requests in this window, more than {MAX_PROFILE_REQUESTS:.0}"
            ),
        ));
    }
    Ok(Profile {
        name,
        kind,
        weight,
        window,
    })
}
