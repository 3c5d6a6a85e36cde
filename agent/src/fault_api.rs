//! The fault API (the agent's control surface): an axum router for `/_agent/...` (list, put, renew, delete, halt,
//! limits, event stream, metrics, probes in 10 ms buckets).
//!
//! Reads (`GET`) are open; every mutation needs `Authorization: Bearer <token>`, compared in constant time, and is
//! checked before the body is even parsed, so a refused request changes nothing. Wrong tokens are throttled per
//! client address ([`serving::throttle`]: 429 with `Retry-After` after 10 in 10 s; a right token always passes).
//! Errors are the stack's one JSON [`ErrorBody`], naming the field at fault.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{FromRef, FromRequestParts, Path, RawQuery, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use futures::{Sink, SinkExt, Stream, StreamExt};
use subtle::ConstantTimeEq;
use tokio::sync::broadcast;

use serving::ErrorBody;
use serving::throttle::{Refused, TokenThrottle};
use std::sync::Arc;

use crate::agent::Agent;
use crate::api::{
    AgentEvent, AgentLimits, FaultSpec, FaultView, HaltResponse, InvalidFault, RenewRequest,
    format_duration, parse_duration, read_json_object, validate_fault_id,
};
use crate::refusal::AgentError;
use serving::event_stream::{STREAM_SEND_TIMEOUT, forward_json};

/// Content type of the Prometheus text exposition format.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the fault API's handlers share: the agent, and the throttle of wrong tokens of this router.
#[derive(Clone)]
struct ControlState {
    agent: Agent,
    throttle: Arc<TokenThrottle>,
}

impl FromRef<ControlState> for Agent {
    fn from_ref(state: &ControlState) -> Agent {
        state.agent.clone()
    }
}

/// The fault API (`/_agent/...`) of `agent` as an axum router, state bound (with its own throttle of wrong
/// tokens).
pub fn router(agent: Agent) -> Router {
    Router::new()
        .route("/_agent/faults", get(list_faults))
        .route("/_agent/faults/{id}", put(put_fault).delete(delete_fault))
        .route("/_agent/faults/{id}/renew", post(renew_fault))
        .route("/_agent/limits", get(limits))
        .route("/_agent/halt", post(halt))
        .route("/_agent/stream", get(stream_events))
        .route("/_agent/metrics", get(metrics))
        .route("/_agent/probes", get(probes))
        .with_state(ControlState {
            agent,
            throttle: Arc::default(),
        })
}

/// A refused fault API request (answered as JSON naming the field, or 401/404).
#[derive(Debug)]
enum FaultApiError {
    Unauthorized(&'static str),
    Throttled(std::time::Duration),
    BadInput { field: String, message: String },
    NotFound(String),
}

impl From<InvalidFault> for FaultApiError {
    fn from(error: InvalidFault) -> Self {
        FaultApiError::BadInput {
            message: error.to_string(),
            field: error.field,
        }
    }
}

impl From<AgentError> for FaultApiError {
    fn from(error: AgentError) -> Self {
        match error {
            AgentError::InvalidSpec(error) => error.into(),
            AgentError::LeaseOverCap { .. } => FaultApiError::BadInput {
                field: "lease".into(),
                message: error.to_string(),
            },
            AgentError::NotFound { .. } => FaultApiError::NotFound(error.to_string()),
            AgentError::TooManyFaults { .. } => FaultApiError::BadInput {
                field: "id".into(),
                message: error.to_string(),
            },
        }
    }
}

impl IntoResponse for FaultApiError {
    fn into_response(self) -> Response {
        let (status, body) = match self {
            FaultApiError::Throttled(retry_after) => {
                return serving::throttle::throttled_response(retry_after);
            }
            FaultApiError::Unauthorized(message) => {
                (StatusCode::UNAUTHORIZED, ErrorBody::new(message))
            }
            FaultApiError::BadInput { field, message } => (
                StatusCode::BAD_REQUEST,
                ErrorBody::new(message).with_field(field),
            ),
            FaultApiError::NotFound(message) => (
                StatusCode::NOT_FOUND,
                ErrorBody::new(message).with_field("id"),
            ),
        };
        let mut response = body.into_response_with(status);
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// Checks `Authorization: Bearer <token>` against the agent's token in constant time (only the length of the
/// token can leak through timing); a wrong token is counted against `client` by `throttle`.
fn authorize(
    agent: &Agent,
    throttle: &TokenThrottle,
    client: std::net::IpAddr,
    headers: &HeaderMap,
) -> Result<(), FaultApiError> {
    let Some(expected) = agent.config().token() else {
        return Err(FaultApiError::Unauthorized(
            "this agent has no token configured, so every mutation is refused",
        ));
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
        .ok_or(FaultApiError::Unauthorized(
            "missing bearer token (Authorization: Bearer <token>)",
        ))?;
    let right = bool::from(presented.ct_eq(expected.as_bytes()));
    throttle
        .bearer(client, right, tokio::time::Instant::now())
        .map_err(|refused| match refused {
            Refused::Wrong => FaultApiError::Unauthorized("wrong bearer token"),
            Refused::Throttled { retry_after } => FaultApiError::Throttled(retry_after),
        })
}

/// A mutation's proof of the bearer token: a handler that takes it runs only for an authorized request, and the
/// check comes before the body is read (axum extracts the request's parts before its body).
struct Authorized;

impl FromRequestParts<ControlState> for Authorized {
    type Rejection = FaultApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ControlState,
    ) -> Result<Self, FaultApiError> {
        let client = serving::throttle::client_address(&parts.extensions);
        authorize(&state.agent, &state.throttle, client, &parts.headers).map(|()| Authorized)
    }
}

async fn list_faults(State(agent): State<Agent>) -> impl IntoResponse {
    Json(agent.faults())
}

async fn put_fault(
    State(agent): State<Agent>,
    _: Authorized,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, FaultApiError> {
    validate_fault_id(&id)?;
    let spec = FaultSpec::from_json_slice(&body)?;
    let outcome = agent.put(&id, spec)?;
    let status = if outcome.replaced {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(outcome.view)).into_response())
}

async fn renew_fault(
    State(agent): State<Agent>,
    _: Authorized,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<FaultView>, FaultApiError> {
    let lease = parse_renew_body(&body)?;
    Ok(Json(agent.renew(&id, lease)?))
}

/// An empty body, or a [`RenewRequest`] (`{"lease": "<duration>"}`); errors name the field (`body` when the
/// body is not a JSON object).
fn parse_renew_body(body: &[u8]) -> Result<Option<std::time::Duration>, InvalidFault> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let request: RenewRequest = read_json_object(body)?;
    request
        .lease
        .map(|text| {
            parse_duration(&text).map_err(|error| InvalidFault::new("lease", error.to_string()))
        })
        .transpose()
}

async fn delete_fault(
    State(agent): State<Agent>,
    _: Authorized,
    Path(id): Path<String>,
) -> Result<StatusCode, FaultApiError> {
    agent.remove(&id)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn halt(
    State(agent): State<Agent>,
    _: Authorized,
) -> Result<Json<HaltResponse>, FaultApiError> {
    Ok(Json(HaltResponse {
        removed: agent.halt(),
    }))
}

/// The caps a put is checked against, as `GET /_agent/limits` answers them.
async fn limits(State(agent): State<Agent>) -> Json<AgentLimits> {
    let config = agent.config();
    Json(AgentLimits {
        max_lease: format_duration(config.max_lease()),
        max_hold: format_duration(config.max_hold()),
        default_lease: format_duration(config.default_lease()),
        max_faults: crate::MAX_FAULTS,
    })
}

pub(crate) async fn metrics(State(agent): State<Agent>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE)],
        agent.render_metrics(),
    )
}

/// `GET /_agent/probes?since_ms=…&until_ms=…`: the non-empty 10 ms buckets of probes in the window
/// ([`crate::probes::ProbeBuckets`], at most [`crate::probes::PROBE_BUCKETS_KEPT`] of them).
async fn probes(
    State(agent): State<Agent>,
    RawQuery(query): RawQuery,
) -> Result<Json<crate::probes::ProbeBuckets>, FaultApiError> {
    let (since_ms, until_ms) = crate::probes::parse_window(query.as_deref())?;
    Ok(Json(agent.probe_buckets(since_ms, until_ms)))
}

async fn stream_events(
    State(agent): State<Agent>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if !serving::origin::stream_origin_allowed(&headers) {
        return ErrorBody::new(
            "Origin: a browser may open this stream only from a loopback page or this host",
        )
        .with_field("Origin")
        .into_response_with(StatusCode::FORBIDDEN);
    }
    // Subscribe before the handshake completes so nothing between the 101 and the first send is missed.
    let events = agent.subscribe();
    upgrade.on_upgrade(move |socket: WebSocket| async move {
        let (outgoing, incoming) = socket.split();
        let outgoing = outgoing
            .with(|text: String| async move { Ok::<_, axum::Error>(Message::Text(text.into())) });
        let incoming = incoming.take_while(|message| {
            std::future::ready(
                matches!(message, Ok(message) if !matches!(message, Message::Close(_))),
            )
        });
        forward_events(events, Box::pin(outgoing), Box::pin(incoming)).await;
    })
}

/// Sends each event as one JSON text until the client goes away (`incoming` ends), stalls past
/// [`STREAM_SEND_TIMEOUT`] or the agent is dropped; a lag is sent as [`AgentEvent::Lagged`].
pub(crate) async fn forward_events<Outgoing, Incoming>(
    events: broadcast::Receiver<AgentEvent>,
    mut outgoing: Outgoing,
    incoming: Incoming,
) where
    Outgoing: Sink<String> + Unpin,
    Incoming: Stream + Unpin,
{
    let end = forward_json(
        events,
        &mut outgoing,
        incoming,
        STREAM_SEND_TIMEOUT,
        |missed| Some(AgentEvent::Lagged { missed }),
        std::future::pending(),
    )
    .await;
    tracing::debug!(?end, "agent event stream ended");
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::channel::mpsc;

    #[tokio::test]
    async fn forward_events_sends_json_and_stops_when_the_client_leaves() {
        let agent = Agent::new(crate::AgentConfig::default());
        let (out_sender, mut out_receiver) = mpsc::unbounded::<String>();
        let (in_sender, in_receiver) = mpsc::unbounded::<()>();
        let pump = tokio::spawn(forward_events(agent.subscribe(), out_sender, in_receiver));
        agent
            .put("f1", FaultSpec::error(500, 1.0).unwrap())
            .unwrap();
        agent.remove("f1").unwrap();
        let applied: serde_json::Value =
            serde_json::from_str(&out_receiver.next().await.unwrap()).unwrap();
        assert_eq!(applied["event"], "applied");
        assert_eq!(applied["id"], "f1");
        let removed: serde_json::Value =
            serde_json::from_str(&out_receiver.next().await.unwrap()).unwrap();
        assert_eq!(removed["event"], "removed");
        assert_eq!(removed["reason"], "deleted");
        drop(in_sender);
        pump.await.unwrap();
    }

    #[test]
    fn renew_bodies_are_checked() {
        assert_eq!(parse_renew_body(b"").unwrap(), None);
        assert_eq!(
            parse_renew_body(br#"{"lease":"5s"}"#).unwrap(),
            Some(std::time::Duration::from_secs(5))
        );
        assert_eq!(
            parse_renew_body(br#"{"lease":5}"#).unwrap_err().field,
            "lease"
        );
        assert_eq!(
            parse_renew_body(br#"{"leese":"5s"}"#).unwrap_err().field,
            "leese"
        );
        assert_eq!(parse_renew_body(b"{").unwrap_err().field, "body");
    }
}
