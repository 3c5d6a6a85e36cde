//! Relaying between the two sockets of a forwarded request: the upstream's answer head (interim answers passed on,
//! the client watched meanwhile) and bodies copied byte for byte until their framing says they ended.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{ReadHalf, WriteHalf};

use super::framing::{BodyCursor, ChunkedError};
use super::head::HEAD_READ_RESERVE;
use super::head::{self, HeadError, MAX_HEAD_BYTES, RequestHead, ResponseHead};

/// Free space made in a buffer before reading more of a body.
const BODY_READ_RESERVE: usize = 32 * 1024;

/// Why relaying an answer failed.
#[derive(Debug)]
pub(super) enum RelayError {
    /// The upstream closed or failed before its answer head was complete; nothing reached the client.
    Unanswered,
    /// The upstream's head was unacceptable; nothing reached the client.
    BadHead(HeadError),
    /// The upstream failed after part of the answer reached the client.
    Midway,
    ClientGone,
}

/// Why copying a body failed.
#[derive(Debug)]
pub(super) enum PumpError {
    /// The source closed before the body ended, or reading it failed.
    Source,
    /// Writing to the sink failed.
    Sink,
    Framing(ChunkedError),
}

/// Reads the upstream's answer head, writes it to the client with the body bytes that came with it, then streams
/// the rest of the body. Interim (1xx) answers are passed on and the final one awaited. With `client_watch`, the
/// client is read while the head is awaited: bytes it sends are kept, and its end of stream ends the relay.
/// On a `101` the head (and nothing else) is written and the answer returned for the caller to tunnel.
pub(super) async fn relay_response(
    upstream_read: &mut ReadHalf<'_>,
    upstream_input: &mut BytesMut,
    client_write: &mut WriteHalf<'_>,
    reply: &mut Vec<u8>,
    mut client_watch: Option<(&mut ReadHalf<'_>, &mut BytesMut)>,
    request: &RequestHead,
) -> Result<ResponseHead, RelayError> {
    let mut answered_any = false;
    let upstream_failed = |answered_any: bool| {
        if answered_any {
            RelayError::Midway
        } else {
            RelayError::Unanswered
        }
    };
    loop {
        if !upstream_input.is_empty() {
            match head::parse_response(upstream_input, request, reply) {
                Ok(Some(answer)) => {
                    upstream_input.advance(answer.head_len);
                    if answer.interim {
                        // RFC 9110 §15.2: no 1xx to an HTTP/1.0 client.
                        if !request.http10 {
                            client_write
                                .write_all(reply)
                                .await
                                .map_err(|_| RelayError::ClientGone)?;
                            answered_any = true;
                        }
                        continue;
                    }
                    let mut cursor = BodyCursor::new(answer.framing);
                    let arrived = cursor.advance(upstream_input).map_err(|error| {
                        tracing::debug!(%error, "upstream sent a malformed chunked body");
                        upstream_failed(answered_any)
                    })?;
                    reply.extend_from_slice(&upstream_input[..arrived]);
                    upstream_input.advance(arrived);
                    client_write
                        .write_all(reply)
                        .await
                        .map_err(|_| RelayError::ClientGone)?;
                    if !answer.upgraded {
                        pump(upstream_read, upstream_input, &mut cursor, client_write)
                            .await
                            .map_err(|error| match error {
                                PumpError::Sink => RelayError::ClientGone,
                                PumpError::Source | PumpError::Framing(_) => RelayError::Midway,
                            })?;
                    }
                    return Ok(answer);
                }
                Ok(None) => {}
                Err(error) if answered_any => {
                    tracing::debug!(%error, "upstream sent an unacceptable head after an interim answer");
                    return Err(RelayError::Midway);
                }
                Err(error) => return Err(RelayError::BadHead(error)),
            }
        }
        upstream_input.reserve(HEAD_READ_RESERVE);
        match client_watch.as_mut() {
            Some((client_read, client_input)) if client_input.len() <= MAX_HEAD_BYTES => {
                client_input.reserve(HEAD_READ_RESERVE);
                tokio::select! {
                    biased;
                    read = upstream_read.read_buf(upstream_input) => match read {
                        Ok(0) | Err(_) => return Err(upstream_failed(answered_any)),
                        Ok(_) => {}
                    },
                    read = client_read.read_buf(client_input) => match read {
                        Ok(0) | Err(_) => return Err(RelayError::ClientGone),
                        Ok(_) => {}
                    },
                }
            }
            _ => match upstream_read.read_buf(upstream_input).await {
                Ok(0) | Err(_) => return Err(upstream_failed(answered_any)),
                Ok(_) => {}
            },
        }
    }
}

/// Copies a body from `source` to `sink`: first what `buffer` holds, then what is read, until `cursor` says the
/// body ended (or, for a body that runs until close, the source closes). Bytes after the body stay in `buffer`.
pub(super) async fn pump(
    source: &mut ReadHalf<'_>,
    buffer: &mut BytesMut,
    cursor: &mut BodyCursor,
    sink: &mut WriteHalf<'_>,
) -> Result<(), PumpError> {
    loop {
        if !buffer.is_empty() {
            let length = cursor.advance(buffer).map_err(PumpError::Framing)?;
            if length > 0 {
                sink.write_all(&buffer[..length])
                    .await
                    .map_err(|_| PumpError::Sink)?;
                buffer.advance(length);
            }
        }
        if cursor.is_done() {
            return Ok(());
        }
        buffer.reserve(BODY_READ_RESERVE);
        match source.read_buf(buffer).await {
            Ok(0) if cursor.runs_until_close() => return Ok(()),
            Ok(0) | Err(_) => return Err(PumpError::Source),
            Ok(_) => {}
        }
    }
}
