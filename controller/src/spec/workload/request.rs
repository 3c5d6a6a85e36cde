//! One request as written, checked into its template: method, path, headers and JSON body, errors naming the field.

use std::collections::BTreeMap;

use http::Method;
use http::header::{HeaderName, HeaderValue};
use toml::Spanned;

use super::limits::{
    MAX_HEADER_VALUE, MAX_HEADERS, MAX_JSON_DEPTH, MAX_JSON_VALUES, RESERVED_HEADERS,
};
use super::raw::RawRequest;
use super::values::fits_a_path;
use crate::load::{JsonTemplate, RequestTemplate, Template, Values};
use crate::spec::checker::Checker;
use crate::spec::error::SpecError;

/// One request as written (in a task or in `on_start`), its errors naming `<prefix>.<field>`; its endpoint is
/// added to `endpoint_names` when new.
pub(super) fn request_template(
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
