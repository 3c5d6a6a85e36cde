//! Admin and observability endpoints every service mounts outside its worker pool: `/_healthz`, `/metrics`,
//! `/_breakers`, `/_breakers/stream`, `GET`/`PUT`/`DELETE /_admin/breakers` (the whole breaker config; `DELETE`
//! goes back to the startup config), `PUT /_admin/breakers/mode` (the mode alone, the rest of the config kept),
//! `POST /_admin/breakers/renew`, `POST /_admin/reset`, `/_pool`.
//!
//! Both pushes take `?lease=30s`: the service goes back to its startup config by itself unless the lease is
//! renewed ([`crate::breaker_lease`]). Every mutation needs the bearer token; wrong ones are throttled per client
//! address ([`serving::throttle`]: 429 with `Retry-After` after 10 in 10 s; a right token always passes).

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRequestParts, Query, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use futures::{SinkExt, StreamExt};
use subtle::ConstantTimeEq;

use crate::breaker_lease::{BreakerLease, LeaseError, parse_lease};
use crate::context::ServiceContext;
use crate::metrics;
pub use crate::mode_switch::{ModeSwitch, ModeSwitchError};
use crate::services::json_error;

/// What a service adds to the common admin endpoints: state to clear on reset, extra metrics.
pub trait ServiceHooks: Send + Sync + 'static {
    /// Clears application state between runs (carts); breakers are reset by the caller.
    fn reset(&self) {}
    /// Appends service-specific Prometheus lines.
    fn render_metrics(&self, _out: &mut String) {}
}

/// A service with nothing to add.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl ServiceHooks for NoHooks {}

#[derive(Clone)]
struct AdminState {
    ctx: Arc<ServiceContext>,
    hooks: Arc<dyn ServiceHooks>,
    /// The startup config (the registry's when the router is built) and the lease on a pushed one.
    lease: Arc<BreakerLease>,
    /// Wrong tokens per client address.
    throttle: Arc<serving::throttle::TokenThrottle>,
}

/// The admin and observability routes of one service.
pub fn router(ctx: Arc<ServiceContext>, hooks: Arc<dyn ServiceHooks>) -> Router {
    Router::new()
        .route("/_healthz", get(healthz))
        .route("/metrics", get(render_metrics))
        .route("/_breakers", get(breakers))
        .route("/_breakers/stream", get(breaker_stream))
        .route(
            "/_admin/breakers",
            get(current_breaker_config)
                .put(push::<WholeConfig>)
                .delete(restore_breaker_config),
        )
        .route("/_admin/breakers/mode", put(push::<ModeOnly>))
        .route("/_admin/breakers/renew", post(renew_breaker_lease))
        .route("/_admin/reset", post(reset))
        .route("/_pool", get(pool))
        .with_state(AdminState {
            lease: BreakerLease::new(ctx.registry.clone(), ctx.shutdown.clone()),
            ctx,
            hooks,
            throttle: Arc::default(),
        })
}

async fn healthz() -> &'static str {
    "ok"
}

async fn render_metrics(State(state): State<AdminState>) -> Response {
    let mut out = String::with_capacity(4096);
    metrics::render(&state.ctx, &mut out);
    state.hooks.render_metrics(&mut out);
    serving::runtime::render_alive_tasks(&mut out);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], out).into_response()
}

async fn breakers(State(state): State<AdminState>) -> Response {
    Json(state.ctx.registry.snapshots()).into_response()
}

async fn pool(State(state): State<AdminState>) -> Response {
    Json(state.ctx.pool.stats()).into_response()
}

/// `GET /_breakers/stream`; a browser only from a loopback page or this host ([`serving::origin`] says why).
async fn breaker_stream(
    State(state): State<AdminState>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if !serving::origin::stream_origin_allowed(&headers) {
        return json_error(
            StatusCode::FORBIDDEN,
            "Origin: a browser may open this stream only from a loopback page or this host",
        );
    }
    let events = state.ctx.registry.subscribe();
    let shutdown = state.ctx.shutdown.clone();
    upgrade.on_upgrade(move |socket| forward_transitions(socket, events, shutdown))
}

/// Sends every transition event as one JSON text message until the client leaves, stops reading (dropped after
/// [`serving::event_stream::STREAM_SEND_TIMEOUT`] on one write) or the service stops.
async fn forward_transitions(
    socket: WebSocket,
    events: tokio::sync::broadcast::Receiver<breaker::TransitionEvent>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let (sink, stream) = socket.split();
    let mut outgoing = sink
        .with(|text: String| std::future::ready(Ok::<_, axum::Error>(Message::Text(text.into()))));
    let incoming = stream.take_while(|message| {
        std::future::ready(matches!(message, Ok(message) if !matches!(message, Message::Close(_))))
    });
    let end = serving::event_stream::forward_json(
        events,
        &mut outgoing,
        Box::pin(incoming),
        serving::event_stream::STREAM_SEND_TIMEOUT,
        |missed| {
            tracing::warn!(missed, "breaker stream subscriber lagged");
            None
        },
        shutdown.cancelled(),
    )
    .await;
    if end == serving::event_stream::StreamEnd::Stopped {
        let _ = outgoing.get_mut().send(Message::Close(None)).await;
    }
}

/// Why an admin mutation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Denied {
    NoTokenConfigured,
    Unauthorized,
    Throttled(std::time::Duration),
}

impl IntoResponse for Denied {
    fn into_response(self) -> Response {
        match self {
            Denied::NoTokenConfigured => json_error(
                StatusCode::FORBIDDEN,
                "admin mutations are disabled: no token configured",
            ),
            Denied::Unauthorized => {
                json_error(StatusCode::UNAUTHORIZED, "missing or wrong bearer token")
            }
            Denied::Throttled(retry_after) => serving::throttle::throttled_response(retry_after),
        }
    }
}

/// Checks `Authorization: Bearer <token>` in constant time; a wrong one counts against the client's address.
fn authorize(state: &AdminState, parts: &Parts) -> Result<(), Denied> {
    let headers = &parts.headers;
    let expected = (state.ctx.token.as_deref()).ok_or(Denied::NoTokenConfigured)?;
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or(Denied::Unauthorized)?;
    let right = bool::from(presented.as_bytes().ct_eq(expected.as_bytes()));
    let client = serving::throttle::client_address(&parts.extensions);
    (state.throttle)
        .bearer(client, right, tokio::time::Instant::now())
        .map_err(|refused| match refused {
            serving::throttle::Refused::Wrong => Denied::Unauthorized,
            serving::throttle::Refused::Throttled { retry_after } => Denied::Throttled(retry_after),
        })
}

/// A mutation's proof of the bearer token, checked before the body is read.
struct Authorized;

impl FromRequestParts<AdminState> for Authorized {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AdminState) -> Result<Self, Response> {
        authorize(state, parts)
            .map(|()| Authorized)
            .map_err(IntoResponse::into_response)
    }
}

/// Why a body is not a breaker config; `Display` is the 400 answer's text, naming the body or the field.
#[derive(Debug, thiserror::Error)]
pub enum BreakerConfigError {
    #[error("body: not UTF-8")]
    NotUtf8,
    /// An empty TOML document is every default: taking it would reset every breaker by accident.
    #[error(
        "body: empty; send a breaker config (JSON or TOML), or PUT /_admin/breakers/mode to switch the mode"
    )]
    Empty,
    #[error("body: {0}")]
    Json(#[from] serde_json::Error),
    /// TOML that does not parse or a config out of bounds; names the field.
    #[error(transparent)]
    Invalid(#[from] breaker::ConfigError),
}

/// Parses a breaker config sent as JSON (by content type or a leading `{`) or as TOML.
pub fn parse_breaker_config(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<breaker::BreakerConfig, BreakerConfigError> {
    let text = std::str::from_utf8(body).map_err(|_| BreakerConfigError::NotUtf8)?;
    if text.trim().is_empty() {
        return Err(BreakerConfigError::Empty);
    }
    let is_json = content_type.is_some_and(|ct| ct.starts_with("application/json"))
        || text.trim_start().starts_with('{');
    let config: breaker::BreakerConfig = if is_json {
        serde_json::from_str(text)?
    } else {
        breaker::BreakerConfig::from_toml_str(text)?
    };
    Ok(config)
}

/// Why a push (a breaker config or a mode switch) was refused; `Display` is the 400 answer's text, naming the
/// query parameter, the body or the field.
#[derive(Debug, thiserror::Error)]
enum PushRefused {
    /// The query is not `?lease=…` (an unknown parameter, say).
    #[error("query: {0}")]
    Query(String),
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error(transparent)]
    Config(#[from] BreakerConfigError),
    /// Not a mode switch ([`ModeSwitch::parse`] names the field).
    #[error(transparent)]
    Mode(#[from] ModeSwitchError),
}

/// The query of a push: `?lease=30s`, or nothing (the config stays until changed or restored).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseQuery {
    lease: Option<String>,
}

/// The lease a push asks for; the error names `lease` (or the unknown parameter).
fn lease_of(
    query: Result<Query<LeaseQuery>, QueryRejection>,
) -> Result<Option<std::time::Duration>, PushRefused> {
    let Query(query) = query.map_err(|rejection| PushRefused::Query(rejection.body_text()))?;
    query
        .lease
        .as_deref()
        .map(parse_lease)
        .transpose()
        .map_err(PushRefused::Lease)
}

/// What a push puts in force: a config for every breaker of the service, or for one of them.
enum Pushed {
    Every(breaker::BreakerConfig),
    One(Arc<breaker::CircuitBreaker>, breaker::BreakerConfig),
}

/// What the body of a push becomes: the config put in force.
trait PushedBody {
    fn config(state: &AdminState, headers: &HeaderMap, body: &[u8]) -> Result<Pushed, PushRefused>;
}

/// `PUT /_admin/breakers`: a whole breaker config, JSON or TOML ([`parse_breaker_config`]).
struct WholeConfig;

impl PushedBody for WholeConfig {
    fn config(
        _state: &AdminState,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Pushed, PushRefused> {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok());
        Ok(Pushed::Every(parse_breaker_config(content_type, body)?))
    }
}

/// `PUT /_admin/breakers/mode`: switches the mode of every breaker (or of the one named `breaker`) and keeps
/// the rest of its config (detectors, open window, probes), as a game day's "breaker off/on" switch means.
struct ModeOnly;

impl PushedBody for ModeOnly {
    fn config(
        state: &AdminState,
        _headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Pushed, PushRefused> {
        let switch = ModeSwitch::parse(body)?;
        Ok(match switch.target(&state.ctx.registry)? {
            Some(one) => {
                let config = one.config().with_mode(switch.mode);
                Pushed::One(one, config)
            }
            None => Pushed::Every(state.ctx.registry.config().with_mode(switch.mode)),
        })
    }
}

/// An authorised push: the lease read from the query, then the config `B` makes of the body put in force under
/// it; the breakers' snapshots answer it, a refusal a 400 naming what is wrong.
async fn push<B: PushedBody>(
    State(state): State<AdminState>,
    _: Authorized,
    headers: HeaderMap,
    query: Result<Query<LeaseQuery>, QueryRejection>,
    body: Bytes,
) -> Response {
    match lease_of(query).and_then(|lease| Ok((B::config(&state, &headers, &body)?, lease))) {
        Ok((Pushed::Every(config), lease)) => {
            state.lease.push(config, lease);
            Json(state.ctx.registry.snapshots()).into_response()
        }
        Ok((Pushed::One(breaker, config), lease)) => {
            state.lease.push_one(&breaker, config, lease);
            Json(state.ctx.registry.snapshots()).into_response()
        }
        Err(refused) => json_error(StatusCode::BAD_REQUEST, refused.to_string()),
    }
}

/// The config every breaker of the service runs with, the startup config and the lease, if any (JSON,
/// [`crate::breaker_lease::BreakerConfigView`]).
async fn current_breaker_config(State(state): State<AdminState>) -> Response {
    Json(state.lease.view()).into_response()
}

/// Back to the startup config now, any lease ended (a run's end, an abort, a halt).
async fn restore_breaker_config(State(state): State<AdminState>, _: Authorized) -> Response {
    state.lease.restore();
    Json(state.lease.view()).into_response()
}

/// Extends the lease of the pushed config by its length; 409 naming `lease` when none is held.
async fn renew_breaker_lease(State(state): State<AdminState>, _: Authorized) -> Response {
    match state.lease.renew() {
        Ok(lease) => Json(lease).into_response(),
        Err(refused) => json_error(StatusCode::CONFLICT, refused.to_string()),
    }
}

async fn reset(State(state): State<AdminState>, _: Authorized) -> Response {
    state.ctx.registry.reset();
    state.ctx.pool.reset_fullness();
    state.hooks.reset();
    StatusCode::NO_CONTENT.into_response()
}

#[cfg(test)]
mod tests {
    use super::{BreakerConfigError, parse_breaker_config};

    /// An empty body is refused naming it, not taken as "every default" (which reset every breaker).
    #[test]
    fn an_empty_breaker_config_is_refused() {
        for (content_type, body) in [
            (None, ""),
            (None, " \n\t"),
            (Some("application/json"), ""),
            (Some("application/toml"), "\n"),
        ] {
            let error = parse_breaker_config(content_type, body.as_bytes()).unwrap_err();
            assert!(
                matches!(error, BreakerConfigError::Empty),
                "{body:?}: {error}"
            );
            assert!(error.to_string().starts_with("body: empty"), "{error}");
        }
        assert!(parse_breaker_config(None, b"[trip]\nconsecutive_failures = 3\n").is_ok());
    }

    /// Each way a body fails is its own error, its text the answer a client reads, naming the body or the field.
    #[test]
    fn a_bad_breaker_config_names_the_body_or_the_field() {
        let not_utf8 = parse_breaker_config(None, &[0xff, 0xfe]).unwrap_err();
        assert!(matches!(not_utf8, BreakerConfigError::NotUtf8));
        assert_eq!(not_utf8.to_string(), "body: not UTF-8");
        let json = parse_breaker_config(Some("application/json"), b"{\"mode\": 3}").unwrap_err();
        assert!(matches!(json, BreakerConfigError::Json(_)), "{json}");
        assert!(json.to_string().starts_with("body: "), "{json}");
        let out_of_bounds = parse_breaker_config(None, b"[half_open]\nprobes = 0\n").unwrap_err();
        assert!(
            matches!(out_of_bounds, BreakerConfigError::Invalid(_)),
            "{out_of_bounds}"
        );
        assert!(
            out_of_bounds.to_string().starts_with("half_open.probes: "),
            "{out_of_bounds}"
        );
    }
}
