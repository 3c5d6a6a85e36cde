//! Game-day actions on the testbed: a fault on the agent, a breaker mode on the services, a halt.

use bytes::Bytes;
use http::Method;

use controller::runner::AdminError;
use controller::target::ServiceId;

use super::{AGENT_SERVICE, EmbeddedOperations, failed, now};
use crate::hub::{FaultChange, FaultChangeEvent, LiveEvent};
use crate::operations::{FaultRequest, OperationError};

impl EmbeddedOperations {
    /// Undoes every container fault in force (first: a paused Payment would not answer the agent's halt),
    /// clears every fault on the agent and says so live, then puts every service's breakers back to their
    /// startup config (a run's or a game day's pushed config and mode end with the halt too).
    pub(super) async fn agent_halt(&self) -> Result<(), OperationError> {
        self.forget_container_faults();
        let containers_undone = match &self.inner.containers {
            Some(containers) => containers.leases.undo_all(now()).await.map(|_| ()),
            None => Ok(()),
        };
        self.inner
            .client
            .call(
                Method::POST,
                &format!("{}/_agent/halt", self.inner.testbed.agent),
                None,
                Bytes::new(),
            )
            .await
            .map_err(failed)?;
        self.inner.hub.publish(LiveEvent::Fault(FaultChange {
            at_ms: now() as u64,
            event: FaultChangeEvent::Halted,
            fault_id: String::new(),
            target: AGENT_SERVICE.into(),
            kind: String::new(),
            rate: 0.0,
            ..FaultChange::default()
        }));
        let mut first_error = containers_undone.err().map(failed);
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
            .map_err(agent_failed)
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
            .map_err(agent_failed)
    }

    /// Every breaker of `service` (or of every service) switches to `mode`, keeping the rest of its config.
    pub(super) async fn switch_breaker_mode(
        &self,
        service: Option<ServiceId>,
        mode: breaker::Mode,
    ) -> Result<(), OperationError> {
        let targets: Vec<String> =
            match &service {
                Some(name) => vec![self.service_url(name.as_str()).ok_or_else(|| {
                    OperationError::Invalid(format!("service: no service `{name}`"))
                })?],
                None => self
                    .inner
                    .testbed
                    .services
                    .iter()
                    .map(|(_, url)| url.clone())
                    .collect(),
            };
        for url in targets {
            self.inner
                .client
                .set_breaker_mode(&url, mode)
                .await
                .map_err(failed)?;
        }
        Ok(())
    }
}

/// What the agent refused about the request (a bad id, a lease over its cap) is the request's fault: a 400
/// naming the field, without the agent's internal URL. Anything else is a failure behind the dashboard.
fn agent_failed(error: AdminError) -> OperationError {
    match error.refused_input() {
        Some(message) => OperationError::Invalid(message),
        None => failed(error),
    }
}
