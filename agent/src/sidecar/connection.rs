//! One client connection of the sidecar: reads each request head, asks the agent what to do with the request, and
//! forwards it over the connection's upstream connection, bodies byte for byte in both directions.
//!
//! Per request on the pass-through path the sidecar makes one read and one write on each socket when head and body
//! fit in one segment, as a byte pipe does: the rewritten head and the body bytes already read go out in one write.
//! A request body still arriving is streamed to the upstream while the answer streams back (an echo server can
//! answer chunk by chunk). While it waits for an answer the sidecar keeps reading the client, so a client that gives
//! up releases its upstream connection at once instead of holding it until the upstream answers.
//!
//! Faults on the wire:
//!
//! - `error`: the status and body go to the client (with `x-tolerant-injected: error`); the upstream never sees
//!   the request. The connection stays open if the request's body was already read whole, otherwise it closes.
//! - `delay`: the request reaches the upstream after the wait (unless the client leaves first).
//! - `hang`: nothing is written. The request is held until the client closes its side, or until the hold cap, when
//!   the connection is closed (FIN) without a response.
//! - `reset`: no response; the connection is aborted with a TCP RST (`SO_LINGER` 0), so the client reads
//!   "connection reset by peer".
//!
//! Errors: a request head the sidecar cannot accept gets 400 (431 when too large, 501 for `CONNECT`) naming the
//! field, then the connection closes. An upstream that cannot be reached, or fails or answers garbage before any
//! byte of its answer reached the client, gets the client a `502`; a request on a reused upstream connection that
//! died before answering is first sent again on a fresh one, when its body was read whole (so it can be replayed).
//! A failure after the answer started closes the client connection, which the client sees as a truncated answer.
//! A `101 Switching Protocols` answer to an upgrade request (websockets) turns both connections into a tunnel.

mod exchange;

use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use super::framing::BodyCursor;
use super::head::{self, HEAD_READ_RESERVE, MAX_HEAD_BYTES, RequestHead, Rewrite};
use super::upstream::{Upstream, UpstreamConnection};
use crate::agent::Agent;
use crate::fault_table::decision::Injection;
use crate::inject::{HeldRequest, INJECTED_HEADER};

/// How long a keep-alive client connection may sit idle between requests.
pub const KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(75);
/// How long a client may take to send the rest of a request head once it started: the stack's one bound
/// ([`serving::HEADER_READ_TIMEOUT`]).
pub use serving::HEADER_READ_TIMEOUT;
/// How long a closing connection keeps reading what the client still sends, so the close is not an RST that
/// destroys the last answer in flight.
const LINGER: Duration = Duration::from_secs(2);

/// What every connection of one sidecar shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) agent: Agent,
    pub(crate) upstream: Upstream,
}

/// Serves one accepted client connection until it ends.
pub(crate) async fn serve(stream: TcpStream, client_ip: IpAddr, shared: Arc<Shared>) {
    let mut connection = ClientConnection {
        shared: &shared,
        stream,
        input: BytesMut::with_capacity(HEAD_READ_RESERVE),
        request_out: Vec::with_capacity(1024),
        reply: Vec::with_capacity(1024),
        client_ip: client_ip.to_string(),
        upstream: None,
        timer: Box::pin(tokio::time::sleep(KEEP_ALIVE_TIMEOUT)),
        heads_read: 0,
        heads_read_at_arming: 0,
    };
    let ending = connection.run().await;
    if let Some(upstream) = connection.upstream.take() {
        shared.upstream.park(upstream);
    }
    match ending {
        Ending::Close => connection.close_gracefully().await,
        Ending::ClientGone => {}
        Ending::Reset => {
            // Linger zero makes close() send RST; failing to set it leaves an ordinary close.
            let _ = socket2::SockRef::from(&connection.stream).set_linger(Some(Duration::ZERO));
        }
    }
}

/// How a client connection ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The sidecar closes it (FIN), after reading what the client still sends.
    Close,
    /// The client closed it or the socket failed: nothing more to do.
    ClientGone,
    /// A `reset` fault: abort with an RST.
    Reset,
}

/// What became of one forwarded request.
enum Exchanged {
    /// The answer is complete; the connection can carry the next request.
    Next,
    End(Ending),
}

struct ClientConnection<'a> {
    shared: &'a Shared,
    stream: TcpStream,
    /// Bytes read from the client and not yet forwarded.
    input: BytesMut,
    /// The current request as it goes upstream: rewritten head plus the body bytes that came with it. Kept until
    /// the answer starts, so it can be sent again on a fresh connection.
    request_out: Vec<u8>,
    /// Heads going to the client.
    reply: Vec<u8>,
    client_ip: String,
    /// This connection's upstream connection, idle between requests.
    upstream: Option<UpstreamConnection>,
    /// The idle and head-read deadline, re-armed lazily: see [`ClientConnection::read_request_head`].
    timer: Pin<Box<Sleep>>,
    /// Request heads read so far, and how many had been read when `timer` was last armed.
    heads_read: u64,
    heads_read_at_arming: u64,
}

impl ClientConnection<'_> {
    async fn run(&mut self) -> Ending {
        loop {
            let (request, injection) = match self.read_request_head().await {
                Ok(parsed) => parsed,
                Err(ending) => return ending,
            };
            match injection {
                None => {}
                Some(Injection::Error { status, body }) => {
                    // Skip the body if it is all here; a body still to come would have to be waited for.
                    let keep_alive = request.keep_alive && self.skip_buffered_body(&request);
                    // An answer to HEAD carries no body.
                    let body = if request.is_head_method {
                        &[][..]
                    } else {
                        &body[..]
                    };
                    head::write_own_response(
                        &mut self.reply,
                        status,
                        &[(INJECTED_HEADER, "error")],
                        body,
                        keep_alive,
                    );
                    if self.stream.write_all(&self.reply).await.is_err() {
                        return Ending::ClientGone;
                    }
                    if keep_alive {
                        continue;
                    }
                    return Ending::Close;
                }
                Some(Injection::Reset) => return Ending::Reset,
                Some(Injection::Hang { hold, released }) => {
                    let _held = HeldRequest::new(self.shared.agent.held_gauge());
                    // Closed at the hold cap or as soon as the fault ends, whichever is first.
                    return match self.wait_watching_client(hold, &released).await {
                        true => Ending::Close,
                        false => Ending::ClientGone,
                    };
                }
                // Forwarded after the delay or as soon as the fault ends, whichever is first.
                Some(Injection::Delay { wait, released })
                    if !self.wait_watching_client(wait, &released).await =>
                {
                    return Ending::ClientGone;
                }
                Some(Injection::Delay { .. }) => {}
            }
            match self.exchange(&request).await {
                Exchanged::Next => {}
                Exchanged::End(ending) => return ending,
            }
        }
    }

    /// Reads until a request head is complete, then asks the agent about it. On `Err` the connection ends (an
    /// unacceptable head has been answered already).
    ///
    /// Deadlines: a connection idle for [`KEEP_ALIVE_TIMEOUT`] is closed, and a head must be complete within
    /// [`HEADER_READ_TIMEOUT`] of its first bytes (else 408). Re-arming a timer for every request costs a clock
    /// read and a timer-wheel update each time, so the idle timer is armed once and, when it fires, re-armed if
    /// heads were read meanwhile: an idle connection closes between one and two timeouts after its last request.
    /// Only a head split over several reads (rare) re-arms it at once, for the head-read timeout.
    async fn read_request_head(&mut self) -> Result<(RequestHead, Option<Injection>), Ending> {
        let mut head_started = false;
        loop {
            if !self.input.is_empty() {
                let rewrite = Rewrite {
                    client_ip: &self.client_ip,
                    upstream_host: &self.shared.upstream.authority,
                };
                let agent = &self.shared.agent;
                match head::parse_request(
                    &self.input,
                    &rewrite,
                    &mut self.request_out,
                    |method, path| agent.decide(method, path),
                ) {
                    Ok(Some((request, injection))) => {
                        self.input.advance(request.head_len);
                        self.heads_read += 1;
                        return Ok((request, injection));
                    }
                    Ok(None) if !head_started => {
                        head_started = true;
                        self.arm_timer(Instant::now() + HEADER_READ_TIMEOUT);
                    }
                    Ok(None) => {}
                    Err(error) => {
                        self.answer_and_close(error.status(), format!("{error}\n").as_bytes())
                            .await;
                        return Err(Ending::Close);
                    }
                }
            }
            self.input.reserve(HEAD_READ_RESERVE);
            tokio::select! {
                biased;
                read = self.stream.read_buf(&mut self.input) => match read {
                    Ok(0) | Err(_) => return Err(Ending::ClientGone),
                    Ok(_) => {}
                },
                () = self.timer.as_mut() => {
                    if self.heads_read != self.heads_read_at_arming && !head_started {
                        self.arm_timer(Instant::now() + KEEP_ALIVE_TIMEOUT);
                        continue;
                    }
                    if !self.input.is_empty() {
                        self.answer_and_close(408, b"request head not received in time\n").await;
                    }
                    return Err(Ending::Close);
                }
            }
        }
    }

    fn arm_timer(&mut self, deadline: Instant) {
        self.timer.as_mut().reset(deadline);
        self.heads_read_at_arming = self.heads_read;
    }

    /// Drops the request's body from the input if all of it is there; `false` if it is not.
    fn skip_buffered_body(&mut self, request: &RequestHead) -> bool {
        let mut cursor = BodyCursor::new(request.framing);
        match cursor.advance(&self.input) {
            Ok(length) if cursor.is_done() => {
                self.input.advance(length);
                true
            }
            _ => false,
        }
    }

    /// Waits `duration`, or until `released` fires (the fault ended), while reading (and keeping) what the client
    /// sends; `false` if the client left meanwhile. The idle timer is re-armed afterwards.
    async fn wait_watching_client(
        &mut self,
        duration: Duration,
        released: &CancellationToken,
    ) -> bool {
        self.arm_timer(instant_after(Instant::now(), duration));
        let stayed = loop {
            if self.input.len() > MAX_HEAD_BYTES {
                // Enough buffered; stop reading and just wait.
                tokio::select! {
                    () = self.timer.as_mut() => {}
                    () = released.cancelled() => {}
                }
                break true;
            }
            self.input.reserve(HEAD_READ_RESERVE);
            tokio::select! {
                biased;
                () = released.cancelled() => break true,
                () = self.timer.as_mut() => break true,
                read = self.stream.read_buf(&mut self.input) => match read {
                    Ok(0) | Err(_) => break false,
                    Ok(_) => {}
                },
            }
        };
        self.arm_timer(Instant::now() + KEEP_ALIVE_TIMEOUT);
        stayed
    }

    /// Answers `status` with `body` and `connection: close`.
    async fn answer_and_close(&mut self, status: u16, body: &[u8]) {
        head::write_own_response(&mut self.reply, status, &[], body, false);
        let _ = self.stream.write_all(&self.reply).await;
    }

    /// Sends FIN, then reads and drops what the client still sends (for at most [`LINGER`]) until it closes too:
    /// closing a socket with unread bytes would send an RST that can destroy the last answer before the client
    /// reads it.
    async fn close_gracefully(&mut self) {
        if self.stream.shutdown().await.is_err() {
            return;
        }
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(LINGER, async {
            while matches!(self.stream.read(&mut sink).await, Ok(read) if read > 0) {}
        })
        .await;
    }
}

/// `at + duration`, saturating a day past `at` instead of panicking on overflow.
fn instant_after(at: Instant, duration: Duration) -> Instant {
    at.checked_add(duration)
        .unwrap_or_else(|| at + Duration::from_secs(24 * 3600))
}
