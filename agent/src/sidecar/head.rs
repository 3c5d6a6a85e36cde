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

mod fields;
mod refusal;

use http::Method;

use super::framing::Framing;
use fields::{
    Field, classify, head_length, named_by_connection, scan, split_target, tokens, write_field,
};

pub(super) use refusal::HEAD_READ_RESERVE;
pub use refusal::{HeadError, MAX_HEAD_BYTES, MAX_HEADERS};

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
