//! Errors of starting or running the stack.

use crate::config::StackConfigError;
use crate::service_name::ServiceName;

/// Why the stack (or one service) could not start or keep running.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("invalid config: {0}")]
    Config(#[from] StackConfigError),
    #[error("{service} cannot bind {addr}: {source}")]
    Bind {
        service: ServiceName,
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
    #[error("{service} needs the URL of {dependency} (pass it as a peer)")]
    MissingPeer {
        service: ServiceName,
        dependency: ServiceName,
    },
    #[error("invalid peer URL for {service}: {url:?}: {message}")]
    PeerUrl {
        service: ServiceName,
        url: String,
        message: String,
    },
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    #[error("{service} stopped serving: {source}")]
    Serve {
        service: ServiceName,
        source: std::io::Error,
    },
}
