//! The Docker Engine through bollard on its unix socket: the compose stack's containers found by their labels
//! ([`discovery`]), container-level faults ([`fault`]) held under leases recorded in the store ([`lease`]), and
//! per-container CPU, memory and network sampled from the engine's stats ([`stats`]). A swarm stack's task
//! containers are found the same way by swarm's labels ([`swarm`]); [`Deployment`] says which of the two.
//!
//! Only this module talks to the engine; nothing else of Tolerant needs one. An engine that does not answer is
//! [`DockerError::Unreachable`], naming the socket.
//!
//! API version: bollard 0.18 speaks up to API 1.47 by default, and engines refuse a client newer than they
//! are. The client therefore starts from API 1.41 (Docker Engine 20.10, the oldest engine this supports) and
//! negotiates down if the engine is older still; every call used here exists in 1.41.

pub mod discovery;
pub mod fault;
pub mod lease;
pub mod netem;
pub mod stats;
pub mod swarm;
#[cfg(test)]
mod tests;
pub mod transport;
#[cfg(test)]
mod transport_tests;

use bollard::{ClientVersion, Docker};

use crate::store::StoreError;

pub use crate::actions::ContainerAction;
pub use discovery::StackContainer;
pub use lease::ContainerLeases;
pub use stats::{ContainerReading, ContainerSampler, StatsSampler, Watched};

/// Where the engine listens unless `DOCKER_HOST` says otherwise.
pub const DEFAULT_SOCKET: &str = "/var/run/docker.sock";
/// The compose project a container belongs to.
pub const PROJECT_LABEL: &str = "com.docker.compose.project";
/// The compose service a container runs.
pub const SERVICE_LABEL: &str = "com.docker.compose.service";
/// Which replica of its service a container is (1, 2, …).
pub const NUMBER_LABEL: &str = "com.docker.compose.container-number";

/// Which containers a run or the dashboard works on: a compose project's, or a swarm stack's tasks on this
/// node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deployment {
    Compose(String),
    Swarm(String),
}

impl Deployment {
    /// The project's or the stack's name.
    pub fn name(&self) -> &str {
        match self {
            Deployment::Compose(name) | Deployment::Swarm(name) => name,
        }
    }
}

impl std::fmt::Display for Deployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Deployment::Compose(project) => write!(f, "compose project `{project}`"),
            Deployment::Swarm(stack) => write!(f, "swarm stack `{stack}`"),
        }
    }
}

/// API version the client starts from (Docker Engine 20.10).
const FLOOR_API: ClientVersion = ClientVersion {
    major_version: 1,
    minor_version: 41,
};

#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error(
        "Docker Engine at {socket}: not reachable ({message}); start the engine, or name its socket with \
         DOCKER_HOST=unix:///path/to/docker.sock"
    )]
    Unreachable { socket: String, message: String },
    #[error("Docker Engine at {socket}: {operation} {container}: {}", with_causes(.source))]
    Engine {
        socket: String,
        operation: &'static str,
        container: String,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("{deployment}: no container of service `{service}`")]
    NoSuchService {
        deployment: Deployment,
        service: String,
    },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// The container (its capabilities, its image, the host's kernel) cannot take this fault.
    #[error("container {container}: {message}")]
    Unsupported { container: String, message: String },
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

/// An error and its causes, `a: b: c` (bollard's hyper errors say what failed only in their causes: an answer
/// over the cap, too slow).
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(&format!(": {next}"));
        cause = next.source();
    }
    text
}

/// The socket named by `DOCKER_HOST` (`unix://PATH`), else [`DEFAULT_SOCKET`].
pub fn socket_from_env() -> String {
    std::env::var("DOCKER_HOST")
        .ok()
        .and_then(|host| host.strip_prefix("unix://").map(str::to_owned))
        .filter(|path| !path.is_empty())
        .unwrap_or_else(|| DEFAULT_SOCKET.to_owned())
}

/// A connection to one engine. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Engine {
    docker: Docker,
    socket: String,
}

impl Engine {
    /// Connects to the engine on `socket` (a path), checks that it answers and agrees on the API version.
    /// Every answer is capped at [`transport::MAX_ANSWER_BYTES`] and [`transport::ANSWER_TIME`].
    pub async fn connect(socket: &str) -> Result<Engine, DockerError> {
        Engine::connect_capped(socket, transport::MAX_ANSWER_BYTES, transport::ANSWER_TIME).await
    }

    /// [`Engine::connect`] with every answer capped at `cap` bytes and `time`.
    pub(crate) async fn connect_capped(
        socket: &str,
        cap: u64,
        time: std::time::Duration,
    ) -> Result<Engine, DockerError> {
        let unreachable = |error: bollard::errors::Error| DockerError::Unreachable {
            socket: socket.to_owned(),
            message: with_causes(&error),
        };
        let docker = transport::connect(socket, cap, time, &FLOOR_API).map_err(unreachable)?;
        let docker = docker.negotiate_version().await.map_err(unreachable)?;
        docker.ping().await.map_err(unreachable)?;
        Ok(Engine {
            docker,
            socket: socket.to_owned(),
        })
    }

    /// The socket this engine was reached on.
    pub fn socket(&self) -> &str {
        &self.socket
    }

    /// An engine error of `operation` on `container`, naming the socket.
    fn failed(
        &self,
        operation: &'static str,
        container: &str,
        source: bollard::errors::Error,
    ) -> DockerError {
        DockerError::Engine {
            socket: self.socket.clone(),
            operation,
            container: container.to_owned(),
            source,
        }
    }
}
