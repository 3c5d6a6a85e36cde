//! The `[load]` table as read and its check: users, think time, rate, timeout, target, and the mix or
//! the `[[load.tasks]]` of your own (checked by `spec::workload`).

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::spec::bounds::{
    DEFAULT_TIMEOUT, MAX_THINK_TIME, MAX_TIMEOUT, MAX_USERS, MAX_WORKERS, RATE_RANGE,
};
use crate::spec::checker::Checker;
use crate::spec::error::SpecError;
use crate::spec::model::{LoadSpec, LoadWorkers, Mix};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub(super) users: Spanned<u32>,
    pub(super) target: Option<Spanned<String>>,
    /// A workload of your own (instead of `mix`).
    pub(super) tasks: Option<Spanned<Vec<Spanned<crate::spec::workload::RawTask>>>>,
    pub(super) values: Option<crate::spec::workload::RawValuesTable>,
    pub(super) cookies: Option<Spanned<bool>>,
    /// Requests each user makes once when it starts (with `tasks`).
    pub(super) on_start: Option<crate::spec::workload::RawOnStart>,
    pub(super) think_time: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) mix: Option<Mix>,
    pub(super) rate: Option<Spanned<f64>>,
    pub(super) timeout: Option<Spanned<String>>,
    /// Load workers the users are split between, and where the controller waits for them.
    pub(super) workers: Option<Spanned<u32>>,
    pub(super) workers_listen: Option<Spanned<String>>,
}

pub(super) fn load(check: &Checker<'_>, raw: &RawLoad) -> Result<LoadSpec, SpecError> {
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
        Some(target) => check.service_id("load.target", target)?,
        None => boutique::ServiceName::Frontend.into(),
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
            Some(crate::spec::workload::shared(
                crate::spec::workload::custom(
                    check,
                    tasks,
                    raw.values.as_ref(),
                    raw.on_start.as_ref(),
                    cookies,
                )?,
            ))
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
    let workers = workers(check, raw)?;
    Ok(LoadSpec {
        workers,
        users,
        target,
        custom,
        think_time,
        mix: raw.mix.unwrap_or_default(),
        rate,
        timeout,
    })
}

/// `workers` and `workers_listen`: both or neither.
fn workers(check: &Checker<'_>, raw: &RawLoad) -> Result<Option<LoadWorkers>, SpecError> {
    match (&raw.workers, &raw.workers_listen) {
        (None, None) => Ok(None),
        (None, Some(listen)) => Err(check.error(
            "load.workers_listen",
            listen.span(),
            "only used with `workers`",
        )),
        (Some(count), None) => Err(check.error(
            "load.workers_listen",
            count.span(),
            "needed with `workers`: the ADDR:PORT the controller waits for its workers at",
        )),
        (Some(count), Some(listen)) => {
            let value = *count.get_ref();
            if value == 0 || value > MAX_WORKERS {
                return Err(check.error(
                    "load.workers",
                    count.span(),
                    format!("{value} is not between 1 and {MAX_WORKERS}"),
                ));
            }
            if u64::from(value) > u64::from(*raw.users.get_ref()) {
                return Err(check.error(
                    "load.workers",
                    count.span(),
                    format!(
                        "{value} workers for {} users leave a worker without users",
                        raw.users.get_ref()
                    ),
                ));
            }
            let address = listen.get_ref().parse().map_err(|_| {
                check.error(
                    "load.workers_listen",
                    listen.span(),
                    format!(
                        "`{}` is not ADDR:PORT (e.g. \"0.0.0.0:7070\")",
                        listen.get_ref()
                    ),
                )
            })?;
            Ok(Some(LoadWorkers {
                count: value,
                listen: address,
            }))
        }
    }
}
