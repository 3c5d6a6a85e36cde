//! The Docker Engine's answers, bounded in size and time: every request bollard sends goes over a connection of
//! its own to the engine's unix socket, read through [`Capped`], which fails the read once the answer passes
//! [`MAX_ANSWER_BYTES`] or the call passes [`ANSWER_TIME`]. bollard reads a whole answer before decoding it
//! and its own timeout ends at the headers, so without this an engine (or anything on its socket) sending an
//! endless body would grow the process without bound.

use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bollard::{BollardRequest, ClientVersion, Docker};
use hyper::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;

/// The most bytes one engine answer (headers and body) may hold. The largest Tolerant reads is a container
/// list or inspection of a big stack: kilobytes per container.
pub const MAX_ANSWER_BYTES: u64 = 16 << 20;

/// The longest one engine call may take from connecting to its answer's last byte (a stop waits for the
/// container's grace period).
pub const ANSWER_TIME: Duration = Duration::from_secs(60);

/// A bollard client on the unix socket `socket` whose every answer is capped at `cap` bytes and `time`.
pub fn connect(
    socket: &str,
    cap: u64,
    time: Duration,
    version: &ClientVersion,
) -> Result<Docker, bollard::errors::Error> {
    let socket = PathBuf::from(socket);
    Docker::connect_with_custom_transport(
        move |request: BollardRequest| {
            let socket = socket.clone();
            Box::pin(async move { send(socket, request, cap, time).await })
                as Pin<Box<dyn Future<Output = _> + Send>>
        },
        Some("http://localhost"),
        time.as_secs().max(1),
        version,
    )
}

/// Sends `request` over a new connection to `socket`, read through [`Capped`]. hyper's connection-level
/// client sends the request as it is given, so the URI is made origin-form and the `Host` header that
/// HTTP/1.1 requires (and the engine insists on) is set here, as hyper's pooled client would.
async fn send(
    socket: PathBuf,
    mut request: BollardRequest,
    cap: u64,
    time: Duration,
) -> Result<Response<Incoming>, bollard::errors::Error> {
    let origin = request
        .uri()
        .path_and_query()
        .map_or("/", |path| path.as_str())
        .parse::<hyper::Uri>()
        .map_err(|error| bollard::errors::Error::IOError {
            err: io::Error::new(io::ErrorKind::InvalidInput, error),
        })?;
    *request.uri_mut() = origin;
    request
        .headers_mut()
        .entry(hyper::header::HOST)
        .or_insert(hyper::header::HeaderValue::from_static("localhost"));
    let stream = UnixStream::connect(&socket).await?;
    let io = TokioIo::new(Capped::new(stream, cap, time));
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
    // Ends with the answer's last byte, or when the cap or the time is passed (the read fails). With upgrades:
    // an exec's attached start hijacks the connection (`101 UPGRADED`), and its stream is read through the cap.
    tokio::spawn(async move {
        if let Err(error) = connection.with_upgrades().await {
            tracing::debug!(%error, "engine connection ended");
        }
    });
    Ok(sender.send_request(request).await?)
}

/// A stream whose reads fail once `cap` bytes were read or its time is over.
#[derive(Debug)]
pub struct Capped<S> {
    inner: S,
    cap: u64,
    read: u64,
    time: Duration,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<S> Capped<S> {
    pub fn new(inner: S, cap: u64, time: Duration) -> Self {
        Capped {
            inner,
            cap,
            read: 0,
            time,
            deadline: Box::pin(tokio::time::sleep(time)),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Capped<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the engine's answer took over {:?}", this.time),
            )));
        }
        let left = this.cap - this.read;
        if left == 0 {
            return Poll::Ready(Err(io::Error::other(format!(
                "the engine's answer passed {} bytes (the cap): reading stopped",
                this.cap
            ))));
        }
        // Never more than the cap allows, so reading stops at it exactly.
        let room = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(buf.remaining());
        let mut limited = ReadBuf::new(buf.initialize_unfilled_to(room));
        let polled = Pin::new(&mut this.inner).poll_read(cx, &mut limited);
        let filled = limited.filled().len();
        if polled.is_ready() {
            buf.advance(filled);
            this.read += filled as u64;
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Capped<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
