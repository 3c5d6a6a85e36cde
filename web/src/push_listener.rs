//! `tolerant run`'s push listener, when its spec has a `[[sources]] kind = "push"`: the address the spec names,
//! bound before anything runs (an error names the field), and `POST /api/breaker-events` served on it alone — no
//! dashboard, so pushed events go into the runs' [`PushInbox`] only — beside `GET /metrics`, the process's live
//! task count (`serving::runtime`).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use controller::sources::PushInbox;
use controller::spec::{ExperimentSpec, SourceSpec};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::api::{BreakerEventsState, breaker_events};
use crate::auth::Auth;

/// Why the push listener is not listening.
#[derive(Debug, thiserror::Error)]
pub enum PushListenerError {
    #[error("sources[{index}].listen: `tolerant run` needs the address to take pushed events on")]
    NoAddress { index: usize },
    #[error("sources[{index}].listen: cannot listen on {addr}: {source}")]
    Bind {
        index: usize,
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// The spec's push source (its index) and the address `tolerant run` listens on for it; `None` without a push
/// source, an error naming `sources[i].listen` when it has none (checked before anything is stored).
pub fn push_address(
    spec: &ExperimentSpec,
) -> Result<Option<(usize, SocketAddr)>, PushListenerError> {
    let Some((index, listen)) =
        spec.sources
            .iter()
            .enumerate()
            .find_map(|(i, source)| match source {
                SourceSpec::Push { listen } => Some((i, *listen)),
                SourceSpec::Prometheus(_) => None,
            })
    else {
        return Ok(None);
    };
    let addr = listen.ok_or(PushListenerError::NoAddress { index })?;
    Ok(Some((index, addr)))
}

/// The listener of the spec's push source, bound, and the address it is bound to; `None` without a push source.
pub async fn bind(
    spec: &ExperimentSpec,
) -> Result<Option<(TcpListener, SocketAddr)>, PushListenerError> {
    let Some((index, addr)) = push_address(spec)? else {
        return Ok(None);
    };
    let bind_failed = |source| PushListenerError::Bind {
        index,
        addr,
        source,
    };
    let listener = TcpListener::bind(addr).await.map_err(bind_failed)?;
    let bound = listener.local_addr().map_err(bind_failed)?;
    Ok(Some((listener, bound)))
}

/// `POST /api/breaker-events` alone, its bearer token `token`: pushed events go to `inbox` only.
pub fn router(inbox: PushInbox, token: impl Into<String>) -> Router {
    Router::new()
        .route("/api/breaker-events", post(breaker_events))
        .route("/metrics", get(serving::runtime::alive_tasks_exposition))
        .with_state(BreakerEventsState {
            auth: Arc::new(Auth::new(token)),
            inbox,
            hub: None,
        })
}

/// Serves [`router`] on `listener` until the returned task is aborted.
pub fn spawn(listener: TcpListener, inbox: PushInbox, token: impl Into<String>) -> JoinHandle<()> {
    let app = router(inbox, token);
    tokio::spawn(async move {
        let served = serving::serve(
            listener,
            app,
            serving::HEADER_READ_TIMEOUT,
            std::future::pending(),
        );
        if let Err(error) = served.await {
            tracing::warn!(%error, "breaker event ingest stopped");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http::{Request, StatusCode};
    use tower::ServiceExt;

    /// The push port's bearer token is throttled like the dashboard's: the 11th wrong one from an address is 429
    /// with `Retry-After`, the right one still taken from it.
    #[tokio::test(start_paused = true)]
    async fn wrong_tokens_are_throttled_and_the_right_one_is_not() {
        let app = router(PushInbox::default(), "push-token");
        let push = |token: &str| {
            let mut request = Request::post("/api/breaker-events")
                .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(Body::from(
                    r#"{"service":"shop","breaker":"db","from":"closed","to":"open"}"#,
                ))
                .unwrap();
            let peer: SocketAddr = "10.1.2.3:5000".parse().unwrap();
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            app.clone().oneshot(request)
        };
        for _ in 0..serving::throttle::WRONG_TOKENS_PER_WINDOW {
            assert_eq!(
                push("guess").await.unwrap().status(),
                StatusCode::UNAUTHORIZED
            );
        }
        let locked = push("guess").await.unwrap();
        assert_eq!(locked.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(locked.headers()[http::header::RETRY_AFTER], "10");
        let taken = push("push-token").await.unwrap();
        assert!(taken.status().is_success(), "{}", taken.status());
    }
}
