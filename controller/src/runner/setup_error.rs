//! Why a run could not be set up: a stream that did not open, a foreign source whose baseline cannot be followed, a
//! fault (on the agent or on containers) not applied. The text of each is what the runner's error, a run's
//! stored abort reason and the logs show. The engine's errors are boxed: they are large, and a runner's
//! error that holds one is returned everywhere.

use crate::lease::{ContainerFaultError, PodFaultError};
use crate::observe::{ScrapeError, StreamUnavailable};
use crate::testbed::AdminError;

/// A part of a run that did not start; see the module documentation.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A websocket stream (a service's transitions) did not open; names its URL.
    #[error(transparent)]
    Subscribe(StreamUnavailable),
    /// A `[[sources]]` Prometheus source's baseline scrape shows more breakers than are followed; names the source's
    /// field (one that does not answer is blind, not an error).
    #[error(transparent)]
    NoBaseline(#[from] ScrapeError),
    /// The agent did not take the run's fault.
    #[error("fault not applied: {0}")]
    FaultNotApplied(#[source] AdminError),
    /// The compose stack could not be listed, has no container of the fault's target, or the container fault
    /// did not go on one of its replicas.
    #[error(transparent)]
    Containers(#[from] ContainerFaultError),
    /// The pod fault did not go on one of the target's replicas (or the pods could not be listed).
    #[error(transparent)]
    Pods(#[from] PodFaultError),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use http::Method;
    use tokio_tungstenite::tungstenite;

    use super::*;
    use crate::docker::DockerError;

    fn refused() -> AdminError {
        AdminError::Transport {
            method: Method::PUT,
            url: "http://agent".into(),
            message: "connection refused".into(),
        }
    }

    fn no_such_service() -> DockerError {
        DockerError::NoSuchService {
            deployment: crate::docker::Deployment::Compose("shop".into()),
            service: "payment".into(),
        }
    }

    /// Each says what it said as a plain string before it was typed: stored reasons and tests compare it.
    #[test]
    fn each_reads_as_the_message_it_replaced() {
        let cases = [
            (
                SetupError::Subscribe(StreamUnavailable {
                    url: "ws://127.0.0.1:9/_breakers/stream".into(),
                    source: Arc::new(tungstenite::Error::ConnectionClosed),
                }),
                format!(
                    "ws://127.0.0.1:9/_breakers/stream: {}",
                    tungstenite::Error::ConnectionClosed
                ),
            ),
            (
                SetupError::NoBaseline(ScrapeError::TooManyBreakers {
                    index: 2,
                    seen: 1_001,
                }),
                "sources[2].url: the baseline scrape shows 1001 breakers, more than the 1000 one source may have followed".into(),
            ),
            (
                SetupError::FaultNotApplied(refused()),
                "fault not applied: PUT http://agent: connection refused".into(),
            ),
            (
                SetupError::Containers(ContainerFaultError::Stack(Box::new(no_such_service()))),
                "compose project `shop`: no container of service `payment`".into(),
            ),
            (
                SetupError::Containers(ContainerFaultError::NotApplied(Box::new(
                    no_such_service(),
                ))),
                "container fault not applied: compose project `shop`: no container of service `payment`"
                    .into(),
            ),
        ];
        for (error, text) in cases {
            assert_eq!(error.to_string(), text);
        }
    }
}
