//! Reading Prometheus text expositions (the services' `/metrics`): every series, and the boutique's answers
//! by status class.

use serde_json::{Map, Value};

/// The samples of a Prometheus text exposition as `"name{labels}" → value` (comments and lines that
/// are not `series value [timestamp]` are skipped).
pub fn prometheus_samples(text: &str) -> Map<String, Value> {
    let mut samples = Map::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // The series may hold spaces inside quoted label values: split after the closing brace.
        let (series, rest) = match line.rfind('}') {
            Some(brace) => (&line[..=brace], &line[brace + 1..]),
            None => match line.split_once(char::is_whitespace) {
                Some((series, rest)) => (series, rest),
                None => continue,
            },
        };
        let Some(value) = rest
            .split_whitespace()
            .next()
            .and_then(|value| value.parse::<f64>().ok())
        else {
            continue;
        };
        if let Some(number) = serde_json::Number::from_f64(value) {
            samples.insert(series.trim().to_owned(), Value::Number(number));
        }
    }
    samples
}

/// `boutique_http_requests_total{…,class="Nxx"}` counters, 1xx..5xx.
pub fn status_classes(metrics: &str) -> [u64; 5] {
    let mut counts = [0; 5];
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("boutique_http_requests_total{") else {
            continue;
        };
        let Some(class) = rest
            .split("class=\"")
            .nth(1)
            .and_then(|tail| tail.chars().next())
            .and_then(|digit| digit.to_digit(10))
        else {
            continue;
        };
        let value = rest
            .rsplit(' ')
            .next()
            .and_then(|value| value.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        if (1..=5).contains(&class) {
            counts[class as usize - 1] = value as u64;
        }
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_text_becomes_series_and_values() {
        let text = "# HELP boutique_pool_in_flight Requests being served.\n\
                    # TYPE boutique_pool_in_flight gauge\n\
                    boutique_pool_in_flight{service=\"cart\"} 3\n\
                    boutique_http_requests_total{service=\"cart\",route=\"GET /a b\"} 41 1700000000\n\
                    plain_total 7\n\
                    broken_line\n\
                    not_a_number{a=\"b\"} many\n";
        let samples = prometheus_samples(text);
        assert_eq!(samples.len(), 3, "{samples:?}");
        assert_eq!(samples["boutique_pool_in_flight{service=\"cart\"}"], 3.0);
        assert_eq!(
            samples["boutique_http_requests_total{service=\"cart\",route=\"GET /a b\"}"],
            41.0
        );
        assert_eq!(samples["plain_total"], 7.0);
    }

    #[test]
    fn status_classes_are_read_from_prometheus_text() {
        let text = "# TYPE boutique_http_requests_total counter\n\
            boutique_http_requests_total{service=\"frontend\",class=\"2xx\"} 41\n\
            boutique_http_requests_total{service=\"frontend\",class=\"5xx\"} 7\n\
            boutique_pool_in_flight{service=\"frontend\"} 3\n";
        assert_eq!(status_classes(text), [0, 41, 0, 0, 7]);
    }
}
