//! The worker's side (`tolerant load-worker`): connect to the controller's `/workers` with the token, say hello
//! (name, version, capacity), and for each assignment build the run's load from the spec as the controller would
//! ([`crate::runner::load_settings`]), drive its share of the users with the same driver, and send every closed
//! second with its histograms, then its totals. A stop from the controller ends the share at once. Returns when
//! the controller says the experiment is over or closes the connection.

use std::net::SocketAddr;
use std::pin::Pin;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Message, http};

use super::wire::{
    Assignment, FromWorker, MAX_MESSAGE_BYTES, ToWorker, VERSION, WORKERS_PATH, WorkerSecond,
    WorkerTotals,
};
use crate::load::{self, LoadConfig, LoadReport, SecondStats, UserShare};
use crate::spec::ExperimentSpec;

/// How long connecting (and the controller's welcome) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest start delay an assignment may ask for.
pub const MAX_START_DELAY: Duration = Duration::from_secs(60);

/// Who the worker is and where its controller is.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// `ws://HOST:PORT` (or `http://`), `/workers` added when no path is given.
    pub controller: String,
    pub token: String,
    pub name: String,
    /// Users it can hold.
    pub capacity: u32,
    /// The address it loads instead of the one the controller gives (the same testbed as seen from here).
    pub target: Option<String>,
}

/// Why the worker stopped other than by the experiment's end.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("--controller: {0}")]
    Connect(String),
    #[error("refused by the controller: {0}")]
    Refused(String),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("assignment of run {run}: {reason}")]
    Assignment { run: i64, reason: String },
}

/// The WebSocket URL of a `--controller` value.
pub fn workers_url(controller: &str) -> Result<String, WorkerError> {
    let rest = if let Some(rest) = controller.strip_prefix("http://") {
        rest
    } else if let Some(rest) = controller.strip_prefix("ws://") {
        rest
    } else {
        return Err(WorkerError::Connect(format!(
            "`{controller}` is not ws://HOST:PORT or http://HOST:PORT"
        )));
    };
    let (host, path) = match rest.split_once('/') {
        Some((host, "")) | Some((host, "workers")) => (host, WORKERS_PATH),
        None => (rest, WORKERS_PATH),
        Some((_, path)) => {
            return Err(WorkerError::Connect(format!(
                "the path `/{path}` is not {WORKERS_PATH}"
            )));
        }
    };
    if host.is_empty() {
        return Err(WorkerError::Connect(format!("`{controller}` has no host")));
    }
    Ok(format!("ws://{host}{path}"))
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects and says hello; returns once welcomed.
pub async fn connect(options: &WorkerOptions) -> Result<Socket, WorkerError> {
    let url = workers_url(&options.controller)?;
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|error| WorkerError::Connect(error.to_string()))?;
    let bearer = http::HeaderValue::from_str(&format!("Bearer {}", options.token))
        .map_err(|_| WorkerError::Connect("--token: not a header value".to_owned()))?;
    request
        .headers_mut()
        .insert(http::header::AUTHORIZATION, bearer);
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let attempt = tokio_tungstenite::connect_async_with_config(request, Some(config), true);
    let mut socket = match tokio::time::timeout(CONNECT_TIMEOUT, attempt).await {
        Ok(Ok((socket, _))) => socket,
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(response))) => {
            let body = response
                .body()
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default()
                .into_owned();
            return Err(WorkerError::Refused(format!(
                "{} {body}",
                response.status()
            )));
        }
        Ok(Err(error)) => return Err(WorkerError::Connect(format!("{url}: {error}"))),
        Err(_) => {
            return Err(WorkerError::Connect(format!(
                "{url}: no connection within {CONNECT_TIMEOUT:?}"
            )));
        }
    };
    send(
        &mut socket,
        &FromWorker::Hello {
            name: options.name.clone(),
            version: VERSION.to_owned(),
            capacity: options.capacity,
        },
    )
    .await?;
    match tokio::time::timeout(CONNECT_TIMEOUT, next(&mut socket)).await {
        Ok(Ok(Some(ToWorker::Welcome))) => Ok(socket),
        Ok(Ok(Some(ToWorker::Refused { reason }))) => Err(WorkerError::Refused(reason)),
        Ok(Ok(Some(other))) => Err(WorkerError::Protocol(format!(
            "expected a welcome, got {other:?}"
        ))),
        Ok(Ok(None)) => Err(WorkerError::Protocol(
            "the controller closed before its welcome".to_owned(),
        )),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(WorkerError::Protocol(format!(
            "no welcome within {CONNECT_TIMEOUT:?}"
        ))),
    }
}

/// A share being driven: its run, its stop, its closed seconds and the driver's report.
struct Running {
    run: i64,
    stop: Option<oneshot::Sender<()>>,
}

type Report = Pin<Box<dyn Future<Output = LoadReport> + Send>>;

/// Serves the controller until the experiment is over (or the connection ends).
pub async fn run_worker(options: &WorkerOptions) -> Result<(), WorkerError> {
    let mut socket = connect(options).await?;
    tracing::info!(name = %options.name, capacity = options.capacity, "connected to the controller");
    let mut running: Option<Running> = None;
    let mut seconds: Option<mpsc::UnboundedReceiver<SecondStats>> = None;
    let mut report: Option<Report> = None;
    loop {
        tokio::select! {
            message = next(&mut socket) => match message? {
                None | Some(ToWorker::Finished) => return Ok(()),
                Some(ToWorker::Assign(assignment)) => {
                    if running.is_some() {
                        return Err(WorkerError::Protocol("an assignment while a run is driven".to_owned()));
                    }
                    tracing::info!(run = assignment.run, users = assignment.users, "assigned");
                    let (started, its_seconds, its_report) = start(options, assignment).await?;
                    running = Some(started);
                    seconds = Some(its_seconds);
                    report = Some(its_report);
                }
                Some(ToWorker::Stop { run }) => {
                    if let Some(current) = running.as_mut().filter(|r| r.run == run)
                        && let Some(stop) = current.stop.take()
                    {
                        let _ = stop.send(());
                    }
                }
                Some(other) => return Err(WorkerError::Protocol(format!("unexpected {other:?}"))),
            },
            Some(second) = async {
                match seconds.as_mut() {
                    Some(seconds) => seconds.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                let run = running.as_ref().map_or(0, |r| r.run);
                send_second(&mut socket, run, &second).await?;
            }
            done = async {
                match report.as_mut() {
                    Some(report) => report.await,
                    None => std::future::pending().await,
                }
            } => {
                let current = running.take().expect("a run was driven");
                report = None;
                if let Some(mut rest) = seconds.take() {
                    while let Ok(second) = rest.try_recv() {
                        send_second(&mut socket, current.run, &second).await?;
                    }
                }
                send(&mut socket, &FromWorker::Done(WorkerTotals::of(current.run, &done))).await?;
                tracing::info!(run = current.run, requests = done.outcomes().total(), "share done");
            }
        }
    }
}

/// Builds the share's load and starts it (at the assignment's start).
async fn start(
    options: &WorkerOptions,
    assignment: Assignment,
) -> Result<(Running, mpsc::UnboundedReceiver<SecondStats>, Report), WorkerError> {
    let run = assignment.run;
    let invalid = |reason: String| WorkerError::Assignment { run, reason };
    let config = share_config(options, &assignment).await.map_err(invalid)?;
    let start_in = Duration::from_millis(assignment.start_in_ms);
    if start_in > MAX_START_DELAY {
        return Err(invalid(format!(
            "start_in_ms: {start_in:?} is longer than {MAX_START_DELAY:?}"
        )));
    }
    let (sink, seconds) = mpsc::unbounded_channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let report: Report = Box::pin(async move {
        tokio::time::sleep(start_in).await;
        load::run_until(config, Some(sink), async {
            let _ = stopped.await;
        })
        .await
    });
    Ok((
        Running {
            run,
            stop: Some(stop),
        },
        seconds,
        report,
    ))
}

/// The share's load: the spec's run at the assignment's plan position, users `first_user ..` of `of`.
async fn share_config(
    options: &WorkerOptions,
    assignment: &Assignment,
) -> Result<LoadConfig, String> {
    let spec = ExperimentSpec::parse(&assignment.spec).map_err(|error| format!("spec: {error}"))?;
    if assignment.of != spec.load.users {
        return Err(format!(
            "of: {} users, the spec's load.users is {}",
            assignment.of, spec.load.users
        ));
    }
    if assignment.users == 0 || assignment.users > options.capacity {
        return Err(format!(
            "users: {} is not between 1 and this worker's capacity {}",
            assignment.users, options.capacity
        ));
    }
    if assignment.sequence >= spec.plan().len() {
        return Err(format!(
            "sequence: {} is not a position of the plan",
            assignment.sequence
        ));
    }
    let target = resolve(options.target.as_deref().unwrap_or(&assignment.target)).await?;
    let mut settings = crate::runner::load_settings(&spec, assignment.sequence, target);
    settings.users = assignment.users;
    LoadConfig::try_from(settings)
        .and_then(|config| {
            config.with_share(UserShare {
                first: assignment.first_user,
                of: assignment.of,
            })
        })
        .map_err(|error| error.to_string())
}

/// `HOST:PORT` to an address (a compose service name resolves through the container's resolver).
async fn resolve(target: &str) -> Result<SocketAddr, String> {
    let lookup = tokio::net::lookup_host(target.trim_start_matches("http://"));
    match tokio::time::timeout(CONNECT_TIMEOUT, lookup).await {
        Ok(Ok(mut addresses)) => addresses
            .next()
            .ok_or_else(|| format!("target: `{target}` resolves to no address")),
        Ok(Err(error)) => Err(format!("target: `{target}`: {error}")),
        Err(_) => Err(format!("target: `{target}` did not resolve in time")),
    }
}

async fn send_second(
    socket: &mut Socket,
    run: i64,
    second: &SecondStats,
) -> Result<(), WorkerError> {
    let second = WorkerSecond::of(run, second).ok_or_else(|| {
        WorkerError::Protocol("a second without its outcome histograms".to_owned())
    })?;
    send(socket, &FromWorker::Second(second)).await
}

async fn send(socket: &mut Socket, message: &FromWorker) -> Result<(), WorkerError> {
    let text =
        serde_json::to_string(message).map_err(|error| WorkerError::Protocol(error.to_string()))?;
    socket
        .send(Message::text(text))
        .await
        .map_err(|error| WorkerError::Protocol(format!("sending: {error}")))
}

/// The controller's next message (`None`: it closed).
async fn next(socket: &mut Socket) -> Result<Option<ToWorker>, WorkerError> {
    loop {
        match socket.next().await {
            None | Some(Ok(Message::Close(_))) => return Ok(None),
            Some(Ok(Message::Text(text))) => {
                return serde_json::from_str(&text).map(Some).map_err(|error| {
                    WorkerError::Protocol(format!("not a controller message: {error}"))
                });
            }
            Some(Ok(_)) => continue,
            Some(Err(error)) => return Err(WorkerError::Protocol(error.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_controller_url_becomes_the_workers_websocket() {
        for (given, url) in [
            ("http://10.0.0.1:7070", "ws://10.0.0.1:7070/workers"),
            ("ws://controller:7070/", "ws://controller:7070/workers"),
            (
                "ws://controller:7070/workers",
                "ws://controller:7070/workers",
            ),
        ] {
            assert_eq!(workers_url(given).unwrap(), url);
        }
        for bad in [
            "controller:7070",
            "https://x:1",
            "ws://x:1/other",
            "ws:///workers",
        ] {
            assert!(workers_url(bad).is_err(), "{bad}");
        }
    }
}
