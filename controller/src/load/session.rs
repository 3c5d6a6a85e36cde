//! One virtual user's HTTP session: its own keep-alive HTTP/1.1 connection and its own cookies.
//!
//! Built on `hyper::client::conn::http1` rather than a pooled client: a virtual user is one browser
//! tab, so it owns exactly one connection (reconnecting when the server closes it or a request
//! fails), and the request path does no pool look-up, no header map cloning and no URL parsing.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::AbortHandle;

pub use boutique::cookies::CookieJar;

use super::outcome::{REJECTED_HEADER, RequestOutcome};

/// Redirects followed per request before the response is taken as final.
pub const MAX_REDIRECTS: usize = 5;

/// A request body, already encoded, and what it is (its `Content-Type`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// `application/x-www-form-urlencoded`.
    Form(Bytes),
    /// `application/json`.
    Json(Bytes),
}

impl Body {
    fn content_type(&self) -> HeaderValue {
        HeaderValue::from_static(match self {
            Body::Form(_) => "application/x-www-form-urlencoded",
            Body::Json(_) => "application/json",
        })
    }

    /// The encoded body.
    pub fn bytes(&self) -> &Bytes {
        match self {
            Body::Form(bytes) | Body::Json(bytes) => bytes,
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Body::Form(bytes) | Body::Json(bytes) => bytes,
        }
    }
}

/// Headers a request carries besides those the session sets (`Host`, `Cookie`, the body's `Content-Type`,
/// which one of these replaces).
pub type Headers = [(HeaderName, HeaderValue)];

/// One request as a session sends it: what to ask, with the headers besides the session's own and the statuses
/// that count as success (`None`: any below 400).
#[derive(Debug)]
pub struct OutgoingRequest<'a> {
    pub method: Method,
    pub uri: Uri,
    pub body: Option<Body>,
    pub headers: &'a Headers,
    pub expect: Option<&'a [u16]>,
}

/// The target a session talks to.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    host: HeaderValue,
}

impl Target {
    pub fn new(addr: SocketAddr) -> Self {
        let host =
            HeaderValue::from_str(&addr.to_string()).expect("a socket address is a valid header");
        Target { addr, host }
    }
}

/// A virtual user's connection and cookies.
pub struct ClientSession {
    target: Target,
    sender: Option<SendRequest<Full<Bytes>>>,
    /// The task driving the current (or last) connection; aborted when the next one is made or the
    /// session ends, so a connection left waiting on a hung answer does not outlive its user.
    connection: Option<AbortHandle>,
    pub cookies: CookieJar,
    timeout: Duration,
}

impl Drop for ClientSession {
    fn drop(&mut self) {
        if let Some(connection) = self.connection.take() {
            connection.abort();
        }
    }
}

impl ClientSession {
    pub fn new(target: Target, timeout: Duration) -> Self {
        ClientSession {
            target,
            sender: None,
            connection: None,
            cookies: CookieJar::default(),
            timeout,
        }
    }

    /// Sends one request (following redirects with GET, like a browser), reads the whole body and
    /// classifies the result. Errors are outcomes, except the driver's own (see [`DriverError`]).
    pub async fn request(
        &mut self,
        method: Method,
        uri: Uri,
        body: Option<Body>,
    ) -> Result<RequestOutcome, DriverError> {
        self.request_expecting(OutgoingRequest {
            method,
            uri,
            body,
            headers: &[],
            expect: None,
        })
        .await
    }

    /// Like [`ClientSession::request`], with more headers (kept on redirects) and the statuses that count as success.
    pub async fn request_expecting(
        &mut self,
        request: OutgoingRequest<'_>,
    ) -> Result<RequestOutcome, DriverError> {
        let timeout = self.timeout;
        let exchange = self.exchange(request);
        match tokio::time::timeout(timeout, exchange).await {
            Ok(Ok(outcome)) => Ok(outcome),
            Ok(Err(SessionError::Connect(error))) if is_drivers_own(&error) => {
                self.sender = None;
                Err(DriverError(format!("connect: {error}")))
            }
            Ok(Err(_)) => {
                self.sender = None;
                Ok(RequestOutcome::ConnectionError)
            }
            Err(_elapsed) => {
                // The connection has a response pending: it cannot be reused.
                self.sender = None;
                Ok(RequestOutcome::Timeout)
            }
        }
    }

    /// Forgets the connection (the next request connects anew); the cookies stay.
    pub fn drop_connection(&mut self) {
        self.sender = None;
        if let Some(connection) = self.connection.take() {
            connection.abort();
        }
    }

    async fn exchange(
        &mut self,
        request: OutgoingRequest<'_>,
    ) -> Result<RequestOutcome, SessionError> {
        let OutgoingRequest {
            mut method,
            mut uri,
            body: mut form,
            headers,
            expect,
        } = request;
        let mut rejected = false;
        for _ in 0..=MAX_REDIRECTS {
            let response = self.send(method.clone(), uri, form.take(), headers).await?;
            let status = response.status();
            rejected |= response.headers().contains_key(REJECTED_HEADER);
            self.cookies.store(response.headers());
            let location = redirect_location(status, response.headers());
            let keep_alive = !closes_connection(response.headers());
            let mut body = response.into_body();
            while let Some(frame) = body.frame().await {
                frame.map_err(SessionError::Http)?;
            }
            if !keep_alive {
                self.sender = None;
            }
            match location {
                Some(next) if !rejected => {
                    if status != StatusCode::TEMPORARY_REDIRECT
                        && status != StatusCode::PERMANENT_REDIRECT
                    {
                        method = Method::GET;
                        form = None;
                    }
                    uri = next;
                }
                _ => {
                    return Ok(RequestOutcome::of_response_expecting(
                        status.as_u16(),
                        rejected,
                        expect,
                    ));
                }
            }
        }
        // Too many redirects: the last response was a redirect, which is not an error status.
        Ok(RequestOutcome::of_response_expecting(
            StatusCode::FOUND.as_u16(),
            rejected,
            expect,
        ))
    }

    async fn send(
        &mut self,
        method: Method,
        uri: Uri,
        body: Option<Body>,
        extra: &Headers,
    ) -> Result<hyper::Response<hyper::body::Incoming>, SessionError> {
        let mut sender = match self.sender.take() {
            Some(sender) if !sender.is_closed() => sender,
            _ => self.connect().await?,
        };
        sender.ready().await.map_err(SessionError::Http)?;
        let mut request = Request::builder().method(method).uri(uri);
        let headers = request.headers_mut().expect("builder has no error yet");
        headers.insert(header::HOST, self.target.host.clone());
        if let Some(cookie) = self.cookies.header() {
            headers.insert(header::COOKIE, cookie.clone());
        }
        let body = match body {
            Some(body) => {
                headers.insert(header::CONTENT_TYPE, body.content_type());
                Full::new(body.into_bytes())
            }
            None => Full::new(Bytes::new()),
        };
        for (name, value) in extra {
            headers.insert(name.clone(), value.clone());
        }
        let request = request.body(body).map_err(SessionError::Request)?;
        let response = sender
            .send_request(request)
            .await
            .map_err(SessionError::Http)?;
        self.sender = Some(sender);
        Ok(response)
    }

    async fn connect(&mut self) -> Result<SendRequest<Full<Bytes>>, SessionError> {
        let stream = TcpStream::connect(self.target.addr)
            .await
            .map_err(SessionError::Connect)?;
        stream.set_nodelay(true).map_err(SessionError::Connect)?;
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(SessionError::Http)?;
        let task = tokio::spawn(async move {
            // Ends when the sender is dropped or the server closes; errors surface on the sender.
            let _ = connection.await;
        });
        if let Some(previous) = self.connection.replace(task.abort_handle()) {
            previous.abort();
        }
        Ok(sender)
    }
}

fn redirect_location(status: StatusCode, headers: &http::HeaderMap) -> Option<Uri> {
    if !status.is_redirection() {
        return None;
    }
    let location = headers.get(header::LOCATION)?.to_str().ok()?;
    // Same-origin only: an absolute URL keeps just its path.
    let path = match location.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |slash| &rest[slash..]),
        None => location,
    };
    if !path.starts_with('/') {
        return None;
    }
    Uri::try_from(path).ok()
}

fn closes_connection(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONNECTION)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case("close"))
}

/// A request the load generator itself could not make: the failure is the driver's (this machine's
/// descriptors, ports or memory), says nothing about the system under test, and is counted apart from
/// every outcome.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DriverError(pub String);

/// Whether a connect error is the driver's own: no descriptor (`EMFILE`, `ENFILE`), no local port
/// (`EADDRNOTAVAIL`), no buffer or memory (`ENOBUFS`, `ENOMEM`). A refused or reset connection is the
/// target's answer, not one of these.
pub fn is_drivers_own(error: &std::io::Error) -> bool {
    use rustix::io::Errno;
    Errno::from_io_error(error).is_some_and(|errno| {
        [
            Errno::MFILE,
            Errno::NFILE,
            Errno::ADDRNOTAVAIL,
            Errno::NOBUFS,
            Errno::NOMEM,
        ]
        .contains(&errno)
    })
}

#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("http: {0}")]
    Http(hyper::Error),
    #[error("request: {0}")]
    Request(http::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_resource_errors_are_the_drivers_own() {
        use std::io::Error;
        let errno = |e: rustix::io::Errno| Error::from_raw_os_error(e.raw_os_error());
        for own in [
            rustix::io::Errno::MFILE,
            rustix::io::Errno::NFILE,
            rustix::io::Errno::ADDRNOTAVAIL,
            rustix::io::Errno::NOBUFS,
            rustix::io::Errno::NOMEM,
        ] {
            assert!(is_drivers_own(&errno(own)), "{own:?}");
        }
        for system in [
            rustix::io::Errno::CONNREFUSED,
            rustix::io::Errno::CONNRESET,
            rustix::io::Errno::TIMEDOUT,
            rustix::io::Errno::HOSTUNREACH,
        ] {
            assert!(!is_drivers_own(&errno(system)), "{system:?}");
        }
        assert!(!is_drivers_own(&Error::other("no errno")));
    }

    /// A refused connect is the target's answer: an outcome, not a failure of the driver.
    #[tokio::test]
    async fn a_refused_connect_is_an_outcome() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let mut session = ClientSession::new(Target::new(addr), std::time::Duration::from_secs(2));
        let outcome = session
            .request(Method::GET, Uri::from_static("/"), None)
            .await;
        assert_eq!(outcome, Ok(RequestOutcome::ConnectionError));
    }

    #[test]
    fn redirects_keep_only_same_origin_paths() {
        let mut headers = http::HeaderMap::new();
        headers.insert(header::LOCATION, HeaderValue::from_static("/cart"));
        assert_eq!(
            redirect_location(StatusCode::FOUND, &headers).unwrap(),
            "/cart"
        );
        headers.insert(
            header::LOCATION,
            HeaderValue::from_static("http://127.0.0.1:9/product/X"),
        );
        assert_eq!(
            redirect_location(StatusCode::SEE_OTHER, &headers).unwrap(),
            "/product/X"
        );
        assert_eq!(redirect_location(StatusCode::OK, &headers), None);
    }
}
