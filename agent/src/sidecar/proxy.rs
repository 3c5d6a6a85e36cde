//! [`ProxyService`]: forwards one request to the upstream over a keep-alive HTTP/1.1 connection and streams the
//! answer back.
//!
//! Headers:
//!
//! - Hop-by-hop headers are removed in both directions: `Connection` and every header it names, `Keep-Alive`,
//!   `Proxy-Connection`, `Proxy-Authenticate`, `Proxy-Authorization`, `TE`, `Trailer`, `Transfer-Encoding`,
//!   `Upgrade`. hyper frames each side again (`Content-Length` is kept, otherwise chunked).
//! - `Expect` is removed from the forwarded request: the sidecar's own server answers `100 Continue` when the body is
//!   read, and the upstream gets the body without waiting.
//! - `Host` is passed through as the client sent it (the upstream sees the name the client asked for, as with a
//!   transparent sidecar); when the client sent none (HTTP/1.0) the upstream's `host:port` is used. The request
//!   line is sent in origin form (`/path?query`).
//! - `X-Forwarded-For` gets the client's IP appended (`a, b, client`; several lines are folded into one), or is
//!   created. No other `Forwarded`/`X-Forwarded-*` header is added or changed.
//! - Everything else, including the status code and the order and case-insensitive values of other headers, is
//!   passed unchanged. Bodies are streamed frame by frame in both directions, never buffered whole.
//!
//! When the upstream cannot be reached or fails mid-head the client gets `502 Bad Gateway` with a one-line body.
//! Protocol upgrades (websockets) are not supported through the sidecar.

use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{Request, Response, StatusCode, Uri, Version};
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use tower_service::Service;

use super::upstream::UpstreamSlot;

/// Response body of the proxy: the upstream's body, streamed, or a short body the proxy wrote itself.
pub type ProxyBody = Either<Incoming, Full<Bytes>>;

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
static KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
static PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");

/// Where requests go: `http://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    pub scheme: Scheme,
    pub authority: Authority,
}

/// An upstream URL the sidecar cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("upstream: `{url}` {reason}")]
pub struct InvalidUpstream {
    pub url: String,
    pub reason: &'static str,
}

impl Upstream {
    /// Reads `http://host:port` (a trailing `/` is allowed; paths, queries and `https` are not).
    pub fn parse(url: &str) -> Result<Self, InvalidUpstream> {
        let invalid = |reason| InvalidUpstream {
            url: url.to_owned(),
            reason,
        };
        let uri: Uri = url.parse().map_err(|_| invalid("is not a URL"))?;
        if uri.scheme() != Some(&Scheme::HTTP) {
            return Err(invalid(
                "must start with http:// (the sidecar speaks plain HTTP/1.1)",
            ));
        }
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| invalid("has no host"))?;
        let path_is_root = uri
            .path_and_query()
            .is_none_or(|path| path.as_str() == "/" || path.as_str().is_empty());
        if !path_is_root {
            return Err(invalid("must not have a path or query"));
        }
        Ok(Upstream {
            scheme: Scheme::HTTP,
            authority,
        })
    }
}

/// Forwards the requests of one client connection to the upstream.
#[derive(Clone)]
pub struct ProxyService {
    upstream: Arc<Upstream>,
    client_ip: IpAddr,
    /// `X-Forwarded-For` for requests that bring none: the client's address, formatted once per connection.
    forwarded_for: HeaderValue,
    slot: UpstreamSlot,
}

/// Builds the per-connection services of one sidecar.
#[derive(Debug, Clone)]
pub struct ProxyFactory {
    upstream: Arc<Upstream>,
}

impl std::fmt::Debug for ProxyService {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ProxyService")
            .field("upstream", &self.upstream)
            .field("client_ip", &self.client_ip)
            .finish_non_exhaustive()
    }
}

impl ProxyFactory {
    pub fn new(upstream: Upstream) -> Self {
        ProxyFactory {
            upstream: Arc::new(upstream),
        }
    }

    /// The service for a new connection from `client_ip`, and the slot its task must drive
    /// (see [`super::upstream::drive_with_upstream`]).
    pub(crate) fn for_client(&self, client_ip: IpAddr) -> (ProxyService, UpstreamSlot) {
        let slot = UpstreamSlot::default();
        let forwarded_for = HeaderValue::from_str(&client_ip.to_string())
            .unwrap_or_else(|_| HeaderValue::from_static("unknown"));
        let service = ProxyService {
            upstream: self.upstream.clone(),
            client_ip,
            forwarded_for,
            slot: slot.clone(),
        };
        (service, slot)
    }
}

impl Service<Request<Incoming>> for ProxyService {
    type Response = Response<ProxyBody>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<ProxyBody>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _context: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut request: Request<Incoming>) -> Self::Future {
        prepare_upstream_request(
            &mut request,
            &self.upstream,
            self.client_ip,
            &self.forwarded_for,
        );
        let upstream = self.upstream.clone();
        let slot = self.slot.clone();
        Box::pin(async move { Ok(forward(request, &upstream, &slot).await) })
    }
}

/// Sends the request on the client connection's upstream connection; a request that could not be written on a
/// reused connection (closed by the upstream meanwhile) is sent again on a fresh one.
async fn forward(
    mut request: Request<Incoming>,
    upstream: &Upstream,
    slot: &UpstreamSlot,
) -> Response<ProxyBody> {
    let mut fresh = false;
    loop {
        let (mut sender, reused) = match slot.checkout(upstream.authority.as_str(), fresh).await {
            Ok(checked_out) => checked_out,
            Err(error) => {
                tracing::debug!(%error, "cannot connect to the upstream");
                return bad_gateway();
            }
        };
        match sender.try_send_request(request).await {
            Ok(mut response) => {
                slot.checkin(sender);
                remove_hop_by_hop(response.headers_mut());
                return response.map(Either::Left);
            }
            Err(mut failed) => match failed.take_message() {
                Some(unsent) if reused => {
                    request = unsent;
                    fresh = true;
                }
                _ => {
                    tracing::debug!(error = %failed.into_error(), "upstream request failed");
                    return bad_gateway();
                }
            },
        }
    }
}

fn bad_gateway() -> Response<ProxyBody> {
    let mut response = Response::new(Either::Right(Full::new(Bytes::from_static(
        b"bad gateway: the upstream could not be reached\n",
    ))));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Points the request at the upstream and fixes its headers (see the module docs). `forwarded_for` is the client's
/// address as a header value.
pub fn prepare_upstream_request<B>(
    request: &mut Request<B>,
    upstream: &Upstream,
    client_ip: IpAddr,
    forwarded_for: &HeaderValue,
) {
    // Origin form (`/path?query`) on the wire, as an origin server expects.
    if request.uri().scheme().is_some() || request.uri().authority().is_some() {
        let path_and_query = request
            .uri()
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| PathAndQuery::from_static("/"));
        *request.uri_mut() = Uri::from(path_and_query);
    }
    *request.version_mut() = Version::HTTP_11;
    let headers = request.headers_mut();
    remove_hop_by_hop(headers);
    headers.remove(header::EXPECT);
    if !headers.contains_key(header::HOST) {
        if let Ok(host) = HeaderValue::from_str(upstream.authority.as_str()) {
            headers.insert(header::HOST, host);
        }
    }
    append_forwarded_for(headers, client_ip, forwarded_for);
}

/// The hop-by-hop headers by definition (RFC 9110 §7.6.1, plus the legacy `Keep-Alive` and `Proxy-Connection`),
/// `Connection` first.
static HOP_BY_HOP: [&HeaderName; 9] = [
    &header::CONNECTION,
    &header::TE,
    &header::TRAILER,
    &header::TRANSFER_ENCODING,
    &header::UPGRADE,
    &header::PROXY_AUTHENTICATE,
    &header::PROXY_AUTHORIZATION,
    &KEEP_ALIVE,
    &PROXY_CONNECTION,
];

/// Removes the hop-by-hop headers, including those named in `Connection`. One pass over the names finds which are
/// present; the map is only touched for those (usually none in a request, `Connection: keep-alive` in a response).
pub fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let mut present = 0u16;
    for name in headers.keys() {
        if let Some(index) = HOP_BY_HOP.iter().position(|hop| *hop == name) {
            present |= 1 << index;
        }
    }
    if present == 0 {
        return;
    }
    if present & 1 != 0 {
        remove_connection_and_named(headers);
    }
    for (index, name) in HOP_BY_HOP.iter().enumerate().skip(1) {
        if present & (1 << index) != 0 {
            headers.remove(*name);
        }
    }
}

/// Removes `Connection` and every header its tokens name (`close` and `keep-alive` name none worth a lookup).
fn remove_connection_and_named(headers: &mut HeaderMap) {
    // Usually one `Connection` line: take it without allocating; further lines (rare) are copied first.
    let further: Vec<HeaderValue> = headers
        .get_all(header::CONNECTION)
        .iter()
        .skip(1)
        .cloned()
        .collect();
    let first = headers.remove(header::CONNECTION);
    for value in first.iter().chain(&further) {
        let Ok(text) = value.to_str() else {
            continue;
        };
        for token in text.split(',').map(str::trim) {
            let ordinary = token.is_empty()
                || token.eq_ignore_ascii_case("close")
                || token.eq_ignore_ascii_case("keep-alive");
            if !ordinary {
                if let Ok(name) = HeaderName::from_bytes(token.as_bytes()) {
                    headers.remove(name);
                }
            }
        }
    }
}

fn append_forwarded_for(headers: &mut HeaderMap, client_ip: IpAddr, forwarded_for: &HeaderValue) {
    if !headers.contains_key(&X_FORWARDED_FOR) {
        headers.insert(X_FORWARDED_FOR.clone(), forwarded_for.clone());
        return;
    }
    // Several X-Forwarded-For lines are folded into one list, then the client is appended.
    let existing: Vec<&str> = headers
        .get_all(&X_FORWARDED_FOR)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .map(str::trim)
        .filter(|value| !value.is_empty())
        .collect();
    let value = if existing.is_empty() {
        client_ip.to_string()
    } else {
        format!("{}, {client_ip}", existing.join(", "))
    };
    match HeaderValue::from_str(&value) {
        Ok(value) => {
            headers.insert(X_FORWARDED_FOR.clone(), value);
        }
        Err(_) => {
            headers.insert(X_FORWARDED_FOR.clone(), forwarded_for.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7));

    fn upstream() -> Upstream {
        Upstream::parse("http://127.0.0.1:8080").unwrap()
    }

    #[test]
    fn upstream_urls_are_checked() {
        assert_eq!(upstream().authority.as_str(), "127.0.0.1:8080");
        assert!(Upstream::parse("http://localhost:9/").is_ok());
        assert!(Upstream::parse("https://localhost:9").is_err());
        assert!(Upstream::parse("http://localhost:9/base").is_err());
        assert!(Upstream::parse("localhost:9").is_err());
    }

    #[test]
    fn requests_are_pointed_at_the_upstream_with_clean_headers() {
        let mut request = Request::builder()
            .uri("/charge?amount=5")
            .header("host", "payment.example")
            .header("connection", "keep-alive, x-secret-hop")
            .header("x-secret-hop", "1")
            .header("keep-alive", "timeout=5")
            .header("te", "trailers")
            .header("upgrade", "websocket")
            .header("expect", "100-continue")
            .header("x-forwarded-for", "192.0.2.1")
            .header("x-request-id", "abc")
            .body(())
            .unwrap();
        prepare_upstream_request(
            &mut request,
            &upstream(),
            CLIENT,
            &HeaderValue::from_static("10.0.0.7"),
        );
        assert_eq!(request.uri().to_string(), "/charge?amount=5");
        let headers = request.headers();
        assert_eq!(headers["host"], "payment.example");
        assert_eq!(headers["x-forwarded-for"], "192.0.2.1, 10.0.0.7");
        assert_eq!(headers["x-request-id"], "abc");
        for gone in [
            "connection",
            "x-secret-hop",
            "keep-alive",
            "te",
            "upgrade",
            "expect",
        ] {
            assert!(!headers.contains_key(gone), "{gone} should be removed");
        }
    }

    #[test]
    fn forwarded_for_is_created_when_absent() {
        let mut request = Request::builder().uri("/").body(()).unwrap();
        prepare_upstream_request(
            &mut request,
            &upstream(),
            CLIENT,
            &HeaderValue::from_static("10.0.0.7"),
        );
        assert_eq!(request.headers()["x-forwarded-for"], "10.0.0.7");
        assert_eq!(request.headers()["host"], "127.0.0.1:8080");
        assert_eq!(request.uri().to_string(), "/");
    }

    #[test]
    fn response_hop_by_hop_headers_are_removed() {
        let mut headers = HeaderMap::new();
        headers.insert("transfer-encoding", HeaderValue::from_static("chunked"));
        headers.insert("connection", HeaderValue::from_static("close"));
        headers.insert("content-type", HeaderValue::from_static("text/plain"));
        remove_hop_by_hop(&mut headers);
        assert_eq!(headers.len(), 1);
        assert_eq!(headers["content-type"], "text/plain");
    }
}
