//! Game-day actions on the testbed: a fault on the agent, a breaker mode on the services, a halt.

use bytes::Bytes;
use controller::clock::now_ms;
use http::Method;

use controller::target::ServiceId;
use controller::testbed::{AdminError, Credential};

use super::{AGENT_SERVICE, EmbeddedOperations, failed};
use crate::hub::{FaultChange, FaultChangeEvent, LiveEvent};
use crate::operations::{AgentFaults, FaultRequest, ModeRequest, OperationError};

impl EmbeddedOperations {
    /// Undoes every container fault in force (first: a paused Payment would not answer the agent's halt),
    /// clears every fault on the agent and says so live, then puts every service's breakers back to their
    /// startup config (a run's or a game day's pushed config and mode end with the halt too).
    pub(super) async fn agent_halt(&self) -> Result<(), OperationError> {
        self.inner.modes.lock().release();
        self.forget_container_faults();
        self.forget_pod_faults();
        let containers_undone = match &self.inner.containers {
            Some(containers) => containers.leases.undo_all(now_ms()).await.map(|_| ()),
            None => Ok(()),
        };
        // Every pod fault of the namespace, whoever applied it.
        let pods_undone = match &self.inner.orchestrator.pods {
            Some(pods) => pods.cluster.sweep(None).await.map(|_| ()),
            None => Ok(()),
        };
        self.inner
            .client
            .call(
                Method::POST,
                &format!("{}/_agent/halt", self.inner.testbed.agent),
                Credential::Token,
                None,
                Bytes::new(),
            )
            .await
            .map_err(failed)?;
        self.inner.hub.publish(LiveEvent::Fault(FaultChange {
            at_ms: now_ms() as u64,
            event: FaultChangeEvent::Halted,
            fault_id: String::new(),
            target: AGENT_SERVICE.into(),
            kind: String::new(),
            rate: 0.0,
            ..FaultChange::default()
        }));
        let mut first_error = containers_undone
            .err()
            .map(failed)
            .or_else(|| pods_undone.err().map(failed));
        for (_, url) in &self.inner.testbed.services {
            if let Err(error) = self.inner.client.restore_breakers(url).await {
                first_error.get_or_insert(failed(error));
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    pub(super) async fn put_fault(&self, request: FaultRequest) -> Result<(), OperationError> {
        if request.target != AGENT_SERVICE {
            return Err(OperationError::Invalid(format!(
                "target: the embedded stack runs its agent in {AGENT_SERVICE} only, not in `{}`",
                request.target
            )));
        }
        self.inner
            .client
            .put_fault(&self.inner.testbed.agent, &request.id, &request.fault)
            .await
            .map_err(refused_or_failed)
    }

    pub(super) async fn delete_fault(
        &self,
        target: ServiceId,
        id: String,
    ) -> Result<(), OperationError> {
        if target != AGENT_SERVICE {
            return Err(OperationError::Invalid(format!(
                "target: no agent in `{target}`"
            )));
        }
        self.inner
            .client
            .delete_fault(&self.inner.testbed.agent, &id)
            .await
            .map_err(refused_or_failed)
    }

    /// The faults the agent holds now, as it lists them.
    pub(super) async fn agent_faults(&self) -> Result<AgentFaults, OperationError> {
        let faults = self
            .inner
            .client
            .get_json(&format!("{}/_agent/faults", self.inner.testbed.agent))
            .await
            .map_err(failed)?;
        Ok(AgentFaults {
            target: boutique::ServiceName::Payment.into(),
            faults,
        })
    }

    /// Every breaker of the request's service (or of every service), or the one it names, switches to its mode,
    /// keeping the rest of its config, under the game day's lease ([`super::mode_lease`]), renewed from now on.
    /// A breaker the service does not have is refused naming `breaker`.
    pub(super) async fn switch_breaker_mode(
        &self,
        request: ModeRequest,
    ) -> Result<(), OperationError> {
        let targets = mode_targets(&self.inner.testbed.services, request.service.as_ref())?;
        let switch = boutique::admin::ModeSwitch {
            mode: request.mode,
            breaker: request.breaker,
        };
        let lease = self.inner.modes.lock().lease();
        for url in targets {
            self.inner
                .client
                .set_breaker_mode(&url, &switch, Some(lease))
                .await
                .map_err(refused_or_failed)?;
            self.inner.modes.lock().hold(&self.inner.client, url);
        }
        Ok(())
    }
}

/// The base URLs a breaker-mode switch goes to: every service for none; for a service's plain name every replica
/// of it (`checkout` reaches `checkout`, `checkout#2`, …); for a replica's label (`checkout#2`) that one only. An
/// unknown name is refused naming the field.
fn mode_targets(
    services: &[(ServiceId, String)],
    service: Option<&ServiceId>,
) -> Result<Vec<String>, OperationError> {
    let chosen = |label: &ServiceId| match service {
        None => true,
        Some(name) if name.is_replica() => label == name,
        Some(name) => label.service() == name.as_str(),
    };
    let urls: Vec<String> = services
        .iter()
        .filter(|(label, _)| chosen(label))
        .map(|(_, url)| url.clone())
        .collect();
    match service {
        Some(name) if urls.is_empty() => Err(OperationError::Invalid(format!(
            "service: no service `{name}`"
        ))),
        _ => Ok(urls),
    }
}

/// What the agent or a service refused about the request (a bad id, a lease over its cap, a breaker the service
/// does not have) is the request's fault: a 400 naming the field, without the testbed's internal URL. Anything else is a failure behind the dashboard.
fn refused_or_failed(error: AdminError) -> OperationError {
    match error.refused_input() {
        Some(message) => OperationError::Invalid(message),
        None => failed(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testbed() -> Vec<(ServiceId, String)> {
        [
            "frontend",
            "checkout",
            "checkout#2",
            "checkout#3",
            "payment",
        ]
        .into_iter()
        .map(|label| (label.parse().unwrap(), format!("http://{label}")))
        .collect()
    }

    fn targets(service: Option<&str>) -> Result<Vec<String>, OperationError> {
        let service = service.map(|name| name.parse::<ServiceId>().unwrap());
        mode_targets(&testbed(), service.as_ref())
    }

    /// A scaled service's switch reaches every replica; a replica's label that one only; none, everything.
    #[test]
    fn a_mode_switch_reaches_every_replica_of_a_named_service() {
        assert_eq!(
            targets(Some("checkout")).unwrap(),
            ["http://checkout", "http://checkout#2", "http://checkout#3"]
        );
        assert_eq!(targets(Some("checkout#2")).unwrap(), ["http://checkout#2"]);
        assert_eq!(targets(Some("payment")).unwrap(), ["http://payment"]);
        assert_eq!(targets(None).unwrap().len(), 5);
    }

    #[test]
    fn an_unknown_service_or_replica_is_refused_naming_the_field() {
        for name in ["cart", "checkout#4", "payment#2"] {
            match targets(Some(name)) {
                Err(OperationError::Invalid(message)) => {
                    assert_eq!(message, format!("service: no service `{name}`"))
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
