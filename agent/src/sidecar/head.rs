//! Request and response heads on the sidecar's HTTP/1.1 path: parsed in place with `httparse`, checked, and written
//! again for the next hop.
//!
//! Rules (RFC 9110 §7.6, RFC 9112):
//!
//! - Hop-by-hop headers are not forwarded in either direction: `Connection` and every header it names,
//!   `Keep-Alive`, `Proxy-Connection`, `Proxy-Authenticate`, `Proxy-Authorization`, `TE` and `Upgrade` (the last
//!   two kept, with `Connection: upgrade`, on a protocol upgrade). Bodies are forwarded byte for byte in the framing
//!   they arrived in, so `Transfer-Encoding` and `Content-Length` are kept as sent (a `Content-Length` next to a
//!   `Transfer-Encoding` is dropped from a response; a request carrying both is refused).
//! - The request line is sent in origin form (`/path?query`); an absolute-form target becomes origin form and its
//!   authority the `Host`. `Host` is otherwise passed as the client sent it (a transparent sidecar); a request without
//!   one gets the upstream's `host:port`.
//! - `X-Forwarded-For` gets the client's IP appended (`a, b, client`; several lines are folded into one), or is
//!   created. No other `Forwarded`/`X-Forwarded-*` header is added or changed.
//! - `Expect: 100-continue` goes to the upstream, whose `100 Continue` comes back through the sidecar.
//! - An HTTP/1.0 request goes upstream as HTTP/1.0 (so the answer is not chunked) and its connections close after
//!   the answer.
//! - Everything else — the status code, reason phrase, and the order, case and values of other headers — is passed
//!   unchanged.

use std::borrow::Cow;

use http::Method;

use super::framing::Framing;

/// Most header fields in one head.
pub const MAX_HEADERS: usize = 100;
/// Longest head (request line or status line plus fields) accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Free space made in a buffer before reading a head (most heads fit; a longer one grows the buffer).
pub(super) const HEAD_READ_RESERVE: usize = 4 * 1024;

/// A head the sidecar refuses: a client's gets the [`HeadError::status`] answer, an upstream's a 502.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("head is over {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} fields")]
    TooLarge,
    #[error("malformed head: {0}")]
    Malformed(&'static str),
    #[error("{field}: {reason}")]
    Field {
        field: &'static str,
        reason: &'static str,
    },
    #[error("method {0}: not supported through the sidecar")]
    UnsupportedMethod(&'static str),
}

impl HeadError {
    /// The status a client gets for a request head with this error.
    pub fn status(&self) -> u16 {
        match self {
            HeadError::TooLarge => 431,
            HeadError::UnsupportedMethod(_) => 501,
            HeadError::Malformed(_) | HeadError::Field { .. } => 400,
        }
    }
}

/// What the connection loop needs to know about a parsed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHead {
    /// Bytes of the head at the front of the input (the body, if any, follows).
    pub head_len: usize,
    pub framing: Framing,
    /// The client may send another request on this connection after the answer.
    pub keep_alive: bool,
    /// `HEAD`: the answer has no body whatever its headers say.
    pub is_head_method: bool,
    /// `Connection: upgrade` with an `Upgrade` header and no body: a `101` answer switches protocols.
    pub upgrade: bool,
    /// HTTP/1.0.
    pub http10: bool,
}

/// What the connection loop needs to know about a parsed response head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    pub head_len: usize,
    pub status: u16,
    pub framing: Framing,
    /// A 1xx other than 101: a final answer follows.
    pub interim: bool,
    /// A `101` to an upgrade request: both connections now carry another protocol.
    pub upgraded: bool,
    /// The upstream connection can carry another request after this answer.
    pub upstream_keep_alive: bool,
    /// The client connection stays open after this answer (its head says so).
    pub client_keep_alive: bool,
}

/// Per-connection facts the request rewrite uses.
#[derive(Debug, Clone)]
pub struct Rewrite<'a> {
    /// The client's IP, as text, for `X-Forwarded-For`.
    pub client_ip: &'a str,
    /// `host:port` of the upstream, for requests without `Host`.
    pub upstream_host: &'a str,
}

/// What a header name means to the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
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

fn classify(name: &str) -> Field {
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
fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|byte| *byte == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|token| !token.is_empty())
}

/// What the `Connection` headers of a head say.
#[derive(Debug, Default, Clone, Copy)]
struct ConnectionTokens {
    close: bool,
    keep_alive: bool,
    upgrade: bool,
    /// Some token names another header (which is then hop-by-hop too).
    names_fields: bool,
}

/// Framing headers of a head.
#[derive(Debug, Default, Clone, Copy)]
struct Scan {
    connection: ConnectionTokens,
    has_upgrade: bool,
    has_host: bool,
    /// `Transfer-Encoding` present; `chunked_last` tells whether its final coding is `chunked`.
    transfer_encoding: bool,
    chunked_last: bool,
    content_length: Option<u64>,
    forwarded_for_lines: usize,
}

fn scan(headers: &[httparse::Header<'_>]) -> Result<Scan, HeadError> {
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
fn parse_content_length(value: &[u8]) -> Option<u64> {
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
fn named_by_connection(headers: &[httparse::Header<'_>], name: &str) -> bool {
    headers
        .iter()
        .filter(|header| classify(header.name) == Field::Connection)
        .flat_map(|header| tokens(header.value))
        .any(|token| token.eq_ignore_ascii_case(name.as_bytes()))
}

fn write_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

fn map_parse_error(error: httparse::Error) -> HeadError {
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
fn head_length(
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
fn split_target(target: &str) -> Result<(Cow<'_, str>, Option<&str>), HeadError> {
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

/// Parses the request head at the front of `input`. `Ok(None)`: the head is not complete yet. On success the
/// head to send upstream is in `out` (cleared first), and `decide(method, path)` — the path without the query —
/// has been called once; its answer comes back with the head.
pub fn parse_request<D>(
    input: &[u8],
    rewrite: &Rewrite<'_>,
    out: &mut Vec<u8>,
    decide: impl FnOnce(&Method, &str) -> D,
) -> Result<Option<(RequestHead, D)>, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut fields);
    let Some(head_len) = head_length(request.parse(input), input.len())? else {
        return Ok(None);
    };
    let (Some(method_text), Some(target), Some(minor)) =
        (request.method, request.path, request.version)
    else {
        return Err(HeadError::Malformed("incomplete request line"));
    };
    if method_text == "CONNECT" {
        return Err(HeadError::UnsupportedMethod("CONNECT"));
    }
    let method = Method::from_bytes(method_text.as_bytes()).map_err(|_| HeadError::Field {
        field: "method",
        reason: "not a valid token",
    })?;
    let headers = &*request.headers;
    let found = scan(headers)?;
    let http10 = minor == 0;
    let framing = if found.transfer_encoding {
        if found.content_length.is_some() {
            return Err(HeadError::Field {
                field: "transfer-encoding",
                reason: "sent together with content-length",
            });
        }
        if !found.chunked_last || http10 {
            return Err(HeadError::Field {
                field: "transfer-encoding",
                reason: "only chunked (as the final coding, HTTP/1.1) is accepted",
            });
        }
        Framing::Chunked
    } else {
        match found.content_length {
            Some(length) => Framing::Length(length),
            None => Framing::Empty,
        }
    };
    let keep_alive = !http10 && !found.connection.close;
    let upgrade =
        !http10 && found.connection.upgrade && found.has_upgrade && framing == Framing::Empty;
    let (path_and_query, absolute_authority) = split_target(target)?;
    let path_and_query = &*path_and_query;
    let path = path_and_query.split('?').next().unwrap_or(path_and_query);
    let decision = decide(&method, path);

    out.clear();
    out.extend_from_slice(method_text.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path_and_query.as_bytes());
    out.extend_from_slice(if http10 {
        b" HTTP/1.0\r\n"
    } else {
        b" HTTP/1.1\r\n"
    });
    for header in headers {
        let keep = match classify(header.name) {
            Field::Connection | Field::Hop | Field::Te | Field::ForwardedFor => false,
            Field::Upgrade => upgrade,
            Field::Host => absolute_authority.is_none(),
            Field::TransferEncoding | Field::ContentLength | Field::Other => {
                !found.connection.names_fields || !named_by_connection(headers, header.name)
            }
        };
        if keep {
            write_field(out, header.name.as_bytes(), header.value);
        }
    }
    if let Some(authority) = absolute_authority {
        write_field(out, b"host", authority.as_bytes());
    } else if !found.has_host {
        write_field(out, b"host", rewrite.upstream_host.as_bytes());
    }
    out.extend_from_slice(b"x-forwarded-for: ");
    if found.forwarded_for_lines > 0 {
        let earlier = headers
            .iter()
            .filter(|header| classify(header.name) == Field::ForwardedFor)
            .flat_map(|header| tokens(header.value));
        for hop in earlier {
            out.extend_from_slice(hop);
            out.extend_from_slice(b", ");
        }
    }
    out.extend_from_slice(rewrite.client_ip.as_bytes());
    out.extend_from_slice(b"\r\n");
    if upgrade {
        out.extend_from_slice(b"connection: upgrade\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(Some((
        RequestHead {
            head_len,
            framing,
            keep_alive,
            is_head_method: method == Method::HEAD,
            upgrade,
            http10,
        },
        decision,
    )))
}

/// Parses the upstream's response head at the front of `input`, answering `request`. `Ok(None)`: not complete yet.
/// On success the head to send to the client is in `out` (cleared first).
pub fn parse_response(
    input: &[u8],
    request: &RequestHead,
    out: &mut Vec<u8>,
) -> Result<Option<ResponseHead>, HeadError> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut fields);
    let Some(head_len) = head_length(response.parse(input), input.len())? else {
        return Ok(None);
    };
    let (Some(minor), Some(status)) = (response.version, response.code) else {
        return Err(HeadError::Malformed("incomplete status line"));
    };
    let reason = response.reason.unwrap_or("");
    let headers = &*response.headers;
    let found = scan(headers)?;
    let upgraded = status == 101;
    if upgraded && !request.upgrade {
        return Err(HeadError::Field {
            field: "status",
            reason: "101 Switching Protocols to a request that asked for no upgrade",
        });
    }
    let interim = (100..200).contains(&status) && !upgraded;
    let framing = if interim || upgraded || request.is_head_method || status == 204 || status == 304
    {
        Framing::Empty
    } else if found.transfer_encoding {
        if found.chunked_last {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else {
        match found.content_length {
            Some(length) => Framing::Length(length),
            None => Framing::UntilClose,
        }
    };
    let upstream_keep_alive = minor == 1
        && !request.http10
        && !found.connection.close
        && framing.is_delimited()
        && !upgraded;
    let client_keep_alive = request.keep_alive && framing.is_delimited();

    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(itoa_status(status).as_slice());
    out.push(b' ');
    out.extend_from_slice(reason.as_bytes());
    out.extend_from_slice(b"\r\n");
    for header in headers {
        let keep = match classify(header.name) {
            Field::Connection | Field::Hop | Field::Te => false,
            Field::Upgrade => upgraded,
            Field::ContentLength if found.transfer_encoding => false,
            Field::TransferEncoding
            | Field::ContentLength
            | Field::Host
            | Field::ForwardedFor
            | Field::Other => {
                !found.connection.names_fields || !named_by_connection(headers, header.name)
            }
        };
        if keep {
            write_field(out, header.name.as_bytes(), header.value);
        }
    }
    if upgraded {
        out.extend_from_slice(b"connection: upgrade\r\n");
    } else if !interim && !client_keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(Some(ResponseHead {
        head_len,
        status,
        framing,
        interim,
        upgraded,
        upstream_keep_alive,
        client_keep_alive,
    }))
}

/// A status code (100–999, as httparse guarantees) as three ASCII digits.
fn itoa_status(status: u16) -> [u8; 3] {
    let digit = |value: u16| b'0' + (value % 10) as u8;
    [digit(status / 100), digit(status / 10), digit(status)]
}

/// A complete answer the sidecar makes up itself (an injected error, a 400, a 502): status line, a plain-text
/// content type when there is a body, `extra` fields, the length, and `connection: close` unless `keep_alive`.
pub fn write_own_response(
    out: &mut Vec<u8>,
    status: u16,
    extra: &[(&str, &str)],
    body: &[u8],
    keep_alive: bool,
) {
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(&itoa_status(status));
    out.push(b' ');
    let reason = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|code| code.canonical_reason())
        .unwrap_or("");
    out.extend_from_slice(reason.as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in extra {
        write_field(out, name.as_bytes(), value.as_bytes());
    }
    if !body.is_empty() {
        write_field(out, b"content-type", b"text/plain; charset=utf-8");
    }
    write_field(out, b"content-length", body.len().to_string().as_bytes());
    if !keep_alive {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

#[cfg(test)]
mod tests;
