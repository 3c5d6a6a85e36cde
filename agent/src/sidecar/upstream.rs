//! The upstream of a sidecar: its address, and its keep-alive connections.
//!
//! A client connection keeps the upstream connection it got for its whole life (HTTP/1.1 carries one request at a
//! time per connection anyway), so a keep-alive client costs no pool operation per request. When the client
//! connection ends, an upstream connection that is idle and reusable is parked in its thread's pool (at most
//! [`MAX_IDLE_PER_THREAD`], dropped after [`IDLE_TIMEOUT`]) for the next client connection on that thread. A parked
//! connection the upstream closed meanwhile is noticed at checkout and dropped; a request whose reused connection
//! turns out dead before any answer byte is sent again on a fresh one (see [`super::connection`]).

use std::cell::RefCell;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use http::Uri;
use http::uri::Scheme;
use tokio::net::TcpStream;

/// Most idle upstream connections one thread keeps.
pub const MAX_IDLE_PER_THREAD: usize = 256;
/// How long an idle upstream connection is kept.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Where requests go: `http://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// `host:port` (the port defaults to 80).
    pub authority: String,
    /// Tells this upstream's parked connections apart from other sidecars' in the same process.
    pool_key: u64,
}

/// An upstream URL the sidecar cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("upstream: `{url}` {reason}")]
pub struct InvalidUpstream {
    pub url: String,
    pub reason: &'static str,
}

static NEXT_POOL_KEY: AtomicU64 = AtomicU64::new(0);

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
        let authority = uri.authority().ok_or_else(|| invalid("has no host"))?;
        let path_is_root = uri
            .path_and_query()
            .is_none_or(|path| path.as_str() == "/" || path.as_str().is_empty());
        if !path_is_root {
            return Err(invalid("must not have a path or query"));
        }
        let authority = match authority.port_u16() {
            Some(_) => authority.as_str().to_owned(),
            None => format!("{}:80", authority.host()),
        };
        Ok(Upstream {
            authority,
            pool_key: NEXT_POOL_KEY.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// A connection for the next request: a parked one unless `fresh`, otherwise a new one.
    pub(crate) async fn checkout(&self, fresh: bool) -> io::Result<UpstreamConnection> {
        if !fresh {
            if let Some(parked) = self.take_parked() {
                return Ok(parked);
            }
        }
        let stream = TcpStream::connect(self.authority.as_str()).await?;
        stream.set_nodelay(true)?;
        Ok(UpstreamConnection {
            stream,
            input: BytesMut::new(),
            reused: false,
        })
    }

    #[allow(clippy::disallowed_methods)] // the idle time of a parked connection, measured at the edge
    fn take_parked(&self) -> Option<UpstreamConnection> {
        let now = Instant::now();
        IDLE.with_borrow_mut(|idle| {
            while let Some(index) = idle.iter().rposition(|parked| parked.key == self.pool_key) {
                let parked = idle.swap_remove(index);
                if now.duration_since(parked.since) <= IDLE_TIMEOUT && still_open(&parked.stream) {
                    return Some(UpstreamConnection {
                        stream: parked.stream,
                        input: BytesMut::new(),
                        reused: true,
                    });
                }
            }
            None
        })
    }

    /// Parks an idle connection for the next client connection on this thread.
    #[allow(clippy::disallowed_methods)] // the idle time of a parked connection, measured at the edge
    pub(crate) fn park(&self, connection: UpstreamConnection) {
        if !connection.input.is_empty() {
            // Bytes nobody asked for: the connection is out of step.
            return;
        }
        let now = Instant::now();
        IDLE.with_borrow_mut(|idle| {
            idle.retain(|parked| now.duration_since(parked.since) <= IDLE_TIMEOUT);
            if idle.len() < MAX_IDLE_PER_THREAD {
                idle.push(Parked {
                    key: self.pool_key,
                    stream: connection.stream,
                    since: now,
                });
            }
        });
    }
}

/// One keep-alive connection to the upstream, with the bytes read from it and not yet forwarded.
#[derive(Debug)]
pub(crate) struct UpstreamConnection {
    pub(crate) stream: TcpStream,
    pub(crate) input: BytesMut,
    /// Came from the pool or carried an earlier request: it may have been closed by the upstream meanwhile.
    pub(crate) reused: bool,
}

struct Parked {
    key: u64,
    stream: TcpStream,
    since: Instant,
}

thread_local! {
    static IDLE: RefCell<Vec<Parked>> = const { RefCell::new(Vec::new()) };
}

/// An idle connection has nothing to read; end of stream, an error or stray bytes mean it is no longer usable.
fn still_open(stream: &TcpStream) -> bool {
    let mut probe = [0u8; 1];
    matches!(stream.try_read(&mut probe), Err(error) if error.kind() == io::ErrorKind::WouldBlock)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_urls_are_checked() {
        assert_eq!(
            Upstream::parse("http://127.0.0.1:8080").unwrap().authority,
            "127.0.0.1:8080"
        );
        assert_eq!(
            Upstream::parse("http://localhost/").unwrap().authority,
            "localhost:80"
        );
        assert!(Upstream::parse("http://localhost:9/").is_ok());
        for bad in [
            "https://localhost:9",
            "http://localhost:9/base",
            "localhost:9",
            "http://x:9/?q",
        ] {
            assert!(Upstream::parse(bad).is_err(), "{bad}");
        }
        assert_ne!(
            Upstream::parse("http://a:1").unwrap().pool_key,
            Upstream::parse("http://a:1").unwrap().pool_key
        );
    }
}
