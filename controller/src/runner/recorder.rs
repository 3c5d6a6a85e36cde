//! What a run keeps of what the observer sees, from the moment its scope opens until it ends: the transitions of
//! the labels it follows the streams of, the foreign breakers' transitions (scraped, and pushed to the
//! [`PushInbox`] while the run lasts), the agent's own events (`agent:<event>` in the run's event log), and once
//! the run's sampling starts, one [`CollectorSample`] per second.
//!
//! A transition or agent event stamped before the scope opened is not the run's: it was on its way when the run
//! began (the preparation's breaker reset and config, the previous run's removal) — the stream is followed
//! across runs, so what it sends is told apart by its own time. The sample the observer took at
//! `sampling_from + (k + 1) s` or later (and before `+ (k + 2) s`) is second `k`, the second it closes, like the
//! load driver's seconds. A gap in the observations (this recorder fell behind) is counted: a run that has one is
//! not a measurement. Transitions are kept under a per-breaker ceiling and written to the store while the run goes
//! once it exists ([`super::spool`]), so their memory is bounded whatever their rate.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use agent::api::AgentEvent;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::spool::{self, Transitions};
use crate::exposition::series_values;
use crate::observe::{AgentObservation, Observation, Observations, Received, Sample};
use crate::sources::PushInbox;
use crate::store::{CollectorSample, RunEvent, RunEventRecord, RunId, Store, TransitionRecord};
use crate::target::ServiceId;
use crate::task::OwnedTask;

/// What the run's samples are made of: the labels whose pools (and `/metrics`) it keeps, and the one whose carts.
#[derive(Debug, Clone, Default)]
pub struct SampledLabels {
    pub pools: Vec<ServiceId>,
    pub cart: Option<ServiceId>,
}

/// What the recorder has kept so far.
#[derive(Debug, Default)]
struct Recorded {
    agent: Vec<RunEventRecord>,
    samples: Vec<CollectorSample>,
    missed: u64,
}

/// What the recorder keeps, and from when.
#[derive(Debug)]
struct Wanted {
    since_ms: i64,
    streams: BTreeSet<ServiceId>,
    sampling: Option<(Instant, SampledLabels)>,
    /// Labels whose pools are kept besides the sampled ones: replicas that joined the run.
    joined_pools: Vec<ServiceId>,
}

/// Labels that join a run after its recorder started (a replica an orchestrator started or replaced): their
/// transitions, and their pools if asked, are the run's from then on.
#[derive(Debug, Clone)]
pub struct JoinedLabels(Arc<Mutex<Wanted>>);

impl JoinedLabels {
    /// Keeps `label`'s transitions from now on, and its pool (and `/metrics`) in the samples when `pool`.
    pub fn add(&self, label: ServiceId, pool: bool) {
        let mut wanted = self.0.lock();
        if pool && !wanted.joined_pools.contains(&label) {
            wanted.joined_pools.push(label.clone());
        }
        wanted.streams.insert(label);
    }
}

/// What a run's recorder kept, once stopped.
#[derive(Debug, Default)]
pub struct Recording {
    /// The followed streams' and the foreign sources' transitions not yet written to the store, by time.
    pub transitions: Vec<TransitionRecord>,
    /// The agent's events and the foreign sources' failed scrapes, as the run's event log stores them.
    pub agent_events: Vec<RunEventRecord>,
    pub samples: Vec<CollectorSample>,
    /// Observations this recorder fell too far behind to see.
    pub missed: u64,
    /// What every task of the recorder that had panicked said.
    pub panics: Vec<String>,
}

/// Records one run; stop it with [`RunRecorder::finish`] (dropped, it stops at once).
pub struct RunRecorder {
    recorded: Arc<Mutex<Recorded>>,
    transitions: Arc<Mutex<Transitions>>,
    /// Writes the transitions to the store once the run exists.
    spool: Option<OwnedTask<()>>,
    wanted: Arc<Mutex<Wanted>>,
    /// Ends the tasks once they took what was published before it.
    stop: CancellationToken,
    reader: OwnedTask<()>,
    pushed: Option<OwnedTask<()>>,
}

impl RunRecorder {
    /// Starts keeping what `observations` bring from now on (the transitions of `streams`' labels stamped at
    /// `since_ms` or later), and what is pushed to `inbox`.
    pub fn start(
        mut observations: Observations,
        since_ms: i64,
        streams: BTreeSet<ServiceId>,
        inbox: Option<&PushInbox>,
    ) -> Self {
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let transitions = Arc::new(Mutex::new(Transitions::default()));
        let wanted = Arc::new(Mutex::new(Wanted {
            since_ms,
            streams,
            sampling: None,
            joined_pools: Vec::new(),
        }));
        let stop = CancellationToken::new();
        let reader = {
            let (recorded, transitions, wanted, stop) = (
                Arc::clone(&recorded),
                Arc::clone(&transitions),
                Arc::clone(&wanted),
                stop.clone(),
            );
            let take = move |received: Received| match keep(&wanted.lock(), received) {
                Kept::Transition(record) => transitions.lock().admit(record),
                kept => recorded.lock().add(kept),
            };
            OwnedTask::spawn(async move {
                loop {
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => break,
                        received = observations.next() => match received {
                            Some(received) => take(received),
                            None => return,
                        },
                    }
                }
                // Stopped: what was published before the stop is the run's too.
                while let Some(received) = observations.try_next() {
                    take(received);
                }
            })
        };
        let pushed = inbox.map(|inbox| {
            let mut pushed = inbox.subscribe();
            let (recorded, transitions, stop) = (
                Arc::clone(&recorded),
                Arc::clone(&transitions),
                stop.clone(),
            );
            OwnedTask::spawn(async move {
                use tokio::sync::broadcast::error::{RecvError, TryRecvError};
                let take = |event: &breaker::TransitionEvent| {
                    (transitions.lock()).admit(TransitionRecord::from_event(event))
                };
                loop {
                    tokio::select! {
                        biased;
                        () = stop.cancelled() => break,
                        received = pushed.recv() => match received {
                            Ok(event) => take(&event),
                            Err(RecvError::Lagged(missed)) => recorded.lock().missed += missed,
                            Err(RecvError::Closed) => return,
                        },
                    }
                }
                loop {
                    match pushed.try_recv() {
                        Ok(event) => take(&event),
                        Err(TryRecvError::Lagged(missed)) => recorded.lock().missed += missed,
                        Err(_) => return,
                    }
                }
            })
        });
        RunRecorder {
            recorded,
            transitions,
            spool: None,
            wanted,
            stop,
            reader,
            pushed,
        }
    }

    /// Writes the transitions kept to `run` in `store` while the run goes, from now until it finishes.
    pub fn spool_to(&mut self, store: Store, run: RunId) {
        let transitions = Arc::clone(&self.transitions);
        self.spool = Some(spool::spool(transitions, store, run, self.stop.clone()));
    }

    /// Where labels that join the run later are added.
    pub fn joined(&self) -> JoinedLabels {
        JoinedLabels(Arc::clone(&self.wanted))
    }

    /// Keeps one sample a second from now on, of `labels` (see the module documentation).
    pub fn sample_from(&self, from: Instant, labels: SampledLabels) {
        self.wanted.lock().sampling = Some((from, labels));
    }

    /// Waits (at most `grace`) until the agent reported `fault_id` removed — the removal is sent on its stream
    /// after the `DELETE` answered — then stops, as [`RunRecorder::finish`].
    pub async fn finish_after_removal(self, fault_id: &str, grace: Duration) -> Recording {
        let deadline = Instant::now() + grace;
        loop {
            let removed = (self.recorded.lock().agent.iter()).any(|record| {
                record.fault_id == fault_id
                    && matches!(
                        record.event,
                        RunEvent::Agent(crate::store::AgentReport::Event(
                            AgentEvent::Removed { .. }
                        ))
                    )
            });
            if removed || Instant::now() >= deadline || self.reader.is_finished() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        self.finish().await
    }

    /// Stops recording — what was published until now is kept — and returns what was kept.
    pub async fn finish(self) -> Recording {
        self.stop.cancel();
        let mut panics = Vec::new();
        panics.extend(self.reader.join().await);
        if let Some(pushed) = self.pushed {
            panics.extend(pushed.join().await);
        }
        // A write in progress is finished: what it took is in the store, the rest is the run's end's to write.
        if let Some(spool) = self.spool {
            panics.extend(spool.join().await);
        }
        let mut recorded = std::mem::take(&mut *self.recorded.lock());
        let mut transitions = self.transitions.lock();
        recorded
            .agent
            .extend(transitions.not_stored_events(crate::clock::now_ms()));
        Recording {
            transitions: transitions.take_settled(None),
            agent_events: recorded.agent,
            samples: recorded.samples,
            missed: recorded.missed,
            panics,
        }
    }
}

impl Recorded {
    fn add(&mut self, kept: Kept) {
        match kept {
            Kept::Nothing => {}
            Kept::Missed(missed) => self.missed += missed,
            // Transitions are the spool's (`RunRecorder::start` gives them to it).
            Kept::Transition(_) => {}
            Kept::Agent(record) => self.agent.push(record),
            Kept::Sample(sample) => {
                // One sample per second: a sampler's ticks are a second apart, but two samplers' (an observer's
                // sampler stopped and started again) need not be.
                if self.samples.last().map(|s| s.second) < Some(sample.second) {
                    self.samples.push(sample);
                }
            }
        }
    }
}

/// What one observation adds to the record.
enum Kept {
    Nothing,
    Missed(u64),
    /// A followed stream's or a foreign source's.
    Transition(TransitionRecord),
    Agent(RunEventRecord),
    Sample(CollectorSample),
}

fn keep(wanted: &Wanted, received: Received) -> Kept {
    let observation = match received {
        Received::Observation(observation) => observation,
        Received::Gap { missed } => return Kept::Missed(missed),
    };
    match observation {
        Observation::Transition { target, event } => {
            let record = TransitionRecord::from_event(&event);
            match wanted.streams.contains(&target) && record.at_ms >= wanted.since_ms {
                true => Kept::Transition(record),
                false => Kept::Nothing,
            }
        }
        Observation::Foreign(event) => Kept::Transition(TransitionRecord::from_event(&event)),
        Observation::ScrapeFailed {
            source,
            error,
            at_ms,
        } if at_ms >= wanted.since_ms => Kept::Agent(RunEventRecord {
            at_ms,
            fault_id: String::new(),
            event: RunEvent::ScrapeFailed { source, error },
        }),
        Observation::ScrapeFailed { .. } => Kept::Nothing,
        Observation::Agent(seen) => match agent_record(seen) {
            Some(record) if record.at_ms >= wanted.since_ms => Kept::Agent(record),
            _ => Kept::Nothing,
        },
        Observation::Sample(sample) => match &wanted.sampling {
            Some((from, labels)) => match second_of(*from, sample.at) {
                Some(second) => Kept::Sample(collector_sample(
                    &sample,
                    labels,
                    &wanted.joined_pools,
                    second,
                )),
                None => Kept::Nothing,
            },
            None => Kept::Nothing,
        },
    }
}

/// The second a sample taken at `at` closes, counted from `from` (`None` before the first one closed).
fn second_of(from: Instant, at: Instant) -> Option<u64> {
    let elapsed = at.checked_duration_since(from)?.as_secs();
    elapsed.checked_sub(1)
}

/// An agent event as the run's event log stores it, at the agent's own time (a `lagged` notice, which has
/// none, at its arrival).
fn agent_record(seen: AgentObservation) -> Option<RunEventRecord> {
    let at_ms = match &seen.event {
        AgentEvent::Applied { at_ms, .. }
        | AgentEvent::Expired { at_ms, .. }
        | AgentEvent::Removed { at_ms, .. } => i64::try_from(*at_ms).ok()?,
        AgentEvent::Lagged { .. } => seen.received_ms,
    };
    Some(RunEventRecord {
        at_ms,
        fault_id: seen.event.fault_id().unwrap_or("").to_owned(),
        event: RunEvent::agent(seen.event),
    })
}

/// The run's figures of one sample: the cart sizes of `labels.cart`, the pools summed over `labels.pools` and
/// `joined` (each pool and `/metrics` kept by label in `extra`), the energy of the interval.
fn collector_sample(
    sample: &Sample,
    labels: &SampledLabels,
    joined: &[ServiceId],
    second: u64,
) -> CollectorSample {
    let mut collected = CollectorSample {
        second,
        energy_joules: sample.energy.map(|e| e.joules),
        cpu_seconds: sample.energy.map(|e| e.cpu_seconds),
        ..CollectorSample::default()
    };
    if let Some(stats) = (labels.cart.as_ref())
        .and_then(|label| sample.of(label.as_str()))
        .and_then(|target| target.cart.as_ref())
    {
        collected.cart_mean_items = Some(stats.mean_items);
        collected.carts = Some(stats.carts as u64);
    }
    let mut pools = Map::new();
    let mut metrics = Map::new();
    let (mut in_flight, mut queued, mut seen) = (0u64, 0u64, false);
    let joined = joined.iter().filter(|label| !labels.pools.contains(label));
    for label in labels.pools.iter().chain(joined) {
        let Some(target) = sample.of(label.as_str()) else {
            continue;
        };
        if let Some(pool) = &target.pool {
            in_flight += pool.in_flight as u64;
            queued += pool.queued as u64;
            seen = true;
            pools.insert(label.to_string(), json!(pool));
        }
        if let Some(samples) = &target.metrics {
            metrics.insert(label.to_string(), Value::Object(series_values(samples)));
        }
    }
    if seen {
        collected.pool_in_flight = Some(in_flight);
        collected.pool_queued = Some(queued);
    }
    if seen || !metrics.is_empty() {
        collected.extra = Some(json!({ "pools": pools, "metrics": metrics }));
    }
    collected
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A replica that joined the run (an orchestrator's new task or pod): its transitions are the run's from then
    /// on, and its pool is in the samples beside the sampled ones.
    #[test]
    fn a_joined_replica_is_recorded_like_the_labels_the_run_began_with() {
        let label = |name: &str| ServiceId::new(name).unwrap();
        let wanted = Arc::new(Mutex::new(Wanted {
            since_ms: 0,
            streams: BTreeSet::from([label("checkout")]),
            sampling: None,
            joined_pools: Vec::new(),
        }));
        let transition = |target: &str| {
            let text = r#"{"service":"checkout","breaker":"checkout->payment","from":"closed","to":"open",
                "reason":"forced","detail":{},"at_ms":5,"seq":1,"shadow":false}"#;
            Received::Observation(Observation::Transition {
                target: label(target),
                event: serde_json::from_str(text).unwrap(),
            })
        };
        let kept = |received| matches!(keep(&wanted.lock(), received), Kept::Transition(_));
        assert!(kept(transition("checkout")));
        assert!(!kept(transition("checkout#2")));
        let joined = JoinedLabels(Arc::clone(&wanted));
        joined.add(label("checkout#2"), true);
        joined.add(label("checkout#2"), true);
        assert!(kept(transition("checkout#2")));
        assert_eq!(wanted.lock().joined_pools, [label("checkout#2")]);
    }

    #[test]
    fn a_sample_closes_the_second_before_the_one_it_was_taken_in() {
        let from = Instant::now();
        let at = |ms: u64| from + Duration::from_millis(ms);
        assert_eq!(second_of(from, at(0)), None);
        assert_eq!(second_of(from, at(999)), None);
        assert_eq!(second_of(from, at(1_000)), Some(0));
        assert_eq!(second_of(from, at(1_730)), Some(0));
        assert_eq!(second_of(from, at(2_730)), Some(1));
        // Taken before sampling began: not the run's.
        assert_eq!(second_of(at(500), from), None);
    }

    #[test]
    fn agent_events_become_the_runs_event_log() {
        let seen = |text: &str| AgentObservation {
            event: serde_json::from_str(text).unwrap(),
            received_ms: 77,
        };
        let applied = agent_record(seen(
            r#"{"event":"applied","id":"f1","fault":{"kind":"error","status":500,"rate":1.0},"lease_ms":30000,"renewed":false,"at_ms":10,"seq":1}"#,
        ))
        .unwrap();
        assert_eq!(
            (
                applied.event.kind().as_str(),
                applied.fault_id.as_str(),
                applied.at_ms
            ),
            ("agent:applied", "f1", 10)
        );
        let renewed = agent_record(seen(
            r#"{"event":"applied","id":"f1","fault":{"kind":"error","status":500,"rate":1.0},"lease_ms":30000,"renewed":true,"at_ms":20,"seq":2}"#,
        ))
        .unwrap();
        assert_eq!(renewed.event.kind().as_str(), "agent:renewed");
        let removed = agent_record(seen(
            r#"{"event":"removed","id":"f1","reason":"deleted","at_ms":30,"seq":3}"#,
        ))
        .unwrap();
        assert_eq!(removed.event.kind().as_str(), "agent:removed");
        assert_eq!(removed.event.detail_json()["reason"], "deleted");
        let lagged = agent_record(seen(r#"{"event":"lagged","missed":3}"#)).unwrap();
        assert_eq!(
            (
                lagged.event.kind().as_str(),
                lagged.fault_id.as_str(),
                lagged.at_ms
            ),
            ("agent:lagged", "", 77)
        );
    }
}
