//! `[[load.tasks]]` and `[load.values]`: a workload of the user's shape (see `load::custom`), checked field by
//! field with the line of the problem.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::Method;
use http::header::{self, HeaderName, HeaderValue};
use serde::Deserialize;
use toml::Spanned;

use super::checker::Checker;
use super::error::SpecError;
use crate::load::{CustomTask, CustomWorkload, JsonTemplate, RequestTemplate, Template, Values};

/// Bounds of a custom workload.
pub const MAX_TASKS: usize = 64;
pub const MAX_REQUESTS_PER_TASK: usize = 32;
pub const MAX_WEIGHT: u32 = 10_000;
pub const MAX_VALUES: usize = 10_000;
pub const MAX_HEADERS: usize = 32;
/// Longest header value as written, and longest value a placeholder in a header may put in it.
pub const MAX_HEADER_VALUE: usize = 4_096;
/// Deepest nesting and most values of a request's `json` body.
pub const MAX_JSON_DEPTH: usize = 16;
pub const MAX_JSON_VALUES: usize = 1_000;
/// Headers the session sets itself (framing and the target), which a request cannot replace.
const RESERVED_HEADERS: [HeaderName; 4] = [
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::CONNECTION,
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTask {
    name: Spanned<String>,
    weight: Option<Spanned<u32>>,
    /// This task's failures are the critical ones (the checkout of the seed study).
    critical: Option<Spanned<bool>>,
    requests: Spanned<Vec<Spanned<RawRequest>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequest {
    method: Option<String>,
    path: String,
    name: Option<String>,
    form: Option<BTreeMap<String, String>>,
    json: Option<toml::Value>,
    headers: Option<BTreeMap<String, String>>,
    expect: Option<Vec<u16>>,
}

/// `[load.values]` as written: each entry read by hand ([`RawValues::from_value`]), so that an entry of neither
/// shape is an error naming the entry and both shapes.
pub(super) type RawValuesTable = Spanned<BTreeMap<String, Spanned<toml::Value>>>;

/// One `[load.values]` entry: a list of strings, or a range of whole numbers `{ from, to }`.
enum RawValues {
    List(Vec<String>),
    Range { from: u64, to: u64 },
}

/// The two shapes an entry may have, said in every error about one.
const VALUES_SHAPES: &str = r#"expected a list of strings (["A1", "B2"]) or a range of whole numbers ({ from = 1, to = 9 })"#;

impl RawValues {
    fn from_value(value: &toml::Value) -> Result<RawValues, String> {
        match value {
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    toml::Value::String(text) => Ok(text.clone()),
                    other => Err(format!("[{i}] is {}, not a string", other.type_str())),
                })
                .collect::<Result<_, _>>()
                .map(RawValues::List),
            toml::Value::Table(table) => {
                if let Some(unknown) = table
                    .keys()
                    .find(|key| !["from", "to"].contains(&key.as_str()))
                {
                    return Err(format!("`{unknown}` is not `from` or `to`"));
                }
                let bound = |key: &str| match table.get(key) {
                    None => Err(format!("`{key}` is missing")),
                    Some(toml::Value::Integer(n)) => {
                        u64::try_from(*n).map_err(|_| format!("`{key}` = {n} is below 0"))
                    }
                    Some(other) => Err(format!(
                        "`{key}` is {}, not a whole number",
                        other.type_str()
                    )),
                };
                Ok(RawValues::Range {
                    from: bound("from")?,
                    to: bound("to")?,
                })
            }
            other => Err(format!("found {}", other.type_str())),
        }
    }
}

/// Whether `value` may be put into a request path as it is: only what a request target holds unescaped
/// (RFC 3986's unreserved and sub-delimiter characters, `:`, `@`, `/`, `?`) and well-formed `%XX` escapes.
fn fits_a_path(value: &str) -> bool {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let escaped = bytes.get(i + 1..i + 3);
                if !escaped.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
                continue;
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => {}
            b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+'
            | b',' | b';' | b'=' | b':' | b'@' | b'/' | b'?' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}

/// The requests a user makes once when it starts (`load.on_start`).
pub(super) type RawOnStart = Spanned<Vec<Spanned<RawRequest>>>;

pub(super) fn custom(
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

/// One request as written (in a task or in `on_start`), its errors naming `<prefix>.<field>`; its endpoint is
/// added to `endpoint_names` when new.
fn request_template(
    check: &Checker<'_>,
    request: &Spanned<RawRequest>,
    prefix: &str,
    names: &[String],
    lists: &[(String, Values)],
    endpoint_names: &mut Vec<String>,
) -> Result<RequestTemplate, SpecError> {
    let span = request.span();
    let request = request.get_ref();
    let field = |name: &str| format!("{prefix}.{name}");
    let method_text = request
        .method
        .as_deref()
        .unwrap_or("GET")
        .trim()
        .to_ascii_uppercase();
    let method = Method::from_bytes(method_text.as_bytes()).map_err(|_| {
        check.error(
            &field("method"),
            span.clone(),
            format!("`{method_text}` is not an HTTP method"),
        )
    })?;
    if !request.path.starts_with('/') {
        return Err(check.error(
            &field("path"),
            span,
            format!("`{}` must start with /", request.path),
        ));
    }
    let path = Template::parse(&request.path, names)
        .map_err(|e| check.error(&field("path"), span.clone(), e.to_string()))?;
    for var in path.vars() {
        let (list, values) = &lists[var];
        if let Values::List(values) = values
            && let Some(bad) = values.iter().find(|value| !fits_a_path(value))
        {
            return Err(check.error(
                &format!("load.values.{list}"),
                span,
                format!(
                    "holds {bad:?}, which cannot be in a request path ({}); percent-encode it",
                    field("path")
                ),
            ));
        }
    }
    // The path as written (placeholders filled with a letter) must be a valid request target.
    let sample: String = request.path.replace(['{', '}'], "x");
    if http::Uri::try_from(sample.as_str()).is_err() || request.path.contains(' ') {
        return Err(check.error(
            &field("path"),
            span,
            format!("`{}` is not a valid request path", request.path),
        ));
    }
    let mut form = Vec::new();
    for (key, value) in request.form.iter().flatten() {
        let template = Template::parse(value, names).map_err(|e| {
            check.error(&field(&format!("form.{key}")), span.clone(), e.to_string())
        })?;
        form.push((key.clone(), template));
    }
    let json = match &request.json {
        Some(_) if request.form.is_some() => {
            return Err(check.error(
                &field("json"),
                span,
                "a request has a form or a json body, not both",
            ));
        }
        Some(value) => {
            let mut count = 0;
            Some(
                json_template(value, &field("json"), names, 0, &mut count)
                    .map_err(|(at, message)| check.error(&at, span.clone(), message))?,
            )
        }
        None => None,
    };
    let headers = request.headers.as_ref().map_or(Ok(Vec::new()), |headers| {
        header_templates(headers, &field("headers"), names, lists)
            .map_err(|(at, message)| check.error(&at, span.clone(), message))
    })?;
    let expect = request.expect.clone().unwrap_or_default();
    if let Some(bad) = expect.iter().find(|status| !(100..=599).contains(*status)) {
        return Err(check.error(
            &field("expect"),
            span,
            format!("{bad} is not an HTTP status"),
        ));
    }
    let endpoint_name = request
        .name
        .clone()
        .unwrap_or_else(|| format!("{method} {}", request.path));
    let endpoint = match endpoint_names.iter().position(|n| *n == endpoint_name) {
        Some(index) => index,
        None => {
            endpoint_names.push(endpoint_name);
            endpoint_names.len() - 1
        }
    };
    Ok(RequestTemplate {
        endpoint,
        method,
        path,
        form,
        json,
        headers,
        expect,
    })
}

/// A request's `headers`: bounded in number and length, names valid and not the session's own, every value a
/// template can render to a valid header value. An error is the field (`<field>.<name>`) and the message.
fn header_templates(
    headers: &BTreeMap<String, String>,
    field: &str,
    names: &[String],
    lists: &[(String, Values)],
) -> Result<Vec<(HeaderName, Template)>, (String, String)> {
    if headers.len() > MAX_HEADERS {
        return Err((field.to_owned(), format!("at most {MAX_HEADERS} headers")));
    }
    let mut built = Vec::new();
    for (name, value) in headers {
        let at = format!("{field}.{name}");
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| (at.clone(), format!("`{name}` is not an HTTP header name")))?;
        if RESERVED_HEADERS.contains(&parsed) {
            return Err((at, format!("`{name}` is set by the load driver itself")));
        }
        if value.len() > MAX_HEADER_VALUE {
            return Err((at, format!("longer than {MAX_HEADER_VALUE} bytes")));
        }
        let template = Template::parse(value, names).map_err(|e| (at.clone(), e.to_string()))?;
        if HeaderValue::from_str(&template.filled_with("x")).is_err() {
            return Err((at, format!("`{value}` is not a valid header value")));
        }
        for var in template.vars() {
            let (list, values) = &lists[var];
            if let Values::List(values) = values {
                if let Some(bad) = values
                    .iter()
                    .find(|v| v.len() > MAX_HEADER_VALUE || HeaderValue::from_str(v).is_err())
                {
                    return Err((
                        at,
                        format!("load.values.{list} holds `{bad}`, which cannot be in a header"),
                    ));
                }
            }
        }
        built.push((parsed, template));
    }
    Ok(built)
}

/// A request's `json` body as a template: strings may hold placeholders; nesting and size bounded. An error is
/// the field (`<field>.<key>[<index>]…`) and the message.
fn json_template(
    value: &toml::Value,
    field: &str,
    names: &[String],
    depth: usize,
    count: &mut usize,
) -> Result<JsonTemplate, (String, String)> {
    *count += 1;
    if *count > MAX_JSON_VALUES {
        return Err((
            field.to_owned(),
            format!("more than {MAX_JSON_VALUES} values"),
        ));
    }
    if depth > MAX_JSON_DEPTH {
        return Err((
            field.to_owned(),
            format!("nested deeper than {MAX_JSON_DEPTH}"),
        ));
    }
    Ok(match value {
        toml::Value::String(text) => JsonTemplate::Text(
            Template::parse(text, names).map_err(|e| (field.to_owned(), e.to_string()))?,
        ),
        toml::Value::Integer(number) => JsonTemplate::Literal((*number).into()),
        toml::Value::Float(number) => JsonTemplate::Literal(
            serde_json::Number::from_f64(*number)
                .map(serde_json::Value::Number)
                .ok_or_else(|| (field.to_owned(), format!("{number} is not a JSON number")))?,
        ),
        toml::Value::Boolean(flag) => JsonTemplate::Literal((*flag).into()),
        toml::Value::Datetime(_) => {
            return Err((
                field.to_owned(),
                "a date is not a JSON value; write it as a string".to_owned(),
            ));
        }
        toml::Value::Array(items) => JsonTemplate::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| {
                    json_template(item, &format!("{field}[{i}]"), names, depth + 1, count)
                })
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => JsonTemplate::Object(
            table
                .iter()
                .map(|(key, item)| {
                    let template =
                        json_template(item, &format!("{field}.{key}"), names, depth + 1, count)?;
                    Ok::<_, (String, String)>((key.clone(), template))
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// A file holding only a workload: its `[load]` table with `tasks`, `values`, `on_start` and `cookies`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkloadFile {
    load: RawWorkloadLoad,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorkloadLoad {
    tasks: Spanned<Vec<Spanned<RawTask>>>,
    values: Option<RawValuesTable>,
    on_start: Option<RawOnStart>,
    cookies: Option<bool>,
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
pub(super) fn shared(workload: CustomWorkload) -> Arc<CustomWorkload> {
    Arc::new(workload)
}
