//! The dashboard's one websocket (`GET /ws`): an axum `WebSocket` plugged into the hub's generic client loop.

use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt, future};
use http::HeaderMap;

use crate::auth::check_origin;
use crate::error::AppError;
use crate::hub::Hub;
use crate::hub::socket::{ClientEnd, ClientMessage, serve_client};

/// `GET /ws`: upgrades and serves live frames until the client leaves or stalls. A browser must come from the
/// dashboard's own origin (the forms' rule): a page elsewhere cannot read the live feed.
pub async fn websocket(
    State(hub): State<Hub>,
    headers: HeaderMap,
    upgrade: WebSocketUpgrade,
) -> Response {
    if let Err(refused) = check_origin(&headers) {
        return AppError::Auth(refused).into_response();
    }
    upgrade.on_upgrade(move |socket| async move {
        let end = serve_socket(socket, hub).await;
        tracing::debug!(?end, "dashboard websocket ended");
    })
}

/// Serves one upgraded socket.
pub async fn serve_socket(socket: WebSocket, hub: Hub) -> ClientEnd {
    let send_timeout = hub.config().send_timeout;
    let (sink, stream) = socket.split();
    let sink = sink.with(|frame: crate::hub::Frame| {
        future::ready(Ok::<_, axum::Error>(Message::Text(frame.text)))
    });
    let incoming = stream.map(|message| match message {
        Ok(Message::Close(_)) | Err(_) => ClientMessage::Close,
        Ok(_) => ClientMessage::Other,
    });
    serve_client(hub.subscribe(), Box::pin(sink), incoming, send_timeout).await
}
