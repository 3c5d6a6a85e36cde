//! Where an HTTP/1.1 message body ends: a countdown for `Content-Length`, a byte-level scanner for the chunked
//! coding, or the end of the connection. The sidecar forwards body bytes exactly as they arrived; a [`BodyCursor`]
//! only tells it how many of them belong to the current message.

/// How the body of one message is delimited (RFC 9112 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body at all (a request without `Content-Length`/`Transfer-Encoding`, a `HEAD` answer, 1xx, 204, 304).
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// The chunked transfer coding, trailers included.
    Chunked,
    /// Everything until the sender closes the connection (responses only).
    UntilClose,
}

impl Framing {
    /// Whether the receiver can tell where the message ends without the connection closing.
    pub fn is_delimited(self) -> bool {
        self != Framing::UntilClose
    }
}

/// A chunked body the sidecar refuses to forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ChunkedError {
    #[error("chunked body: invalid chunk size line")]
    SizeLine,
    #[error("chunked body: chunk size does not fit in 64 bits")]
    SizeOverflow,
    #[error("chunked body: chunk data not followed by CRLF")]
    MissingDataCrlf,
    #[error("chunked body: chunk extension or trailer section over {MAX_LINE_BYTES} bytes")]
    LineTooLong,
    #[error("chunked body: trailer line not ended by CRLF")]
    TrailerLine,
}

/// Longest chunk-size line (with extensions) or trailer section accepted.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunked {
    /// Reading hex digits of a chunk size.
    Size {
        value: u64,
        digits: u8,
    },
    /// After the size: `;extension` or whitespace, up to CR.
    Extension {
        value: u64,
    },
    /// Saw CR after a size line; LF must follow.
    SizeLf {
        value: u64,
    },
    /// Inside chunk data.
    Data {
        remaining: u64,
    },
    /// Chunk data ended; CR must follow.
    DataCr,
    /// CR after chunk data; LF must follow.
    DataLf,
    /// At the start of a trailer line (or of the empty line that ends the body).
    TrailerStart,
    /// Inside a trailer field line, up to CR.
    TrailerLine,
    /// CR inside a trailer line; LF must follow.
    TrailerLf,
    /// CR of the final empty line; LF ends the body.
    EndLf,
    Done,
}

/// Tracks how much of a body has passed. Feed it the bytes in order with [`BodyCursor::advance`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyCursor {
    state: State,
    /// Bytes of chunk-size lines and trailers seen so far (bounded by [`MAX_LINE_BYTES`] per line/section).
    line_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Length { remaining: u64 },
    Chunked(Chunked),
    UntilClose,
    Done,
}

impl BodyCursor {
    pub fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Empty | Framing::Length(0) => State::Done,
            Framing::Length(remaining) => State::Length { remaining },
            Framing::Chunked => State::Chunked(Chunked::Size {
                value: 0,
                digits: 0,
            }),
            Framing::UntilClose => State::UntilClose,
        };
        BodyCursor {
            state,
            line_bytes: 0,
        }
    }

    /// Whether the whole body has passed.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether the body ends only when the connection does.
    pub fn runs_until_close(&self) -> bool {
        self.state == State::UntilClose
    }

    /// Consumes the front of `bytes` that belongs to the body and returns its length; the rest (if any) belongs to
    /// whatever follows the message. After the call, [`BodyCursor::is_done`] tells whether the body ended.
    pub fn advance(&mut self, bytes: &[u8]) -> Result<usize, ChunkedError> {
        match &mut self.state {
            State::Done => Ok(0),
            State::UntilClose => Ok(bytes.len()),
            State::Length { remaining } => {
                let taken =
                    usize::try_from(*remaining).map_or(bytes.len(), |left| left.min(bytes.len()));
                *remaining -= taken as u64;
                if *remaining == 0 {
                    self.state = State::Done;
                }
                Ok(taken)
            }
            State::Chunked(_) => self.advance_chunked(bytes),
        }
    }

    fn advance_chunked(&mut self, bytes: &[u8]) -> Result<usize, ChunkedError> {
        let State::Chunked(mut chunk) = self.state else {
            unreachable!("advance_chunked on a body that is not chunked");
        };
        let mut index = 0;
        while index < bytes.len() {
            if let Chunked::Data { remaining } = chunk {
                let available = (bytes.len() - index) as u64;
                let taken = remaining.min(available);
                index += taken as usize;
                chunk = if taken == remaining {
                    Chunked::DataCr
                } else {
                    Chunked::Data {
                        remaining: remaining - taken,
                    }
                };
                continue;
            }
            let byte = bytes[index];
            index += 1;
            chunk = self.step(chunk, byte)?;
            if chunk == Chunked::Done {
                self.state = State::Done;
                return Ok(index);
            }
        }
        self.state = State::Chunked(chunk);
        Ok(index)
    }

    /// One byte of framing (everything but chunk data).
    fn step(&mut self, chunk: Chunked, byte: u8) -> Result<Chunked, ChunkedError> {
        let next = match chunk {
            Chunked::Size { value, digits } => match (byte as char).to_digit(16) {
                Some(digit) => {
                    if digits >= 16 {
                        return Err(ChunkedError::SizeOverflow);
                    }
                    Chunked::Size {
                        value: value << 4 | u64::from(digit),
                        digits: digits + 1,
                    }
                }
                None if digits == 0 => return Err(ChunkedError::SizeLine),
                None => match byte {
                    b'\r' => Chunked::SizeLf { value },
                    b';' | b' ' | b'\t' => Chunked::Extension { value },
                    _ => return Err(ChunkedError::SizeLine),
                },
            },
            Chunked::Extension { value } => match byte {
                b'\r' => Chunked::SizeLf { value },
                b'\n' => return Err(ChunkedError::SizeLine),
                _ => Chunked::Extension { value },
            },
            Chunked::SizeLf { value } => match byte {
                b'\n' if value == 0 => Chunked::TrailerStart,
                b'\n' => Chunked::Data { remaining: value },
                _ => return Err(ChunkedError::SizeLine),
            },
            Chunked::Data { .. } => unreachable!("chunk data is skipped in bulk"),
            Chunked::DataCr => match byte {
                b'\r' => Chunked::DataLf,
                _ => return Err(ChunkedError::MissingDataCrlf),
            },
            Chunked::DataLf => match byte {
                b'\n' => {
                    self.line_bytes = 0;
                    Chunked::Size {
                        value: 0,
                        digits: 0,
                    }
                }
                _ => return Err(ChunkedError::MissingDataCrlf),
            },
            Chunked::TrailerStart => match byte {
                b'\r' => Chunked::EndLf,
                b'\n' => return Err(ChunkedError::TrailerLine),
                _ => Chunked::TrailerLine,
            },
            Chunked::TrailerLine => match byte {
                b'\r' => Chunked::TrailerLf,
                b'\n' => return Err(ChunkedError::TrailerLine),
                _ => Chunked::TrailerLine,
            },
            Chunked::TrailerLf => match byte {
                b'\n' => Chunked::TrailerStart,
                _ => return Err(ChunkedError::TrailerLine),
            },
            Chunked::EndLf => match byte {
                b'\n' => Chunked::Done,
                _ => return Err(ChunkedError::TrailerLine),
            },
            Chunked::Done => Chunked::Done,
        };
        self.line_bytes += 1;
        if self.line_bytes > MAX_LINE_BYTES {
            return Err(ChunkedError::LineTooLong);
        }
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Feeds `bytes` in pieces of `piece` bytes; returns the body length found and whether it ended.
    fn scan(framing: Framing, bytes: &[u8], piece: usize) -> Result<(usize, bool), ChunkedError> {
        let mut cursor = BodyCursor::new(framing);
        let mut taken = 0;
        for part in bytes.chunks(piece.max(1)) {
            let used = cursor.advance(part)?;
            taken += used;
            if used < part.len() || cursor.is_done() {
                break;
            }
        }
        Ok((taken, cursor.is_done()))
    }

    #[test]
    fn lengths_count_down_and_leave_what_follows() {
        assert_eq!(scan(Framing::Length(5), b"helloGET /", 3), Ok((5, true)));
        assert_eq!(scan(Framing::Length(5), b"hel", 2), Ok((3, false)));
        assert!(BodyCursor::new(Framing::Length(0)).is_done());
        assert!(BodyCursor::new(Framing::Empty).is_done());
        let mut until_close = BodyCursor::new(Framing::UntilClose);
        assert_eq!(until_close.advance(b"anything"), Ok(8));
        assert!(until_close.runs_until_close() && !until_close.is_done());
    }

    #[test]
    fn chunked_bodies_end_after_the_last_chunk_and_trailers() {
        let body = b"4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nExpires: never\r\n\r\n";
        for piece in 1..=body.len() {
            assert_eq!(
                scan(Framing::Chunked, body, piece),
                Ok((body.len(), true)),
                "piece {piece}"
            );
        }
        let mut with_next = body.to_vec();
        with_next.extend_from_slice(b"GET / HTTP/1.1\r\n");
        assert_eq!(
            scan(Framing::Chunked, &with_next, 7),
            Ok((body.len(), true))
        );
        assert_eq!(
            scan(Framing::Chunked, b"A\r\n0123456789\r\n0\r\n\r\n", 64),
            Ok((20, true))
        );
        assert_eq!(scan(Framing::Chunked, b"4\r\nWi", 64), Ok((5, false)));
    }

    #[test]
    fn malformed_chunked_bodies_are_refused() {
        let cases: [(&[u8], ChunkedError); 7] = [
            (b"\r\n", ChunkedError::SizeLine),
            (b"g\r\n", ChunkedError::SizeLine),
            (b"4\nWiki\r\n", ChunkedError::SizeLine),
            (b"4\r\nWikiXX", ChunkedError::MissingDataCrlf),
            (b"11111111111111111\r\n", ChunkedError::SizeOverflow),
            (b"0\r\nbad\nline", ChunkedError::TrailerLine),
            (b"0\r\n\rX", ChunkedError::TrailerLine),
        ];
        for (bytes, expected) in cases {
            assert_eq!(
                scan(Framing::Chunked, bytes, 64),
                Err(expected),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        let long_extension = [b"1;".as_slice(), &vec![b'x'; MAX_LINE_BYTES]].concat();
        assert_eq!(
            scan(Framing::Chunked, &long_extension, 4096),
            Err(ChunkedError::LineTooLong)
        );
    }

    /// The chunked coding of `chunks` (hex sizes, CRLFs, a last chunk, no trailers).
    fn encode(chunks: &[Vec<u8>]) -> Vec<u8> {
        let mut out = Vec::new();
        for chunk in chunks.iter().filter(|chunk| !chunk.is_empty()) {
            out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            out.extend_from_slice(chunk);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    }

    proptest! {
        #[test]
        fn any_chunking_and_any_split_finds_the_exact_end(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..8),
            piece in 1usize..97,
            tail in proptest::collection::vec(any::<u8>(), 0..20),
        ) {
            let body = encode(&chunks);
            let mut bytes = body.clone();
            bytes.extend_from_slice(&tail);
            prop_assert_eq!(scan(Framing::Chunked, &bytes, piece), Ok((body.len(), true)));
        }
    }
}
