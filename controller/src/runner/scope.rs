//! A run as a scope: everything one run starts — the subscriptions to the transition and agent streams (and the
//! foreign breaker sources), the
//! fault and its lease renewal, the sampler — is owned by one [`RunScope`], and ending the scope is the one
//! place a run's end is decided.
//!
//! [`RunScope::end`] removes the fault first (renewal and any schedule stopped, then `DELETE`), then stops the sampler and the
//! subscriptions and hands back what they collected. A scope that is dropped instead of ended (a panic
//! unwinding through the run, or its future dropped) still stops every task it owns at once — each is a
//! [`RunTask`] or a `JoinSet`, aborted on drop — and sends the fault's `DELETE` as its last act (bounded by
//! [`ADMIN_CALL_TIMEOUT`](super::ADMIN_CALL_TIMEOUT); the fault's lease ends it anyway). The load itself runs
//! inside the run's own future ([`super::drive::drive_load`]), so nothing it spawned can outlive it. The run's
//! breaker config ([`HeldBreakers`]) is restored last, on end and on drop alike.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;

use super::admin::AdminClient;
use super::agent_stream::AgentStream;
use super::breaker_hold::HeldBreakers;
use super::containers::{ContainerRun, ContainerStack, container_action};
use super::fault_schedule::ScheduledFault;
use super::pods::{PodRun, PodStack};
use super::renewal::{renewal_event, spawn_renewal};
use super::replicas::ReplicaFollower;
use super::sampler::Sampler;
use super::setup_error::SetupError;
use super::sources::SourceCollector;
use super::task::RunTask;
use super::transitions::TransitionCollector;
use super::{RunnerError, Testbed, now_ms};
use crate::energy::EnergySource;
use crate::spec::{ExperimentSpec, Offers, PlannedRun};
use crate::store::{
    CollectorSample, ContainerSampleRecord, FaultEvent, FaultEventRecord, RunId, TransitionRecord,
};

/// What a run collected besides its load, once its scope has ended.
#[derive(Debug)]
pub struct ScopeEnd {
    /// The runner's control calls and the agent's own events, by time.
    pub fault_events: Vec<FaultEventRecord>,
    pub transitions: Vec<TransitionRecord>,
    pub samples: Vec<CollectorSample>,
    pub energy_source: EnergySource,
    /// Each container's seconds, when the run was against the compose stack.
    pub container_samples: Vec<ContainerSampleRecord>,
    /// What every task of the scope that had panicked said (`sampler: …`): a run that lost one is not a
    /// measurement.
    pub panics: Vec<String>,
}

impl Default for ScopeEnd {
    /// Nothing collected (the scope's end itself panicked).
    fn default() -> Self {
        ScopeEnd {
            fault_events: Vec::new(),
            transitions: Vec::new(),
            samples: Vec::new(),
            energy_source: EnergySource::Modelled,
            container_samples: Vec::new(),
            panics: Vec::new(),
        }
    }
}

/// A fault on the agent, renewed while the scope lives.
struct AppliedFault {
    id: String,
    renewal: RunTask<()>,
}

/// What one run started; see the module documentation.
pub struct RunScope {
    admin: AdminClient,
    agent_url: String,
    fault_events: Arc<Mutex<Vec<FaultEventRecord>>>,
    fault: Option<AppliedFault>,
    /// A fault on a schedule inside the run (`fault.schedule`), instead of `fault`.
    scheduled: Option<ScheduledFault>,
    transitions: Option<TransitionCollector>,
    /// Replicas an orchestrator starts or replaces during the run, followed and recorded.
    replicas: Option<ReplicaFollower>,
    /// Breakers Tolerant did not write (`[[sources]]`, pushes).
    foreign: Option<SourceCollector>,
    agent_stream: Option<Result<AgentStream, SetupError>>,
    sampler: Option<Sampler>,
    /// The compose stack's sampling and container fault, when the run is against it.
    containers: Option<ContainerRun>,
    /// The pod fault, when the run is against Kubernetes.
    pods: Option<PodRun>,
    /// The run's leased breaker config: restored last when the scope ends, or on drop.
    breakers: Option<HeldBreakers>,
}

impl RunScope {
    /// Subscribes to the transition stream of every service that offers one (required there) and the agent's
    /// event stream (optional: an agent without one is no error). Nothing is applied yet.
    pub async fn open(
        admin: &AdminClient,
        testbed: &Testbed,
        offers_of: &(dyn Fn(&str) -> Offers + Sync),
    ) -> Result<Self, RunnerError> {
        let streams: Vec<_> = testbed
            .services
            .iter()
            .filter(|(name, _)| offers_of(name.as_str()).breaker_stream)
            .cloned()
            .collect();
        let transitions = TransitionCollector::connect(&streams).await?;
        let agent_stream = AgentStream::connect(&testbed.agent).await;
        Ok(RunScope {
            admin: admin.clone(),
            agent_url: testbed.agent.clone(),
            fault_events: Arc::new(Mutex::new(Vec::new())),
            fault: None,
            scheduled: None,
            transitions: Some(transitions),
            replicas: None,
            foreign: None,
            agent_stream: Some(agent_stream),
            sampler: None,
            containers: None,
            pods: None,
            breakers: None,
        })
    }

    /// Holds the run's leased breaker config until the scope ends (restored after everything else stopped, so
    /// the restore's transitions are not the run's).
    pub fn hold_breakers(&mut self, breakers: HeldBreakers) {
        self.breakers = Some(breakers);
    }

    /// Follows the replicas `changes` announces until the scope ends: each change recorded, each new replica's
    /// transitions collected with the scope's own.
    pub fn follow_replicas(
        &mut self,
        changes: tokio::sync::broadcast::Receiver<crate::roster::ReplicaChange>,
    ) {
        if let Some(transitions) = &self.transitions {
            self.replicas = Some(ReplicaFollower::start(
                changes,
                transitions.events(),
                Arc::clone(&self.fault_events),
            ));
        }
    }

    /// Collects the foreign breakers' transitions with the scope's own until it ends.
    pub fn follow_foreign(&mut self, collector: SourceCollector) {
        self.foreign = Some(collector);
    }

    /// Starts sampling the compose stack's containers and, for a container fault kind, applies it to the
    /// target's replicas (undone first when the scope ends, or on drop). The error says why it is not on.
    pub async fn begin_containers(
        &mut self,
        stack: &ContainerStack,
        spec: &ExperimentSpec,
        planned: &PlannedRun,
        run: RunId,
    ) -> Result<(), SetupError> {
        let started = stack.begin(spec, planned, run, &self.fault_events).await?;
        self.containers = Some(started);
        Ok(())
    }

    /// For a container fault kind, applies its pod equivalent to the target's ready pods (undone first when the
    /// scope ends, or on drop). The error says why it is not on.
    pub async fn begin_pods(
        &mut self,
        stack: &PodStack,
        spec: &ExperimentSpec,
        planned: &PlannedRun,
    ) -> Result<(), SetupError> {
        let action = container_action(planned.condition.fault, planned.condition.fault_rate);
        let started = stack
            .begin(spec, planned, action, &self.fault_events)
            .await?;
        self.pods = Some(started);
        Ok(())
    }

    /// Puts `fault` on the agent as `fault_id` and renews its lease every third of `lease` until the scope
    /// ends. The error says why the fault is not on.
    pub async fn apply_fault(
        &mut self,
        fault_id: &str,
        fault: &agent::api::FaultSpec,
        lease: Duration,
    ) -> Result<(), SetupError> {
        self.admin
            .put_fault(&self.agent_url, fault_id, fault)
            .await
            .map_err(SetupError::FaultNotApplied)?;
        self.record(FaultEvent::Applied, fault_id, fault.to_json_value());
        let renewal = renew_fault(
            self.admin.clone(),
            self.agent_url.clone(),
            fault_id.to_owned(),
            lease,
            Arc::clone(&self.fault_events),
        );
        self.fault = Some(AppliedFault {
            id: fault_id.to_owned(),
            renewal,
        });
        Ok(())
    }

    /// Puts `fault` on the agent as `fault_id` for each of `periods` (`[start, end)` from now), renewing its
    /// lease only while it is on, until the scope ends (see [`ScheduledFault`]).
    pub fn schedule_fault(
        &mut self,
        fault_id: &str,
        fault: agent::api::FaultSpec,
        lease: Duration,
        periods: Vec<(Duration, Duration)>,
    ) {
        self.scheduled = Some(ScheduledFault::start(
            self.admin.clone(),
            self.agent_url.clone(),
            fault_id,
            fault,
            lease,
            periods,
            Arc::clone(&self.fault_events),
        ));
    }

    /// Samples the testbed once a second from now until the scope ends: pools and cart sizes where offered.
    pub fn start_sampler(
        &mut self,
        testbed: &Testbed,
        offers_of: &(dyn Fn(&str) -> Offers + Sync),
    ) {
        let cart_url = testbed
            .services
            .iter()
            .find(|(name, _)| offers_of(name.as_str()).cart_metrics)
            .map(|(_, url)| url.clone());
        self.sampler = Some(Sampler::start(
            self.admin.clone(),
            cart_url,
            testbed
                .services
                .iter()
                .filter(|(name, _)| offers_of(name.as_str()).pool)
                .cloned()
                .collect(),
            Instant::now(),
        ));
    }

    /// Ends the run's scope: the fault is removed first, then every task stops and what they collected is
    /// returned.
    pub async fn end(mut self) -> ScopeEnd {
        let container_samples = match self.containers.take() {
            Some(started) => started.end(&self.fault_events).await,
            None => Vec::new(),
        };
        if let Some(pods) = self.pods.take() {
            pods.end(&self.fault_events).await;
        }
        let mut panics = Vec::new();
        let removed = self.remove_fault(&mut panics).await;
        let (energy_source, samples) = match self.sampler.take() {
            Some(sampler) => {
                let source = sampler.energy_source();
                let (samples, panicked) = sampler.finish().await;
                panics.extend(panicked.map(|message| format!("sampler: {message}")));
                (source, samples)
            }
            None => (EnergySource::Modelled, Vec::new()),
        };
        if let Some(replicas) = self.replicas.take() {
            panics.extend(
                replicas
                    .stop()
                    .await
                    .map(|message| format!("replica follower: {message}")),
            );
        }
        let mut transitions = match self.transitions.take() {
            Some(collector) => {
                let (transitions, panicked) = collector.finish().await;
                let named = panicked
                    .into_iter()
                    .map(|m| format!("transition reader: {m}"));
                panics.extend(named);
                transitions
            }
            None => Vec::new(),
        };
        if let Some(foreign) = self.foreign.take() {
            let (foreign, panicked) = foreign.finish().await;
            transitions.extend(foreign);
            transitions.sort_by_key(|event| event.at_ms);
            let named = panicked
                .into_iter()
                .map(|m| format!("foreign breaker source: {m}"));
            panics.extend(named);
        }
        match self.agent_stream.take() {
            Some(Ok(stream)) => {
                let (events, panicked) = match &removed {
                    // The removal is sent on the socket after the DELETE answered.
                    Some(fault_id) => {
                        stream
                            .finish_after_removal(fault_id, Duration::from_secs(1))
                            .await
                    }
                    None => stream.finish().await,
                };
                self.fault_events.lock().extend(events);
                panics.extend(panicked.map(|message| format!("agent stream reader: {message}")));
            }
            Some(Err(error)) => self.record(
                FaultEvent::AgentStreamUnavailable,
                "",
                json!({ "error": error.to_string() }),
            ),
            None => {}
        }
        if let Some(breakers) = self.breakers.take() {
            let (failures, panicked) = breakers.restore().await;
            self.fault_events.lock().extend(failures);
            panics.extend(panicked.map(|message| format!("breaker config renewal: {message}")));
        }
        let mut fault_events = std::mem::take(&mut *self.fault_events.lock());
        // One timeline: the runner's control calls and the agent's events, by time.
        fault_events.sort_by_key(|event| event.at_ms);
        ScopeEnd {
            fault_events,
            transitions,
            samples,
            energy_source,
            container_samples,
            panics,
        }
    }

    /// Stops renewing (and the schedule) and deletes the fault, if one may be on; returns its id. A
    /// renewal or schedule that had panicked (the fault may have lapsed mid-run) is added to `panics`.
    async fn remove_fault(&mut self, panics: &mut Vec<String>) -> Option<String> {
        let id = if let Some(scheduled) = self.scheduled.take() {
            let id = scheduled.id.clone();
            let (maybe_on, panicked) = scheduled.stop().await;
            panics.extend(panicked.map(|message| format!("fault schedule: {message}")));
            if !maybe_on {
                return None;
            }
            id
        } else {
            let AppliedFault { id, renewal } = self.fault.take()?;
            panics.extend(
                renewal
                    .stop()
                    .await
                    .map(|message| format!("lease renewal: {message}")),
            );
            id
        };
        match self.admin.delete_fault(&self.agent_url, &id).await {
            Ok(()) => self.record(FaultEvent::Removed, &id, json!({})),
            Err(error) => self.record(
                FaultEvent::RemoveFailed,
                &id,
                json!({ "error": error.to_string() }),
            ),
        }
        Some(id)
    }

    fn record(&self, event: FaultEvent, fault_id: &str, detail: serde_json::Value) {
        self.fault_events
            .lock()
            .push(fault_event(event, fault_id, detail));
    }
}

impl Drop for RunScope {
    /// Dropped without [`RunScope::end`]: the renewal stops now (so does every other task, each aborted on
    /// its own drop) and the fault's removal is sent as the scope's last act.
    fn drop(&mut self) {
        let id = match (self.fault.take(), self.scheduled.take()) {
            (Some(AppliedFault { id, renewal }), _) => {
                drop(renewal);
                id
            }
            (None, Some(scheduled)) => {
                let id = scheduled.id.clone();
                if !scheduled.abandon() {
                    return;
                }
                id
            }
            (None, None) => return,
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let admin = self.admin.clone();
        let agent_url = std::mem::take(&mut self.agent_url);
        runtime.spawn(async move {
            if let Err(error) = admin.delete_fault(&agent_url, &id).await {
                tracing::warn!(fault = id, %error, "removing the fault of an abandoned run failed");
            }
        });
    }
}

/// Renews the agent's fault `fault_id` every third of `lease` until stopped; each renewal recorded.
pub(super) fn renew_fault(
    admin: AdminClient,
    agent_url: String,
    fault_id: String,
    lease: Duration,
    events: Arc<Mutex<Vec<FaultEventRecord>>>,
) -> RunTask<()> {
    spawn_renewal(lease, events, move || {
        let (admin, agent_url, fault_id) = (admin.clone(), agent_url.clone(), fault_id.clone());
        async move {
            vec![renewal_event(
                &fault_id,
                admin.renew_fault(&agent_url, &fault_id).await,
            )]
        }
    })
}

pub(super) fn fault_event(
    event: FaultEvent,
    fault_id: &str,
    detail: serde_json::Value,
) -> FaultEventRecord {
    FaultEventRecord {
        at_ms: now_ms(),
        event,
        fault_id: fault_id.to_owned(),
        detail,
    }
}
