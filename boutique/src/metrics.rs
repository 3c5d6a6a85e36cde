//! Request counters per service and the Prometheus text rendering of `/metrics`.

use std::fmt::{Display, Write as _};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::context::ServiceContext;
pub use crate::request_stats::RequestStats;

/// Axum middleware counting every answered request and its latency.
#[allow(clippy::disallowed_methods)] // the request's wall latency, measured at the edge
pub async fn track(
    State(stats): State<Arc<RequestStats>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let response = next.run(request).await;
    let micros = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    stats.record(response.status().as_u16(), micros);
    response
}

/// Renders the service's common metrics (requests, pool, breakers, dependency calls) as Prometheus text.
pub fn render(ctx: &ServiceContext, out: &mut String) {
    let service = ctx.service.as_str();
    let _ = writeln!(out, "# TYPE boutique_http_requests_total counter");
    for class in 1..=5 {
        let _ = writeln!(
            out,
            "boutique_http_requests_total{{service=\"{service}\",class=\"{class}xx\"}} {}",
            ctx.requests.count(class)
        );
    }
    let micros = ctx.requests.latency_micros_total.load(Ordering::Relaxed);
    let pool = ctx.pool.stats();
    let per_service: [(&str, &str, &dyn Display); 6] = [
        (
            "boutique_http_request_duration_seconds_sum",
            "counter",
            &(micros as f64 / 1e6),
        ),
        ("boutique_pool_in_flight", "gauge", &pool.in_flight),
        ("boutique_pool_queued", "gauge", &pool.queued),
        ("boutique_pool_capacity", "gauge", &pool.capacity),
        (
            "boutique_pool_queue_capacity",
            "gauge",
            &pool.queue_capacity,
        ),
        ("boutique_pool_rejected_total", "counter", &pool.rejected),
    ];
    for (name, kind, value) in per_service {
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name}{{service=\"{service}\"}} {value}");
    }

    let calls = ctx.calls.lock().clone();
    let _ = writeln!(
        out,
        "# HELP boutique_breaker_state 0 closed, 1 open, 2 half-open"
    );
    let _ = writeln!(out, "# TYPE boutique_breaker_state gauge");
    for (breaker_name, _) in &calls {
        let state = match ctx.registry.get(breaker_name).state() {
            breaker::State::Closed => 0,
            breaker::State::Open => 1,
            breaker::State::HalfOpen => 2,
        };
        let _ = writeln!(
            out,
            "boutique_breaker_state{{service=\"{service}\",breaker=\"{breaker_name}\"}} {state}"
        );
    }
    let _ = writeln!(out, "# TYPE boutique_dependency_calls_total counter");
    for (breaker_name, stats) in &calls {
        for (result, counter) in [
            ("success", &stats.successes),
            ("failure", &stats.failures),
            ("ignored", &stats.ignored),
            ("rejected", &stats.rejected),
        ] {
            let _ = writeln!(
                out,
                "boutique_dependency_calls_total{{service=\"{service}\",breaker=\"{breaker_name}\",result=\"{result}\"}} {}",
                counter.load(Ordering::Relaxed)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_land_in_their_class() {
        let stats = RequestStats::default();
        stats.record(200, 10);
        stats.record(302, 10);
        stats.record(503, 10);
        stats.record(503, 10);
        assert_eq!(stats.count(2), 1);
        assert_eq!(stats.count(3), 1);
        assert_eq!(stats.count(5), 2);
        assert_eq!(stats.count(4), 0);
    }
}
