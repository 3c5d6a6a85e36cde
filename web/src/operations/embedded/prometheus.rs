//! Reading the frontend's Prometheus text: answers by status class.

/// `boutique_http_requests_total{…,class="Nxx"}` counters, 1xx..5xx.
pub(super) fn status_classes(metrics: &str) -> [u64; 5] {
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
    fn status_classes_are_read_from_prometheus_text() {
        let text = "# TYPE boutique_http_requests_total counter\n\
            boutique_http_requests_total{service=\"frontend\",class=\"2xx\"} 41\n\
            boutique_http_requests_total{service=\"frontend\",class=\"5xx\"} 7\n\
            boutique_pool_in_flight{service=\"frontend\"} 3\n";
        assert_eq!(status_classes(text), [0, 41, 0, 0, 7]);
    }
}
