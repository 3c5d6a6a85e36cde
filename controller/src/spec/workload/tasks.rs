//! The workload of `[[load.tasks]]` checked field by field into the load driver's shape, and a workload file on its own.

use std::sync::Arc;

use toml::Spanned;

use super::limits::{MAX_REQUESTS_PER_TASK, MAX_TASKS, MAX_VALUES, MAX_WEIGHT};
use super::raw::{RawOnStart, RawTask, RawValuesTable, RawWorkloadFile};
use super::request::request_template;
use super::values::{RawValues, VALUES_SHAPES};
use crate::load::{CustomTask, CustomWorkload, Values};
use crate::spec::checker::Checker;
use crate::spec::error::SpecError;

pub(crate) fn custom(
    check: &Checker<'_>,
    tasks: &Spanned<Vec<Spanned<RawTask>>>,
    values: Option<&RawValuesTable>,
    on_start: Option<&RawOnStart>,
    cookies: bool,
) -> Result<CustomWorkload, SpecError> {
    let mut names = Vec::new();
    let mut lists = Vec::new();
    if let Some(values) = values {
        for (name, written) in values.get_ref() {
            let field = format!("load.values.{name}");
            let raw = RawValues::from_value(written.get_ref()).map_err(|why| {
                check.error(&field, written.span(), format!("{VALUES_SHAPES}; {why}"))
            })?;
            let parsed = match &raw {
                RawValues::List(list) if list.is_empty() || list.len() > MAX_VALUES => {
                    return Err(check.error(
                        &field,
                        values.span(),
                        format!("1 to {MAX_VALUES} values"),
                    ));
                }
                RawValues::List(list) => Values::List(list.clone()),
                RawValues::Range { from, to } if from > to => {
                    return Err(check.error(
                        &field,
                        values.span(),
                        format!("from {from} is above to {to}"),
                    ));
                }
                RawValues::Range { from, to } => Values::Range {
                    from: *from,
                    to: *to,
                },
            };
            names.push(name.clone());
            lists.push((name.clone(), parsed));
        }
    }
    if tasks.get_ref().is_empty() || tasks.get_ref().len() > MAX_TASKS {
        return Err(check.error(
            "load.tasks",
            tasks.span(),
            format!("1 to {MAX_TASKS} tasks"),
        ));
    }
    let mut endpoint_names: Vec<String> = Vec::new();
    let mut first = Vec::new();
    if let Some(on_start) = on_start {
        if on_start.get_ref().len() > MAX_REQUESTS_PER_TASK {
            return Err(check.error(
                "load.on_start",
                on_start.span(),
                format!("at most {MAX_REQUESTS_PER_TASK} requests"),
            ));
        }
        for (r, request) in on_start.get_ref().iter().enumerate() {
            first.push(request_template(
                check,
                request,
                &format!("load.on_start[{r}]"),
                &names,
                &lists,
                &mut endpoint_names,
            )?);
        }
    }
    let mut built = Vec::new();
    let mut critical = None;
    for (t, task) in tasks.get_ref().iter().enumerate() {
        let raw = task.get_ref();
        let field = |name: &str| format!("load.tasks[{t}].{name}");
        let name = raw.name.get_ref().trim();
        if name.is_empty() {
            return Err(check.error(&field("name"), raw.name.span(), "must not be empty"));
        }
        let weight = match &raw.weight {
            Some(weight) if !(1..=MAX_WEIGHT).contains(weight.get_ref()) => {
                return Err(check.error(
                    &field("weight"),
                    weight.span(),
                    format!("{} is not between 1 and {MAX_WEIGHT}", weight.get_ref()),
                ));
            }
            Some(weight) => *weight.get_ref(),
            None => 1,
        };
        if let Some(flag) = raw.critical.as_ref().filter(|flag| *flag.get_ref()) {
            if critical.is_some() {
                return Err(check.error(
                    &field("critical"),
                    flag.span(),
                    "only one task can be the critical one",
                ));
            }
            critical = Some(t);
        }
        let requests = raw.requests.get_ref();
        if requests.is_empty() || requests.len() > MAX_REQUESTS_PER_TASK {
            return Err(check.error(
                &field("requests"),
                raw.requests.span(),
                format!("1 to {MAX_REQUESTS_PER_TASK} requests"),
            ));
        }
        let mut templates = Vec::new();
        for (r, request) in requests.iter().enumerate() {
            templates.push(request_template(
                check,
                request,
                &format!("load.tasks[{t}].requests[{r}]"),
                &names,
                &lists,
                &mut endpoint_names,
            )?);
        }
        built.push(CustomTask {
            name: name.to_owned(),
            weight,
            requests: templates,
        });
    }
    Ok(CustomWorkload {
        on_start: first,
        tasks: built,
        values: lists,
        endpoint_names,
        cookies,
        critical,
    })
}

/// Parses a workload written on its own (the embedded Online Boutique mix) with the same checks as a spec's
/// `[load]`; errors name the field and line.
pub fn parse_workload(source: &str) -> Result<CustomWorkload, SpecError> {
    let raw: RawWorkloadFile =
        toml::from_str(source).map_err(|e| SpecError::from_toml(source, &e))?;
    let check = Checker::new(source);
    let load = raw.load;
    custom(
        &check,
        &load.tasks,
        load.values.as_ref(),
        load.on_start.as_ref(),
        load.cookies.unwrap_or(true),
    )
}

/// The workload as the load driver takes it.
pub(crate) fn shared(workload: CustomWorkload) -> Arc<CustomWorkload> {
    Arc::new(workload)
}
