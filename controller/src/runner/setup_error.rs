//! Why a run could not be set up: a stream that did not open, a foreign source without its baseline scrape, a
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
    /// A `[[sources]]` Prometheus source did not answer its baseline scrape; names the source's field.
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
                SetupError::NoBaseline(ScrapeError::NoBaseline {
                    index: 2,
                    source: refused(),
                }),
                "sources[2].url: no baseline scrape (PUT http://agent: connection refused)".into(),
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
