//! Forwarding one request upstream and relaying its answer: the body streamed while the answer streams back, a
//! request replayed once on a fresh connection when a reused one died, an upgrade turned into a tunnel, a 502.

use bytes::{Buf, BytesMut};
use tokio::io::AsyncWriteExt;

use super::{ClientConnection, Ending, Exchanged};
use crate::sidecar::framing::BodyCursor;
use crate::sidecar::head::{self, HEAD_READ_RESERVE, RequestHead, ResponseHead};
use crate::sidecar::relay::{PumpError, RelayError, pump, relay_response};
use crate::sidecar::upstream::UpstreamConnection;

/// An idle connection's buffer bigger than this is dropped (and allocated again when needed), so thousands of idle
/// keep-alive connections cost little memory after a large body went through them.
const IDLE_BUFFER_LIMIT: usize = 2 * HEAD_READ_RESERVE;
const BAD_GATEWAY_BODY: &[u8] = b"bad gateway: the upstream could not be reached\n";

impl ClientConnection<'_> {
    /// Forwards one request and relays its answer.
    pub(super) async fn exchange(&mut self, request: &RequestHead) -> Exchanged {
        let mut cursor = BodyCursor::new(request.framing);
        let arrived = match cursor.advance(&self.input) {
            Ok(length) => length,
            Err(error) => {
                self.answer_and_close(400, format!("{error}\n").as_bytes())
                    .await;
                return Exchanged::End(Ending::Close);
            }
        };
        self.request_out.extend_from_slice(&self.input[..arrived]);
        self.input.advance(arrived);
        let replayable = cursor.is_done();
        let mut fresh = false;
        loop {
            let own = if fresh { None } else { self.upstream.take() };
            let mut upstream = match own {
                Some(connection) => connection,
                None => match self.shared.upstream.checkout(fresh).await {
                    Ok(connection) => connection,
                    Err(error) => {
                        tracing::debug!(%error, "cannot connect to the upstream");
                        return self
                            .bad_gateway(request, replayable, BAD_GATEWAY_BODY)
                            .await;
                    }
                },
            };
            if upstream.stream.write_all(&self.request_out).await.is_err() {
                if upstream.reused && !fresh {
                    fresh = true;
                    continue;
                }
                return self
                    .bad_gateway(request, replayable, BAD_GATEWAY_BODY)
                    .await;
            }
            let (relayed, request_complete) = if cursor.is_done() {
                (self.relay(&mut upstream, request).await, true)
            } else {
                self.relay_streaming_request(&mut upstream, request, &mut cursor)
                    .await
            };
            return match relayed {
                Ok(answer) if answer.upgraded => self.tunnel(upstream).await,
                Ok(answer) => {
                    if answer.upstream_keep_alive && request_complete {
                        upstream.reused = true;
                        shrink_if_idle(&mut upstream.input);
                        self.upstream = Some(upstream);
                    }
                    shrink_if_idle(&mut self.input);
                    if answer.client_keep_alive && request_complete {
                        Exchanged::Next
                    } else {
                        Exchanged::End(Ending::Close)
                    }
                }
                Err(RelayError::Unanswered) if upstream.reused && replayable && !fresh => {
                    fresh = true;
                    continue;
                }
                Err(RelayError::Unanswered) => {
                    self.bad_gateway(request, replayable && request_complete, BAD_GATEWAY_BODY)
                        .await
                }
                Err(RelayError::BadHead(error)) => {
                    tracing::debug!(%error, "the upstream sent an unacceptable head");
                    let body = format!("bad gateway: the upstream's answer is invalid ({error})\n");
                    self.bad_gateway(request, false, body.as_bytes()).await
                }
                Err(RelayError::Midway) => Exchanged::End(Ending::Close),
                Err(RelayError::ClientGone) => Exchanged::End(Ending::ClientGone),
            };
        }
    }

    /// Relays the answer to a request whose body has gone upstream whole, reading the client meanwhile.
    pub(super) async fn relay(
        &mut self,
        upstream: &mut UpstreamConnection,
        request: &RequestHead,
    ) -> Result<ResponseHead, RelayError> {
        let (mut client_read, mut client_write) = self.stream.split();
        let (mut upstream_read, _) = upstream.stream.split();
        relay_response(
            &mut upstream_read,
            &mut upstream.input,
            &mut client_write,
            &mut self.reply,
            Some((&mut client_read, &mut self.input)),
            request,
        )
        .await
    }

    /// Streams the rest of the request body upstream while relaying the answer. Also returns whether the whole
    /// request body went upstream (an upstream may answer early, say 413, without reading it).
    pub(super) async fn relay_streaming_request(
        &mut self,
        upstream: &mut UpstreamConnection,
        request: &RequestHead,
        cursor: &mut BodyCursor,
    ) -> (Result<ResponseHead, RelayError>, bool) {
        let (mut client_read, mut client_write) = self.stream.split();
        let (mut upstream_read, mut upstream_write) = upstream.stream.split();
        let request_side = pump(
            &mut client_read,
            &mut self.input,
            cursor,
            &mut upstream_write,
        );
        let answer_side = relay_response(
            &mut upstream_read,
            &mut upstream.input,
            &mut client_write,
            &mut self.reply,
            None,
            request,
        );
        tokio::pin!(request_side, answer_side);
        let mut request_complete = false;
        let mut request_stopped = false;
        loop {
            tokio::select! {
                pumped = &mut request_side, if !request_stopped => {
                    request_stopped = true;
                    match pumped {
                        Ok(()) => request_complete = true,
                        // The upstream stopped reading: its answer (or its failure) tells the rest.
                        Err(PumpError::Sink) => {}
                        Err(PumpError::Source) => return (Err(RelayError::ClientGone), false),
                        Err(PumpError::Framing(error)) => {
                            tracing::debug!(%error, "client sent a malformed chunked body");
                            return (Err(RelayError::Midway), false);
                        }
                    }
                }
                answered = &mut answer_side => return (answered, request_complete),
            }
        }
    }

    /// Turns the connection into a tunnel to the upstream after a `101`: what either side sent early goes first.
    pub(super) async fn tunnel(&mut self, mut upstream: UpstreamConnection) -> Exchanged {
        if !self.input.is_empty() {
            if upstream.stream.write_all(&self.input).await.is_err() {
                return Exchanged::End(Ending::Close);
            }
            self.input.clear();
        }
        if !upstream.input.is_empty() {
            if self.stream.write_all(&upstream.input).await.is_err() {
                return Exchanged::End(Ending::ClientGone);
            }
            upstream.input.clear();
        }
        match tokio::io::copy_bidirectional(&mut self.stream, &mut upstream.stream).await {
            Ok(_) => Exchanged::End(Ending::Close),
            Err(_) => Exchanged::End(Ending::ClientGone),
        }
    }

    /// Answers `502` with `body`; the connection stays open when `keep_alive` and the request said so.
    pub(super) async fn bad_gateway(
        &mut self,
        request: &RequestHead,
        keep_alive: bool,
        body: &[u8],
    ) -> Exchanged {
        let keep_alive = keep_alive && request.keep_alive;
        head::write_own_response(&mut self.reply, 502, &[], body, keep_alive);
        match self.stream.write_all(&self.reply).await {
            Err(_) => Exchanged::End(Ending::ClientGone),
            Ok(()) if keep_alive => Exchanged::Next,
            Ok(()) => Exchanged::End(Ending::Close),
        }
    }
}

/// Drops an empty buffer that grew past [`IDLE_BUFFER_LIMIT`].
fn shrink_if_idle(buffer: &mut BytesMut) {
    if buffer.is_empty() && buffer.capacity() > IDLE_BUFFER_LIMIT {
        *buffer = BytesMut::new();
    }
}
