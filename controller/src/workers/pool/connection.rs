//! One worker's connection to the pool: the WebSocket handshake with the token, the hello that admits or refuses
//! it, then what it sends routed to the run in progress until it ends.

use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, http};

use super::{Arrived, Connected, HELLO_TIMEOUT, Inner, WorkerStatus};
use crate::workers::wire::{
    FromWorker, MAX_CAPACITY, MAX_MESSAGE_BYTES, MAX_NAME_BYTES, ToWorker, VERSION, WORKERS_PATH,
};

type Socket = tokio_tungstenite::WebSocketStream<TcpStream>;

impl Inner {
    /// Serves one connection: handshake, hello, then its messages until it ends.
    pub(super) async fn serve(self: Arc<Self>, stream: TcpStream, peer: std::net::IpAddr) {
        let inner = self;
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE_BYTES))
            .max_frame_size(Some(MAX_MESSAGE_BYTES));
        let checker = Arc::clone(&inner);
        // tungstenite's upgrade callback returns its `ErrorResponse` unboxed.
        #[allow(clippy::result_large_err)]
        let check = move |request: &Request, response: Response| {
            check_request(request, &checker, peer).map(|()| response)
        };
        let upgrade = tokio_tungstenite::accept_hdr_async_with_config(stream, check, Some(config));
        let Ok(Ok(mut socket)) = tokio::time::timeout(HELLO_TIMEOUT, upgrade).await else {
            return;
        };
        let hello = match tokio::time::timeout(HELLO_TIMEOUT, next_message(&mut socket)).await {
            Ok(Some(Ok(FromWorker::Hello {
                name,
                version,
                capacity,
            }))) => (name, version, capacity),
            Ok(Some(Ok(_))) => {
                return refuse(&mut socket, "the first message must be `hello`".to_owned()).await;
            }
            Ok(Some(Err(reason))) => return refuse(&mut socket, reason).await,
            Ok(None) => return,
            Err(_) => {
                return refuse(&mut socket, format!("no hello within {HELLO_TIMEOUT:?}")).await;
            }
        };
        let (name, version, capacity) = hello;
        let (to_worker, mut outgoing) = mpsc::unbounded_channel();
        let id = match admit(&inner, &name, &version, capacity, to_worker) {
            Ok(id) => id,
            Err(reason) => return refuse(&mut socket, reason).await,
        };
        tracing::info!(worker = %name, capacity, "load worker connected");
        let ended = relay(&inner, &name, &mut socket, &mut outgoing).await;
        {
            let mut state = inner.state.lock();
            if state.connected.get(&name).is_some_and(|c| c.id == id) {
                state.connected.remove(&name);
            }
            if let Some(run) = &state.run {
                let _ = run.send((name.clone(), Arrived::Gone));
            }
            inner.count.send_replace(state.connected.len());
        }
        tracing::warn!(worker = %name, "load worker disconnected: {ended}");
        let _ = socket.close(None).await;
    }
}

/// The upgrade request's path and token (the refusal in tungstenite's own, unboxed, response type). A wrong token
/// is counted against `peer`; past the allowance the answer is 429 with `Retry-After`, the right token always
/// passes.
#[allow(clippy::result_large_err)]
fn check_request(
    request: &Request,
    inner: &Inner,
    peer: std::net::IpAddr,
) -> Result<(), ErrorResponse> {
    let refuse = |status: http::StatusCode, why: &str| {
        let mut response = ErrorResponse::new(Some(why.to_owned()));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != WORKERS_PATH {
        return Err(refuse(
            http::StatusCode::NOT_FOUND,
            "load workers connect to /workers",
        ));
    }
    let given = (request.headers().get(http::header::AUTHORIZATION))
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    let token = inner.token.as_bytes();
    match given {
        Some(given) => {
            let right = constant_time_eq(given.as_bytes(), token);
            match (inner.throttle).bearer(peer, right, tokio::time::Instant::now()) {
                Ok(()) => Ok(()),
                Err(serving::throttle::Refused::Wrong) => {
                    Err(refuse(http::StatusCode::UNAUTHORIZED, "wrong token"))
                }
                Err(serving::throttle::Refused::Throttled { retry_after }) => {
                    let seconds = serving::throttle::retry_after_seconds(retry_after);
                    let mut response = refuse(
                        http::StatusCode::TOO_MANY_REQUESTS,
                        &format!(
                            "too many wrong tokens from this address: try again in {seconds} s"
                        ),
                    );
                    response
                        .headers_mut()
                        .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
                    Err(response)
                }
            }
        }
        None => Err(refuse(
            http::StatusCode::UNAUTHORIZED,
            "the token is required (Authorization: Bearer …)",
        )),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Takes the worker as one of the wanted, or says why not.
fn admit(
    inner: &Inner,
    name: &str,
    version: &str,
    capacity: u32,
    to_worker: mpsc::UnboundedSender<ToWorker>,
) -> Result<u64, String> {
    if version != VERSION {
        return Err(format!(
            "version {version} differs from the controller's {VERSION}"
        ));
    }
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(format!(
            "name: must be 1 to {MAX_NAME_BYTES} bytes without control characters"
        ));
    }
    if capacity == 0 || capacity > MAX_CAPACITY {
        return Err(format!(
            "capacity: {capacity} is not between 1 and {MAX_CAPACITY}"
        ));
    }
    let mut state = inner.state.lock();
    if state.connected.contains_key(name) {
        return Err(format!("duplicate: a worker named `{name}` is connected"));
    }
    if state.connected.len() >= inner.wanted {
        return Err(format!(
            "late: the controller has the {} worker(s) it waits for",
            inner.wanted
        ));
    }
    let _ = to_worker.send(ToWorker::Welcome);
    state.next_id += 1;
    let id = state.next_id;
    state.connected.insert(
        name.to_owned(),
        Connected {
            id,
            to_worker,
            status: WorkerStatus {
                name: name.to_owned(),
                capacity,
                users: 0,
                requests_per_second: 0,
                lag_seconds: 0,
                lost_from_second: None,
            },
        },
    );
    inner.count.send_replace(state.connected.len());
    Ok(id)
}

/// Sends the refusal as the last message and closes.
async fn refuse(socket: &mut Socket, reason: String) {
    tracing::warn!("load worker refused: {reason}");
    if let Ok(text) = serde_json::to_string(&ToWorker::Refused { reason }) {
        let _ = tokio::time::timeout(HELLO_TIMEOUT, socket.send(Message::text(text))).await;
    }
    let _ = tokio::time::timeout(HELLO_TIMEOUT, socket.close(None)).await;
}

/// The next protocol message (`None`: the connection ended).
async fn next_message(socket: &mut Socket) -> Option<Result<FromWorker, String>> {
    loop {
        match socket.next().await? {
            Ok(Message::Text(text)) => {
                return Some(
                    serde_json::from_str(&text)
                        .map_err(|error| format!("not a worker message: {error}")),
                );
            }
            Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_)) => continue,
            Ok(Message::Binary(_)) => {
                return Some(Err(
                    "binary messages are not part of the protocol".to_owned()
                ));
            }
            Ok(Message::Close(_)) | Err(_) => return None,
        }
    }
}

/// Relays between the worker and the run in progress until the connection ends; returns why it ended.
async fn relay(
    inner: &Inner,
    name: &str,
    socket: &mut Socket,
    outgoing: &mut mpsc::UnboundedReceiver<ToWorker>,
) -> String {
    let mut last_finish = None::<Instant>;
    loop {
        tokio::select! {
            message = outgoing.recv() => {
                let Some(message) = message else { return "the pool closed".to_owned() };
                let finished = matches!(message, ToWorker::Finished);
                let Ok(text) = serde_json::to_string(&message) else { continue };
                if socket.send(Message::text(text)).await.is_err() {
                    return "sending failed".to_owned();
                }
                if finished {
                    last_finish = Some(Instant::now());
                    let _ = socket.close(None).await;
                }
            }
            arrived = next_message(socket) => {
                let arrived = match arrived {
                    None => return match last_finish {
                        Some(_) => "the experiment is over".to_owned(),
                        None => "the connection closed".to_owned(),
                    },
                    Some(Ok(FromWorker::Hello { .. })) => Arrived::Invalid("a second hello".to_owned()),
                    Some(Ok(message)) => Arrived::Message(message),
                    Some(Err(reason)) => Arrived::Invalid(reason),
                };
                let invalid = match &arrived {
                    Arrived::Invalid(reason) => Some(reason.clone()),
                    _ => None,
                };
                if let Some(run) = &inner.state.lock().run {
                    let _ = run.send((name.to_owned(), arrived));
                }
                if let Some(reason) = invalid {
                    return reason;
                }
            }
        }
    }
}
