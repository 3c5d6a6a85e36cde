//! The dashboard's one websocket (`GET /ws`): an axum `WebSocket` plugged into the hub's generic client loop.

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt, future};
use http::{HeaderMap, request::Parts};

use crate::auth::check_origin;
use crate::error::AppError;
use crate::hub::Subscription;
use crate::hub::socket::{ClientEnd, ClientMessage, serve_client};
use crate::state::AppState;

/// `GET /ws`: upgrades and serves live frames until the client leaves or stalls. A browser must come from the
/// dashboard's own origin (the forms' rule): a page elsewhere cannot read the live feed. A reader without a
/// session or token is one of at most the hub's `anonymous_readers` (503 with `Retry-After` beyond).
pub async fn websocket(
    State(state): State<AppState>,
    parts: Parts,
    upgrade: WebSocketUpgrade,
) -> Response {
    match subscription(&state, &parts.headers, &parts.extensions) {
        Ok(subscription) => upgrade.on_upgrade(move |socket| async move {
            let end = serve_socket(socket, subscription).await;
            tracing::debug!(?end, "dashboard websocket ended");
        }),
        Err(refused) => refused.into_response(),
    }
}

/// The reader's subscription: anyone with a session or the token, anonymous ones while under the cap.
fn subscription(
    state: &AppState,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Result<Subscription, AppError> {
    check_origin(headers)?;
    let client = serving::throttle::client_address(extensions);
    if state.auth.reader(headers, client)? {
        return Ok(state.hub.subscribe());
    }
    state.hub.subscribe_anonymous().ok_or_else(|| {
        AppError::Unavailable(format!(
            "{} anonymous live readers are connected, the most the dashboard serves: log in, or try again later",
            state.hub.config().anonymous_readers
        ))
    })
}

/// Serves one upgraded socket from `subscription`.
pub async fn serve_socket(socket: WebSocket, subscription: Subscription) -> ClientEnd {
    let send_timeout = subscription.config().send_timeout;
    let (sink, stream) = socket.split();
    let sink = sink.with(|frame: crate::hub::Frame| {
        future::ready(Ok::<_, axum::Error>(Message::Text(frame.text)))
    });
    let incoming = stream.map(|message| match message {
        Ok(Message::Close(_)) | Err(_) => ClientMessage::Close,
        Ok(_) => ClientMessage::Other,
    });
    serve_client(subscription, Box::pin(sink), incoming, send_timeout).await
}
