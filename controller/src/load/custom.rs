//! Workloads of the user's shape: weighted tasks, each a sequence of requests (method, a path and form fields
//! with `{name}` placeholders filled from a list or a random id, the statuses that count as success), cookie
//! sessions on or off. One value per placeholder is drawn per task run, so the requests of a task agree (the
//! product viewed is the product added to the cart).

use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{Method, Uri};
use rand::Rng;
use rand::rngs::SmallRng;

use super::session::Body;
use super::step::Step;

/// Where a placeholder's values come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Values {
    /// One of these, uniformly.
    List(Vec<String>),
    /// A whole number in `from..=to`, uniformly.
    Range { from: u64, to: u64 },
}

impl Values {
    fn draw(&self, rng: &mut SmallRng) -> String {
        match self {
            Values::List(values) => values[rng.random_range(0..values.len())].clone(),
            Values::Range { from, to } => rng.random_range(*from..=*to).to_string(),
        }
    }
}

/// A piece of text with `{name}` placeholders, split once: literal, placeholder index, literal, …
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(usize),
}

/// Why a text is not a [`Template`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` with no `}` after it; names the whole text.
    #[error("`{{` without `}}` in `{text}`")]
    Unclosed { text: String },
    /// A placeholder that is none of the value lists; names it and the lists there are.
    #[error("`{{{name}}}` names no value list; known: {}", known_lists(.known))]
    UnknownName { name: String, known: Vec<String> },
}

/// The value lists a placeholder may name, for [`TemplateError::UnknownName`].
fn known_lists(known: &[String]) -> String {
    if known.is_empty() {
        "none (add [load.values])".to_owned()
    } else {
        known.join(", ")
    }
}

impl Template {
    /// Splits `text`; every placeholder must name one of `vars` (the error names the unknown one).
    pub fn parse(text: &str, vars: &[String]) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| TemplateError::Unclosed {
                    text: text.to_owned(),
                })?;
            let name = &rest[open + 1..open + close];
            let index =
                vars.iter()
                    .position(|v| v == name)
                    .ok_or_else(|| TemplateError::UnknownName {
                        name: name.to_owned(),
                        known: vars.to_vec(),
                    })?;
            parts.push(Part::Var(index));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Template { parts })
    }

    /// Whether the template is exactly `text`, with no placeholder (a drawn value could make it anything else).
    pub fn is_literally(&self, text: &str) -> bool {
        match self.parts.as_slice() {
            [] => text.is_empty(),
            [Part::Text(only)] => only == text,
            _ => false,
        }
    }

    /// Indices of the value lists this template draws from.
    pub fn vars(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().filter_map(|part| match part {
            Part::Var(index) => Some(*index),
            Part::Text(_) => None,
        })
    }

    /// The text with every placeholder replaced by `with` (to check what it can become).
    pub fn filled_with(&self, with: &str) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.as_str(),
                Part::Var(_) => with,
            })
            .collect()
    }

    fn render(&self, drawn: &[String]) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Var(index) => out.push_str(&drawn[*index]),
            }
        }
        out
    }
}

/// A JSON body whose strings may hold placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonTemplate {
    /// A number, boolean or null, sent as written.
    Literal(serde_json::Value),
    Text(Template),
    Array(Vec<JsonTemplate>),
    Object(Vec<(String, JsonTemplate)>),
}

impl JsonTemplate {
    fn render(&self, drawn: &[String]) -> serde_json::Value {
        match self {
            JsonTemplate::Literal(value) => value.clone(),
            JsonTemplate::Text(template) => serde_json::Value::String(template.render(drawn)),
            JsonTemplate::Array(items) => items.iter().map(|item| item.render(drawn)).collect(),
            JsonTemplate::Object(fields) => fields
                .iter()
                .map(|(key, value)| (key.clone(), value.render(drawn)))
                .collect(),
        }
    }
}

/// One request of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestTemplate {
    /// Endpoint id in [`CustomWorkload::endpoint_names`].
    pub endpoint: usize,
    pub method: Method,
    pub path: Template,
    /// Form fields (URL-encoded into the body).
    pub form: Vec<(String, Template)>,
    /// A JSON body (never together with `form`).
    pub json: Option<JsonTemplate>,
    /// Headers; every value a template can render to is a valid header value (checked by the spec).
    pub headers: Vec<(HeaderName, Template)>,
    /// Statuses that count as success; empty = any status below 400.
    pub expect: Vec<u16>,
}

/// A weighted task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomTask {
    pub name: String,
    pub weight: u32,
    pub requests: Vec<RequestTemplate>,
}

/// A workload described in the spec (`[[load.tasks]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomWorkload {
    /// Requests each user makes once when it starts (`on_start`), before its first task.
    pub on_start: Vec<RequestTemplate>,
    pub tasks: Vec<CustomTask>,
    /// Placeholder names and their values, in the order templates index them.
    pub values: Vec<(String, Values)>,
    /// Endpoint names: a request's `name`, or `METHOD path` as written.
    pub endpoint_names: Vec<String>,
    /// Whether a virtual user keeps its cookies from request to request.
    pub cookies: bool,
    /// Index of the task whose failures are the critical ones (its last request's endpoint is measured).
    pub critical: Option<usize>,
}

impl CustomWorkload {
    /// The endpoint whose failures are the critical-failure metric, if a task is marked critical.
    pub fn critical_endpoint(&self) -> Option<&str> {
        let last = self.critical_request()?;
        self.endpoint_names.get(last.endpoint).map(String::as_str)
    }

    /// The request whose failures are the critical-failure metric: the critical task's last.
    pub fn critical_request(&self) -> Option<&RequestTemplate> {
        self.tasks[self.critical?].requests.last()
    }

    /// Draws a task by weight and renders its requests into `steps`; returns the task's index.
    pub fn next_task(&self, rng: &mut SmallRng, steps: &mut Vec<Step>) -> usize {
        let total: u32 = self.tasks.iter().map(|t| t.weight).sum();
        let mut draw = rng.random_range(0..total.max(1));
        let mut index = 0;
        for (i, task) in self.tasks.iter().enumerate() {
            if draw < task.weight {
                index = i;
                break;
            }
            draw -= task.weight;
        }
        self.render(&self.tasks[index].requests, rng, steps);
        index
    }

    /// Renders the `on_start` requests into `steps` (one draw per placeholder, as for a task).
    pub fn on_start(&self, rng: &mut SmallRng, steps: &mut Vec<Step>) {
        self.render(&self.on_start, rng, steps);
    }

    /// Share of the task draws that are the critical task (`None` without one).
    pub fn critical_share(&self) -> Option<f64> {
        let critical = &self.tasks[self.critical?];
        let total: u32 = self.tasks.iter().map(|t| t.weight).sum();
        Some(f64::from(critical.weight) / f64::from(total.max(1)))
    }

    /// Draws one value per placeholder and renders `requests` with them into `steps`.
    fn render(&self, requests: &[RequestTemplate], rng: &mut SmallRng, steps: &mut Vec<Step>) {
        let drawn: Vec<String> = self
            .values
            .iter()
            .map(|(_, values)| values.draw(rng))
            .collect();
        for request in requests {
            let path = request.path.render(&drawn);
            let form = (!request.form.is_empty()).then(|| {
                let encoded: Vec<String> = request
                    .form
                    .iter()
                    .map(|(key, value)| {
                        format!("{}={}", encode(key), encode(&value.render(&drawn)))
                    })
                    .collect();
                Body::Form(Bytes::from(encoded.join("&")))
            });
            let json = request
                .json
                .as_ref()
                .map(|json| Body::Json(Bytes::from(json.render(&drawn).to_string())));
            let headers = request
                .headers
                .iter()
                // The spec checked every value the template can take; one that still fails is left out.
                .filter_map(|(name, value)| {
                    let value = HeaderValue::from_str(&value.render(&drawn)).ok()?;
                    Some((name.clone(), value))
                })
                .collect();
            steps.push(Step {
                endpoint: request.endpoint,
                method: request.method.clone(),
                // Checked at parse time with placeholders as written; a drawn value that breaks the path is sent
                // as `/` rather than panicking.
                uri: Uri::try_from(path).unwrap_or_else(|_| Uri::from_static("/")),
                body: form.or(json),
                headers,
                expect: (!request.expect.is_empty()).then(|| Arc::from(request.expect.as_slice())),
            });
        }
    }
}

/// `application/x-www-form-urlencoded` encoding of one key or value.
fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            b' ' => out.push('+'),
            other => out.push_str(&format!("%{other:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn workload() -> CustomWorkload {
        let vars = vec!["sku".to_owned(), "id".to_owned()];
        let request =
            |endpoint, method: Method, path: &str, form: &[(&str, &str)], expect: &[u16]| {
                RequestTemplate {
                    endpoint,
                    method,
                    path: Template::parse(path, &vars).unwrap(),
                    form: form
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), Template::parse(v, &vars).unwrap()))
                        .collect(),
                    json: None,
                    headers: Vec::new(),
                    expect: expect.to_vec(),
                }
            };
        CustomWorkload {
            on_start: Vec::new(),
            tasks: vec![
                CustomTask {
                    name: "browse".into(),
                    weight: 3,
                    requests: vec![request(0, Method::GET, "/item/{sku}", &[], &[])],
                },
                CustomTask {
                    name: "order".into(),
                    weight: 1,
                    requests: vec![
                        request(0, Method::GET, "/item/{sku}", &[], &[]),
                        request(
                            1,
                            Method::POST,
                            "/orders",
                            &[("sku", "{sku}"), ("note", "id {id}&more")],
                            &[201],
                        ),
                    ],
                },
            ],
            values: vec![
                ("sku".into(), Values::List(vec!["A1".into(), "B2".into()])),
                ("id".into(), Values::Range { from: 5, to: 7 }),
            ],
            endpoint_names: vec!["GET /item/{sku}".into(), "order".into()],
            cookies: true,
            critical: Some(1),
        }
    }

    #[test]
    fn tasks_follow_their_weights_and_share_drawn_values() {
        let workload = workload();
        let mut rng = SmallRng::seed_from_u64(7);
        let mut counts = [0u32; 2];
        let mut steps = Vec::new();
        for _ in 0..4_000 {
            steps.clear();
            let task = workload.next_task(&mut rng, &mut steps);
            counts[task] += 1;
            if task == 1 {
                let path = steps[0].uri.path().to_owned();
                let form =
                    String::from_utf8(steps[1].body.as_ref().unwrap().bytes().to_vec()).unwrap();
                let sku = path.trim_start_matches("/item/");
                assert!(["A1", "B2"].contains(&sku), "{path}");
                assert!(form.starts_with(&format!("sku={sku}&note=id+")), "{form}");
                let id: u64 = form["sku=A1&note=id+".len()..form.len() - "%26more".len()]
                    .parse()
                    .unwrap();
                assert!((5..=7).contains(&id), "{form}");
                assert_eq!(steps[1].method, Method::POST);
                assert_eq!(steps[1].expect.as_deref(), Some(&[201u16][..]));
            } else {
                assert_eq!(steps.len(), 1);
                assert!(steps[0].expect.is_none());
            }
        }
        let share = f64::from(counts[0]) / 4_000.0;
        assert!((share - 0.75).abs() < 0.03, "{counts:?}");
        assert_eq!(workload.critical_endpoint(), Some("order"));
    }

    // A template is literally a text only when no drawn value goes into it.
    #[test]
    fn a_template_is_literally_its_text_only_without_placeholders() {
        let vars = vec!["sku".to_owned()];
        let parse = |text| Template::parse(text, &vars).unwrap();
        assert!(parse("/cart/checkout").is_literally("/cart/checkout"));
        assert!(!parse("/cart/checkout").is_literally("/cart"));
        assert!(!parse("/cart/{sku}").is_literally("/cart/{sku}"));
        assert!(parse("").is_literally(""));
    }

    #[test]
    fn placeholders_must_name_a_value_list() {
        let vars = vec!["sku".to_owned()];
        assert!(Template::parse("/a/{sku}/b", &vars).is_ok());
        let error = Template::parse("/a/{skew}", &vars).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`{skew}` names no value list; known: sku"
        );
        assert_eq!(
            Template::parse("/a/{skew}", &[]).unwrap_err().to_string(),
            "`{skew}` names no value list; known: none (add [load.values])"
        );
        assert_eq!(
            Template::parse("/a/{sku", &vars).unwrap_err().to_string(),
            "`{` without `}` in `/a/{sku`"
        );
        assert_eq!(encode("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
