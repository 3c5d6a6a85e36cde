//! Reading a head's fields: what each header means to the proxy, the `Connection` tokens, the framing fields, and the request target split.

use std::borrow::Cow;

use super::refusal::{HeadError, MAX_HEAD_BYTES};

/// What a header name means to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Connection,
    /// Hop-by-hop and never forwarded (`Keep-Alive`, `Proxy-*`).
    Hop,
    Te,
    Upgrade,
    TransferEncoding,
    ContentLength,
    Host,
    ForwardedFor,
    Other,
}

pub(super) fn classify(name: &str) -> Field {
    let is = |known: &str| name.eq_ignore_ascii_case(known);
    match name.len() {
        2 if is("te") => Field::Te,
        4 if is("host") => Field::Host,
        7 if is("upgrade") => Field::Upgrade,
        10 if is("connection") => Field::Connection,
        10 if is("keep-alive") => Field::Hop,
        14 if is("content-length") => Field::ContentLength,
        15 if is("x-forwarded-for") => Field::ForwardedFor,
        16 if is("proxy-connection") => Field::Hop,
        17 if is("transfer-encoding") => Field::TransferEncoding,
        18 if is("proxy-authenticate") => Field::Hop,
        19 if is("proxy-authorization") => Field::Hop,
        _ => Field::Other,
    }
}

/// The comma-separated tokens of a header value, trimmed, empty ones skipped.
pub(super) fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|byte| *byte == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|token| !token.is_empty())
}

/// What the `Connection` headers of a head say.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ConnectionTokens {
    pub(super) close: bool,
    pub(super) keep_alive: bool,
    pub(super) upgrade: bool,
    /// Some token names another header (which is then hop-by-hop too).
    pub(super) names_fields: bool,
}

/// Framing headers of a head.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Scan {
    pub(super) connection: ConnectionTokens,
    pub(super) has_upgrade: bool,
    pub(super) has_host: bool,
    /// `Transfer-Encoding` present; `chunked_last` tells whether its final coding is `chunked`.
    pub(super) transfer_encoding: bool,
    pub(super) chunked_last: bool,
    pub(super) content_length: Option<u64>,
    pub(super) forwarded_for_lines: usize,
}

pub(super) fn scan(headers: &[httparse::Header<'_>]) -> Result<Scan, HeadError> {
    let mut scan = Scan::default();
    for header in headers {
        match classify(header.name) {
            Field::Connection => {
                for token in tokens(header.value) {
                    if token.eq_ignore_ascii_case(b"close") {
                        scan.connection.close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") {
                        scan.connection.keep_alive = true;
                    } else if token.eq_ignore_ascii_case(b"upgrade") {
                        scan.connection.upgrade = true;
                    } else {
                        scan.connection.names_fields = true;
                    }
                }
            }
            Field::Upgrade => scan.has_upgrade = true,
            Field::Host => scan.has_host = true,
            Field::ForwardedFor => scan.forwarded_for_lines += 1,
            Field::TransferEncoding => {
                scan.transfer_encoding = true;
                // The last line's last coding is the outermost one.
                scan.chunked_last = tokens(header.value)
                    .last()
                    .is_some_and(|coding| coding.eq_ignore_ascii_case(b"chunked"));
            }
            Field::ContentLength => {
                let length = parse_content_length(header.value).ok_or(HeadError::Field {
                    field: "content-length",
                    reason: "not a non-negative integer (or differing values)",
                })?;
                if scan.content_length.is_some_and(|seen| seen != length) {
                    return Err(HeadError::Field {
                        field: "content-length",
                        reason: "several differing values",
                    });
                }
                scan.content_length = Some(length);
            }
            Field::Hop | Field::Te | Field::Other => {}
        }
    }
    Ok(scan)
}

/// `Content-Length`: digits, or a list of identical digit strings (`5, 5`).
pub(super) fn parse_content_length(value: &[u8]) -> Option<u64> {
    let mut found = None;
    for token in value.split(|byte| *byte == b',').map(<[u8]>::trim_ascii) {
        if token.is_empty() || token.len() > 19 || !token.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let length: u64 = std::str::from_utf8(token).ok()?.parse().ok()?;
        if found.is_some_and(|seen| seen != length) {
            return None;
        }
        found = Some(length);
    }
    found
}

/// Whether a `Connection` header of `headers` names `name`.
pub(super) fn named_by_connection(headers: &[httparse::Header<'_>], name: &str) -> bool {
    headers
        .iter()
        .filter(|header| classify(header.name) == Field::Connection)
        .flat_map(|header| tokens(header.value))
        .any(|token| token.eq_ignore_ascii_case(name.as_bytes()))
}

pub(super) fn write_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

pub(super) fn map_parse_error(error: httparse::Error) -> HeadError {
    match error {
        httparse::Error::TooManyHeaders => HeadError::TooLarge,
        httparse::Error::HeaderName => HeadError::Malformed("invalid header name"),
        httparse::Error::HeaderValue => HeadError::Malformed("invalid header value"),
        httparse::Error::NewLine | httparse::Error::Token => HeadError::Malformed("invalid line"),
        httparse::Error::Status => HeadError::Malformed("invalid status"),
        httparse::Error::Version => HeadError::Malformed("unsupported HTTP version"),
    }
}

/// The length of a parsed head (`None`: not complete yet), refusing one over [`MAX_HEAD_BYTES`] whether complete
/// or not. `buffered` is how many bytes the parser was given.
pub(super) fn head_length(
    parsed: Result<httparse::Status<usize>, httparse::Error>,
    buffered: usize,
) -> Result<Option<usize>, HeadError> {
    match parsed.map_err(map_parse_error)? {
        httparse::Status::Complete(length) if length <= MAX_HEAD_BYTES => Ok(Some(length)),
        httparse::Status::Partial if buffered <= MAX_HEAD_BYTES => Ok(None),
        _ => Err(HeadError::TooLarge),
    }
}

/// The path and query of a request target, and the authority of an absolute-form one. An absolute form without a
/// path gets `/` (`http://h?q` is `/?q` on host `h`).
pub(super) fn split_target(target: &str) -> Result<(Cow<'_, str>, Option<&str>), HeadError> {
    if target.starts_with('/') || target == "*" {
        return Ok((Cow::Borrowed(target), None));
    }
    let after_scheme = ["http://", "https://"].iter().find_map(|scheme| {
        target
            .get(..scheme.len())
            .filter(|prefix| prefix.eq_ignore_ascii_case(scheme))
            .map(|_| &target[scheme.len()..])
    });
    let Some(rest) = after_scheme else {
        return Err(HeadError::Field {
            field: "request target",
            reason: "must be /path or http://host/path",
        });
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    if authority.is_empty() {
        return Err(HeadError::Field {
            field: "request target",
            reason: "absolute form without a host",
        });
    }
    let path = if path.starts_with('/') {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(format!("/{path}"))
    };
    Ok((path, Some(authority)))
}
