//! The Prometheus text exposition format, read into samples: metric name, labels, value. Comments, blank lines
//! and lines that are not `name{labels} value [timestamp]` are skipped, so one odd line never hides the rest.

/// One sample of a scrape.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// Label pairs in the order written.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
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
}
