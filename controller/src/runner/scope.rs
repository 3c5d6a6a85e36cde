//! A run as a scope: everything one run starts — its watch on the observer (the transition and agent streams,
//! the foreign breaker sources, the once-a-second samples) and the recorder that keeps what the observer sees, the
//! replicas an orchestrator starts or replaces meanwhile (added to and taken from that watch), the fault and its
//! lease renewal, the container or pod fault, the leased breaker config — is owned by one [`RunScope`], and
//! ending the scope is the one place a run's end is decided.
//!
//! [`RunScope::end`] removes the fault first (renewal and any schedule stopped, then `DELETE`), then stops the
//! recorder (once the agent reported the removal, or a second passed), gives the watch back and hands back what
//! was collected. A scope that is dropped instead of ended (a panic unwinding through the run, or its future
//! dropped) still stops every task it owns at once — each is an [`crate::task::OwnedTask`], aborted on drop — and
//! each lease holder sends its undo as its last act (the fault's `DELETE` bounded by
//! [`ADMIN_CALL_TIMEOUT`](crate::testbed::ADMIN_CALL_TIMEOUT); the fault's lease ends it anyway). The load itself
//! runs inside the run's own future ([`super::drive::drive_load`]), so nothing it spawned can outlive it. The
//! run's breaker config ([`HeldBreakers`]) is restored last, on end and on drop alike.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::RunnerError;
use super::recorder::{RunRecorder, SampledLabels};
use super::replicas::{ReplicaFollower, ServiceFollows};
use super::setup_error::SetupError;
use crate::energy::EnergySource;
use crate::lease::{
    AppliedFault, ContainerRun, ContainerStack, HeldBreakers, PodRun, PodStack, container_action,
    recorded,
};
use crate::observe::{Follows, Observer, StreamUnavailable, Target, Watch};
use crate::roster::ReplicaChange;
use crate::sources::{PushInbox, ScrapeTally, SourceHealth};
use crate::spec::{ExperimentSpec, Offers, PlannedRun, SourceSpec};
use crate::store::{
    AgentReport, CollectorSample, ContainerSampleRecord, RunEvent, RunEventRecord, RunId, Store,
    TransitionRecord,
};
use crate::target::ServiceId;
use crate::testbed::{AdminClient, Testbed};

/// What a run collected besides its load, once its scope has ended.
#[derive(Debug)]
pub struct ScopeEnd {
    /// The runner's control calls and the agent's own events, by time.
    pub fault_events: Vec<RunEventRecord>,
    pub transitions: Vec<TransitionRecord>,
    pub samples: Vec<CollectorSample>,
    pub energy_source: EnergySource,
    /// Each container's seconds, when the run was against the compose stack.
    pub container_samples: Vec<ContainerSampleRecord>,
    /// What every task of the scope that had panicked said (`lease renewal: …`): a run that lost one is not a
    /// measurement.
    pub panics: Vec<String>,
    /// Observations the run's recorder fell too far behind to see: a run with a gap is not a measurement either.
    pub missed: u64,
    /// How well each `[[sources]]` Prometheus source was seen, in the spec's order.
    pub sources: Vec<SourceHealth>,
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
            missed: 0,
            sources: Vec::new(),
        }
    }
}

/// What one run started; see the module documentation. Fields drop in this order: the container or pod fault is
/// undone, then the agent's fault removed, then the breaker config restored.
pub struct RunScope {
    admin: AdminClient,
    agent_url: String,
    fault_events: Arc<Mutex<Vec<RunEventRecord>>>,
    /// The compose stack's sampling and container fault, when the run is against it.
    containers: Option<ContainerRun>,
    /// The pod fault, when the run is against Kubernetes.
    pods: Option<PodRun>,
    fault: Option<AppliedFault>,
    /// Replicas an orchestrator starts or replaces during the run: recorded, and followed through `watch`.
    replicas: Option<ReplicaFollower>,
    recorder: Option<RunRecorder>,
    /// What the run asks the observer to follow (shared with the replica follower); given back when the scope
    /// ends.
    watch: Option<Arc<Watch>>,
    observer: Observer,
    /// Whether the agent's stream is followed (an agent without one is no error, its account is just missing).
    agent_stream: Result<(), StreamUnavailable>,
    /// Which energy the samples carry, once sampling started.
    energy_source: Option<EnergySource>,
    /// The run's leased breaker config: restored last when the scope ends, or on drop.
    breakers: Option<HeldBreakers>,
    /// The scrapes of each foreign source followed, counted.
    tallies: Vec<Arc<Mutex<ScrapeTally>>>,
}

impl RunScope {
    /// Follows the transition stream of every service that offers one (required there: the error says which did
    /// not open) and the agent's event stream (optional), and starts recording what the observer sees of them;
    /// returns once every stream is up, so nothing they send after this is missed. Nothing is applied yet.
    pub async fn open(
        admin: &AdminClient,
        testbed: &Testbed,
        offers_of: &(dyn Fn(&str) -> Offers + Sync),
        observer: &Observer,
        inbox: Option<&PushInbox>,
    ) -> Result<Self, RunnerError> {
        let since_ms = crate::clock::now_ms();
        let streams: Vec<&(ServiceId, String)> = testbed
            .services
            .iter()
            .filter(|(name, _)| offers_of(name.as_str()).breaker_stream)
            .collect();
        let labels: BTreeSet<ServiceId> = streams.iter().map(|(name, _)| name.clone()).collect();
        // Subscribed before anything is followed: what the streams send from their first message on is seen.
        let recorder = RunRecorder::start(observer.subscribe(), since_ms, labels, inbox);
        let watch = observer.watch();
        for (label, url) in &streams {
            watch.follow(&Target {
                label: label.clone(),
                url: url.clone(),
                follows: Follows {
                    transitions: true,
                    ..Follows::default()
                },
            });
        }
        for (label, _) in &streams {
            watch
                .breakers_connected(label)
                .await
                .map_err(SetupError::Subscribe)?;
        }
        watch.follow_agent(&testbed.agent);
        let agent_stream = watch.agent_connected().await;
        Ok(RunScope {
            admin: admin.clone(),
            agent_url: testbed.agent.clone(),
            fault_events: Arc::new(Mutex::new(Vec::new())),
            containers: None,
            pods: None,
            fault: None,
            replicas: None,
            recorder: Some(recorder),
            watch: Some(Arc::new(watch)),
            observer: observer.clone(),
            agent_stream,
            energy_source: None,
            breakers: None,
            tallies: Vec::new(),
        })
    }

    /// Writes the transitions the run keeps to `run` in `store` while it goes (the run exists from now on).
    pub fn spool_to(&mut self, store: Store, run: RunId) {
        if let Some(recorder) = &mut self.recorder {
            recorder.spool_to(store, run);
        }
    }

    /// Holds the run's leased breaker config until the scope ends (restored after everything else stopped, so
    /// the restore's transitions are not the run's).
    pub fn hold_breakers(&mut self, breakers: HeldBreakers) {
        self.breakers = Some(breakers);
    }

    /// Follows the replicas `changes` announces until the scope ends (see [`super::replicas`]): each change
    /// recorded, a new replica followed through the run's watch (for what `follows` says of its service) and
    /// given the run's breaker config (held by [`RunScope::hold_breakers`], which comes first), a gone one given
    /// back.
    pub fn follow_replicas(
        &mut self,
        changes: tokio::sync::broadcast::Receiver<ReplicaChange>,
        follows: ServiceFollows,
    ) {
        let (Some(watch), Some(recorder)) = (&self.watch, &self.recorder) else {
            return;
        };
        self.replicas = Some(ReplicaFollower::start(
            changes,
            Arc::clone(watch),
            recorder.joined(),
            follows,
            self.breakers.as_ref().map(HeldBreakers::joiner),
            Arc::clone(&self.fault_events),
        ));
    }

    /// Follows the foreign breakers of every `[[sources]]` Prometheus entry until the scope ends: a baseline
    /// scrape of each now (one that does not answer is blind until a scrape does; one showing more breakers than
    /// are followed is an error naming the source as the spec does), then at its interval, every scrape counted.
    pub async fn follow_foreign(&mut self, sources: &[SourceSpec]) -> Result<(), SetupError> {
        let Some(watch) = &self.watch else {
            return Ok(());
        };
        for (index, source) in sources.iter().enumerate() {
            if let SourceSpec::Prometheus(scrape) = source {
                self.tallies.push(watch.scrape(index, scrape).await?);
            }
        }
        Ok(())
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
        let applied = AppliedFault::put(
            &self.admin,
            &self.agent_url,
            fault_id,
            fault,
            lease,
            &self.fault_events,
        )
        .await
        .map_err(SetupError::FaultNotApplied)?;
        self.fault = Some(applied);
        Ok(())
    }

    /// Puts `fault` on the agent as `fault_id` for each of `periods` (`[start, end)` from now), renewing its
    /// lease only while it is on, until the scope ends (see [`crate::lease::ScheduledFault`]).
    pub fn schedule_fault(
        &mut self,
        fault_id: &str,
        fault: agent::api::FaultSpec,
        lease: Duration,
        periods: Vec<(Duration, Duration)>,
    ) {
        self.fault = Some(AppliedFault::schedule(
            &self.admin,
            &self.agent_url,
            fault_id,
            fault,
            lease,
            periods,
            &self.fault_events,
        ));
    }

    /// Samples the testbed once a second from now until the scope ends: pools (and their `/metrics`) and cart
    /// sizes where offered, this process's energy.
    pub fn start_sampler(
        &mut self,
        testbed: &Testbed,
        offers_of: &(dyn Fn(&str) -> Offers + Sync),
    ) {
        let (Some(watch), Some(recorder)) = (&self.watch, &self.recorder) else {
            return;
        };
        let cart = testbed
            .services
            .iter()
            .find(|(name, _)| offers_of(name.as_str()).cart_metrics)
            .map(|(name, _)| name.clone());
        let mut labels = SampledLabels {
            pools: Vec::new(),
            cart: cart.clone(),
        };
        for (label, url) in &testbed.services {
            let offers = offers_of(label.as_str());
            let follows = Follows {
                transitions: offers.breaker_stream,
                pool: offers.pool,
                metrics: offers.pool,
                cart: cart.as_ref() == Some(label),
                breakers: false,
            };
            if offers.pool {
                labels.pools.push(label.clone());
            }
            if follows != Follows::default() {
                watch.follow(&Target {
                    label: label.clone(),
                    url: url.clone(),
                    follows,
                });
            }
        }
        recorder.sample_from(Instant::now(), labels);
        self.energy_source = Some(self.observer.energy_source());
    }

    /// Ends the run's scope: the fault is removed first, then recording stops, the watch is given back and what
    /// was collected is returned.
    pub async fn end(mut self) -> ScopeEnd {
        let container_samples = match self.containers.take() {
            Some(started) => started.end(&self.fault_events).await,
            None => Vec::new(),
        };
        if let Some(pods) = self.pods.take() {
            pods.end(&self.fault_events).await;
        }
        let mut panics = Vec::new();
        let removed = match self.fault.take() {
            Some(fault) => {
                let (removed, panicked) = fault.remove(&self.fault_events).await;
                panics.extend(panicked);
                removed
            }
            None => None,
        };
        // Replicas stop being taken on before the recording ends (what they sent until now is kept).
        if let Some(replicas) = self.replicas.take() {
            panics.extend(
                (replicas.stop().await).map(|message| format!("replica follower: {message}")),
            );
        }
        let recording = match (self.recorder.take(), &removed, &self.agent_stream) {
            // The removal is sent on the agent's stream after the DELETE answered.
            (Some(recorder), Some(fault_id), Ok(())) => {
                recorder
                    .finish_after_removal(fault_id, Duration::from_secs(1))
                    .await
            }
            (Some(recorder), _, _) => recorder.finish().await,
            (None, _, _) => Default::default(),
        };
        drop(self.watch.take());
        let ended_ms = crate::clock::now_ms();
        let sources = (self.tallies.iter())
            .map(|tally| tally.lock().health(ended_ms))
            .collect();
        panics.extend(
            (recording.panics.iter()).map(|message| format!("observation recorder: {message}")),
        );
        self.fault_events.lock().extend(recording.agent_events);
        if let Err(error) = &self.agent_stream {
            let unavailable = RunEvent::Agent(AgentReport::StreamUnavailable {
                error: error.to_string(),
            });
            self.fault_events.lock().push(recorded("", unavailable));
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
            transitions: recording.transitions,
            samples: recording.samples,
            energy_source: self.energy_source.unwrap_or(EnergySource::Modelled),
            container_samples,
            panics,
            missed: recording.missed,
            sources,
        }
    }
}
