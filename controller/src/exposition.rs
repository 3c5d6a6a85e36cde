//! The Prometheus text exposition format, read into samples: metric name, labels, value. Comments, blank lines
//! and lines that are not `name{labels} value [timestamp]` are skipped, so one odd line never hides the rest.
//! The one reader of `/metrics` text in the controller: the sampler's services, the foreign `[[sources]]`, the
//! dashboard's answers by status class all go through [`parse_exposition`].

use serde_json::{Map, Value};

/// One sample of a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// Label pairs in the order written.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The series as the exposition spells it: `name{key="value",…}` (`name` alone without labels), label
    /// values escaped as the format escapes them.
    pub fn series(&self) -> String {
        if self.labels.is_empty() {
            return self.name.clone();
        }
        let labels: Vec<String> = self
            .labels
            .iter()
            .map(|(key, value)| {
                let escaped = value
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n");
                format!("{key}=\"{escaped}\"")
            })
            .collect();
        format!("{}{{{}}}", self.name, labels.join(","))
    }

    /// The value of label `name`, if the sample has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Every sample of an exposition text, in order.
pub fn parse_exposition(text: &str) -> Vec<Sample> {
    text.lines().filter_map(parse_line).collect()
}

/// Every finite sample as `"series" → value` ([`Sample::series`]), as a run stores a service's `/metrics`.
pub fn series_values(samples: &[Sample]) -> Map<String, Value> {
    samples
        .iter()
        .filter_map(|sample| {
            let number = serde_json::Number::from_f64(sample.value)?;
            Some((sample.series(), Value::Number(number)))
        })
        .collect()
}

/// The boutique's answers so far by status class, 1xx..5xx: its `boutique_http_requests_total{…,class="Nxx"}`
/// counters, summed per class.
pub fn status_classes(samples: &[Sample]) -> [u64; 5] {
    let mut counts = [0; 5];
    for sample in samples
        .iter()
        .filter(|sample| sample.name == "boutique_http_requests_total")
    {
        let class = sample
            .label("class")
            .and_then(|class| class.chars().next())
            .and_then(|digit| digit.to_digit(10));
        if let Some(class @ 1..=5) = class {
            counts[class as usize - 1] += sample.value.max(0.0) as u64;
        }
    }
    counts
}

fn parse_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line
        .find(|c: char| c == '{' || c.is_whitespace())
        .unwrap_or(line.len());
    let name = &line[..name_end];
    if name.is_empty() {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(inside) = rest.strip_prefix('{') {
        let (parsed, after) = parse_labels(inside)?;
        labels = parsed;
        rest = after;
    }
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        other => other.parse::<f64>().ok()?,
    };
    Some(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// Parses `key="value",…}` (after the opening brace); returns the pairs and what follows the closing brace.
fn parse_labels(mut text: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        text = text.trim_start();
        if let Some(after) = text.strip_prefix('}') {
            return Some((labels, after));
        }
        let equals = text.find('=')?;
        let key = text[..equals].trim().to_owned();
        text = text[equals + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = text.char_indices();
        let end = loop {
            let (index, c) = chars.next()?;
            match c {
                '"' => break index,
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                other => value.push(other),
            }
        };
        labels.push((key, value));
        text = text[end + 1..].trim_start();
        text = text.strip_prefix(',').unwrap_or(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_names_labels_and_values() {
        let text = "# HELP resilience4j_circuitbreaker_state The states of the circuit breaker\n\
            # TYPE resilience4j_circuitbreaker_state gauge\n\
            resilience4j_circuitbreaker_state{name=\"backendA\",state=\"closed\",} 1.0\n\
            resilience4j_circuitbreaker_state{name=\"backendA\",state=\"open\",} 0.0\n\
            circuit{name=\"a \\\"quoted\\\" one\",event=\"open\"} 3 1700000000000\n\
            plain 7\n\
            up +Inf\n\
            broken{name=\"x\" 1\n\
            no_value{a=\"b\"}\n\
            nan_text{a=\"b\"} many\n";
        let samples = parse_exposition(text);
        assert_eq!(samples.len(), 5, "{samples:?}");
        assert_eq!(samples[0].name, "resilience4j_circuitbreaker_state");
        assert_eq!(samples[0].label("name"), Some("backendA"));
        assert_eq!(samples[0].label("state"), Some("closed"));
        assert_eq!(samples[0].value, 1.0);
        assert_eq!(samples[1].value, 0.0);
        assert_eq!(samples[2].label("name"), Some("a \"quoted\" one"));
        assert_eq!(samples[2].value, 3.0);
        assert_eq!(samples[3].labels, Vec::new());
        assert_eq!(samples[3].value, 7.0);
        assert!(samples[4].value.is_infinite());
        assert_eq!(samples[0].label("missing"), None);
    }

    /// A series reads back as it was written (the key a run's stored `/metrics` are filed under), escapes
    /// included; a sample that is not a finite number has no value to store.
    #[test]
    fn series_keep_their_exposition_spelling() {
        let text = "# HELP boutique_pool_in_flight Requests being served.\n\
                    # TYPE boutique_pool_in_flight gauge\n\
                    boutique_pool_in_flight{service=\"cart\"} 3\n\
                    boutique_http_requests_total{service=\"cart\",route=\"GET /a b\"} 41 1700000000\n\
                    quoted{name=\"a \\\"b\\\" \\\\ c\"} 2\n\
                    plain_total 7\n\
                    up +Inf\n\
                    broken_line\n\
                    not_a_number{a=\"b\"} many\n";
        let values = series_values(&parse_exposition(text));
        assert_eq!(values.len(), 4, "{values:?}");
        assert_eq!(values["boutique_pool_in_flight{service=\"cart\"}"], 3.0);
        assert_eq!(
            values["boutique_http_requests_total{service=\"cart\",route=\"GET /a b\"}"],
            41.0
        );
        assert_eq!(values["quoted{name=\"a \\\"b\\\" \\\\ c\"}"], 2.0);
        assert_eq!(values["plain_total"], 7.0);
    }

    #[test]
    fn status_classes_are_read_from_the_boutiques_counters() {
        let text = "# TYPE boutique_http_requests_total counter\n\
            boutique_http_requests_total{service=\"frontend\",class=\"2xx\"} 41\n\
            boutique_http_requests_total{service=\"frontend\",class=\"5xx\"} 7\n\
            boutique_http_requests_total{service=\"frontend\",class=\"9xx\"} 3\n\
            boutique_pool_in_flight{service=\"frontend\",class=\"2xx\"} 3\n";
        assert_eq!(status_classes(&parse_exposition(text)), [0, 41, 0, 0, 7]);
    }
}
