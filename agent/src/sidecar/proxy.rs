//! [`ProxyService`]: forwards one request to the upstream over a pooled HTTP/1.1 client and streams the answer back.
//!
//! Headers:
//!
//! - Hop-by-hop headers are removed in both directions: `Connection` and every header it names, `Keep-Alive`,
//!   `Proxy-Connection`, `Proxy-Authenticate`, `Proxy-Authorization`, `TE`, `Trailer`, `Transfer-Encoding`,
//!   `Upgrade`. hyper frames each side again (`Content-Length` is kept, otherwise chunked).
//! - `Expect` is removed from the forwarded request: the sidecar's own server answers `100 Continue` when the body is
//!   read, and the upstream gets the body without waiting.
//! - `Host` is passed through as the client sent it (the upstream sees the name the client asked for, as with a
//!   transparent sidecar); when the client sent none (HTTP/1.0) the upstream authority is used.
//! - `X-Forwarded-For` gets the client's IP appended (`a, b, client`), or is created.
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
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use tower_service::Service;

/// Response body of the proxy: the upstream's body, streamed, or a short body the proxy wrote itself.
pub type ProxyBody = Either<Incoming, Full<Bytes>>;

/// The pooled client the proxy forwards with.
pub type UpstreamClient = Client<HttpConnector, Incoming>;

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

struct ProxyShared {
    client: UpstreamClient,
    upstream: Upstream,
}

/// Forwards requests of one client connection to the upstream.
#[derive(Clone)]
pub struct ProxyService {
    shared: Arc<ProxyShared>,
    client_ip: IpAddr,
}

/// Builds the per-connection services of one sidecar (shares one connection pool).
#[derive(Clone)]
pub struct ProxyFactory {
    shared: Arc<ProxyShared>,
}

impl std::fmt::Debug for ProxyFactory {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ProxyFactory")
            .field("upstream", &self.shared.upstream)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for ProxyService {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ProxyService")
            .field("upstream", &self.shared.upstream)
            .field("client_ip", &self.client_ip)
            .finish_non_exhaustive()
    }
}

impl ProxyFactory {
    pub fn new(client: UpstreamClient, upstream: Upstream) -> Self {
        ProxyFactory {
            shared: Arc::new(ProxyShared { client, upstream }),
        }
    }

    /// The service for a connection from `client_ip`.
    pub fn for_client(&self, client_ip: IpAddr) -> ProxyService {
        ProxyService {
            shared: self.shared.clone(),
            client_ip,
        }
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
        prepare_upstream_request(&mut request, &self.shared.upstream, self.client_ip);
        let pending = self.shared.client.request(request);
        Box::pin(async move {
            match pending.await {
                Ok(mut response) => {
                    remove_hop_by_hop(response.headers_mut());
                    Ok(response.map(Either::Left))
                }
                Err(error) => {
                    tracing::debug!(%error, "upstream request failed");
                    Ok(bad_gateway())
                }
            }
        })
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

/// Points the request at the upstream and fixes its headers (see the module docs).
pub fn prepare_upstream_request<B>(
    request: &mut Request<B>,
    upstream: &Upstream,
    client_ip: IpAddr,
) {
    let path_and_query = request
        .uri()
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"));
    let mut parts = http::uri::Parts::default();
    parts.scheme = Some(upstream.scheme.clone());
    parts.authority = Some(upstream.authority.clone());
    parts.path_and_query = Some(path_and_query);
    if let Ok(uri) = Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
    *request.version_mut() = Version::HTTP_11;
    let headers = request.headers_mut();
    remove_hop_by_hop(headers);
    headers.remove(header::EXPECT);
    append_forwarded_for(headers, client_ip);
}

/// Removes the hop-by-hop headers, including those named in `Connection`.
pub fn remove_hop_by_hop(headers: &mut HeaderMap) {
    if headers.contains_key(header::CONNECTION) {
        let mut named: Vec<HeaderName> = Vec::new();
        for value in headers.get_all(header::CONNECTION) {
            collect_connection_tokens(value, &mut named);
        }
        headers.remove(header::CONNECTION);
        for name in named {
            headers.remove(name);
        }
    }
    for name in [
        &KEEP_ALIVE,
        &PROXY_CONNECTION,
        &header::PROXY_AUTHENTICATE,
        &header::PROXY_AUTHORIZATION,
        &header::TE,
        &header::TRAILER,
        &header::TRANSFER_ENCODING,
        &header::UPGRADE,
    ] {
        if headers.contains_key(name) {
            headers.remove(name);
        }
    }
}

fn collect_connection_tokens(value: &HeaderValue, named: &mut Vec<HeaderName>) {
    let Ok(text) = value.to_str() else {
        return;
    };
    named.extend(
        text.split(',')
            .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok()),
    );
}

fn append_forwarded_for(headers: &mut HeaderMap, client_ip: IpAddr) {
    let value = match headers
        .get(&X_FORWARDED_FOR)
        .and_then(|value| value.to_str().ok())
    {
        Some(existing) if !existing.trim().is_empty() => format!("{existing}, {client_ip}"),
        _ => client_ip.to_string(),
    };
    // Several X-Forwarded-For lines are folded into one list.
    headers.remove(&X_FORWARDED_FOR);
    if let Ok(value) = HeaderValue::from_str(&value) {
        headers.insert(X_FORWARDED_FOR.clone(), value);
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
        prepare_upstream_request(&mut request, &upstream(), CLIENT);
        assert_eq!(
            request.uri().to_string(),
            "http://127.0.0.1:8080/charge?amount=5"
        );
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
        prepare_upstream_request(&mut request, &upstream(), CLIENT);
        assert_eq!(request.headers()["x-forwarded-for"], "10.0.0.7");
        assert_eq!(request.uri().to_string(), "http://127.0.0.1:8080/");
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
