//! A flapping Prometheus source: every breaker of its exposition changes state every [`FLIP`], faster than the
//! documented fastest scrape (50 ms) can follow, and for [`BLIND`] of every minute it answers 503 (a source that
//! goes blind). The sweep's spec scrapes it with the gauge preset.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Breakers in the exposition.
pub const BREAKERS: usize = 20;
/// How long each state lasts.
pub const FLIP: Duration = Duration::from_millis(100);
/// How long of every minute the source answers 503.
pub const BLIND: Duration = Duration::from_secs(5);
/// The gauge's name; its label is `breaker`, its values `closed = 0, open = 1, half_open = 2`.
pub const METRIC: &str = "soak_breaker_state";

/// The exposition at `age` since the source started: `None` while it is blind.
pub fn exposition(age: Duration, seed: u64) -> Option<String> {
    if age.as_secs() % 60 >= 60 - BLIND.as_secs() {
        return None;
    }
    let step = (age.as_millis() / FLIP.as_millis()) as u64;
    let mut text = format!("# TYPE {METRIC} gauge\n");
    for breaker in 0..BREAKERS as u64 {
        let state = (step + breaker + seed) % 3;
        text.push_str(&format!("{METRIC}{{breaker=\"b{breaker}\"}} {state}\n"));
    }
    Some(text)
}

/// The source, serving until dropped.
#[derive(Debug)]
pub struct FlappingSource {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

async fn metrics(State(source): State<Arc<(Instant, u64)>>) -> Response {
    let (started, seed) = *source;
    match exposition(started.elapsed(), seed) {
        Some(text) => text.into_response(),
        None => (StatusCode::SERVICE_UNAVAILABLE, "blind").into_response(),
    }
}

impl FlappingSource {
    pub async fn start(seed: u64) -> anyhow::Result<FlappingSource> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .route("/metrics", get(metrics))
            .with_state(Arc::new((Instant::now(), seed)));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(FlappingSource { addr, task })
    }

    pub fn url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }
}

impl Drop for FlappingSource {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_breaker_changes_at_each_flip_and_the_source_goes_blind() {
        let first = exposition(Duration::ZERO, 0).unwrap();
        let next = exposition(FLIP, 0).unwrap();
        assert_eq!(first.lines().count(), BREAKERS + 1);
        for (a, b) in first.lines().zip(next.lines()).skip(1) {
            assert_ne!(a, b);
        }
        assert!(exposition(Duration::from_secs(56), 0).is_none());
        assert!(exposition(Duration::from_secs(61), 0).is_some());
    }
}
