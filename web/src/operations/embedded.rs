//! [`Operations`] over the controller's real parts: experiments in the [`Store`], runs by the controller's
//! [`Runner`] (one at a time, resumable: finished plan positions are skipped), results from
//! `controller::stats` and `controller::report`, faults and breaker modes through the testbed's admin and fault APIs.
//!
//! The schedule queue is a table of its own (`web_schedule`) in the same database, so scheduled starts
//! survive a restart. Live events: [`EmbeddedOperations::spawn_live_feeds`] subscribes to every service's
//! `/_breakers/stream` and the agent's `/_agent/stream`, and samples pools, cart sizes and the frontend's
//! answers once per second into the hub.
//!
//! Annotations are stored in the experiment database, tied to the experiment (and run) running when they are
//! written; new operations put the latest stored ones back into the hub, so a restarted dashboard shows them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use controller::load;
use controller::report::{self, Format};
use controller::runner::{AdminClient, Progress, Runner, Testbed, now_ms};
use controller::spec::ExperimentSpec;
use controller::stats;
use controller::store::{
    AnnotationRow, ExperimentId, ExperimentRow, NewAnnotation, Status, Store, StoreError,
};
use futures::StreamExt;
use http::Method;
use parking_lot::Mutex;
use serde_json::Value;
use sqlx::Row;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_tungstenite::tungstenite::Message;

use super::{
    AnnotationEntry, AnnotationRequest, Cell, ChartSvg, ConditionResult, ExperimentSummary,
    FaultRequest, OperationError, OperationFuture, Operations, Results, VerdictResult,
};
use crate::hub::{
    EndpointSample, ExperimentChange, FaultChange, Hub, LiveEvent, LiveSample, OutcomeCounts,
    PoolSample, RunProgress, bucketize,
};

/// The service whose agent the embedded stack runs.
pub const AGENT_SERVICE: &str = "payment";

const SCHEDULE_TABLE: &str = "CREATE TABLE IF NOT EXISTS web_schedule (experiment_id BIGINT PRIMARY KEY, at_ms BIGINT NOT NULL)";

struct Inner {
    store: Store,
    testbed: Testbed,
    hub: Hub,
    client: AdminClient,
    runner: Runner,
    /// The experiment being run and its task.
    active: Mutex<Option<(i64, AbortHandle)>>,
    /// Queued starts: experiment → (due time, timer task).
    schedule: Mutex<BTreeMap<i64, (i64, AbortHandle)>>,
    /// The load driver's seconds closed since the last live sample (filled while a run drives load).
    load_seconds: Arc<Mutex<Option<LoadSeconds>>>,
}

/// What the load driver saw in the seconds closed since the last live sample: its outcomes (timeouts
/// and connection errors included, unlike the frontend's counters) and the latest per-endpoint latency.
#[derive(Debug, Default)]
struct LoadSeconds {
    warmup: bool,
    outcomes: OutcomeCounts,
    endpoints: Vec<EndpointSample>,
    cart_p95_us: Option<u64>,
}

impl LoadSeconds {
    /// Adds one closed second: outcomes add up, latency is the newest second's.
    fn add(&mut self, second: &load::SecondStats) {
        self.warmup = second.warmup;
        let mut endpoints = Vec::with_capacity(second.endpoints.len());
        self.cart_p95_us = None;
        for endpoint in &second.endpoints {
            let outcomes = &endpoint.outcomes;
            self.outcomes.ok += outcomes.ok;
            self.outcomes.failed += outcomes.failed;
            self.outcomes.rejected += outcomes.rejected;
            self.outcomes.timeout += outcomes.timeout;
            self.outcomes.connection_error += outcomes.connection_error;
            self.outcomes.client_error += outcomes.client_error;
            let name = load::endpoint::NAMES.get(endpoint.endpoint).map_or_else(
                || format!("endpoint {}", endpoint.endpoint),
                |n| (*n).to_owned(),
            );
            if endpoint.endpoint == load::endpoint::VIEW_CART {
                self.cart_p95_us = Some(endpoint.latency.p95_us);
            }
            endpoints.push(EndpointSample {
                name,
                requests: endpoint.latency.count,
                p50_us: endpoint.latency.p50_us,
                p95_us: endpoint.latency.p95_us,
                p99_us: endpoint.latency.p99_us,
                buckets: latency_buckets(&endpoint.histogram_v2),
            });
        }
        self.endpoints = endpoints;
    }
}

/// Counts per latency bucket (see [`bucketize`]) of an HDR V2 histogram; empty when the bytes do not
/// decode.
fn latency_buckets(histogram_v2: &[u8]) -> Vec<u64> {
    match load::deserialize_histogram(histogram_v2) {
        Ok(histogram) => bucketize(
            histogram
                .iter_recorded()
                .map(|step| (step.value_iterated_to(), step.count_at_value())),
        ),
        Err(_) => Vec::new(),
    }
}

/// Cheap to clone.
#[derive(Clone)]
pub struct EmbeddedOperations {
    inner: Arc<Inner>,
}

fn failed(error: impl std::fmt::Display) -> OperationError {
    OperationError::Failed(error.to_string())
}

/// A refused field stays a bad request (it names the field); anything else is a failure behind the operations.
fn store_failed(error: StoreError) -> OperationError {
    match error {
        StoreError::Invalid { .. } => OperationError::Invalid(error.to_string()),
        other => failed(other),
    }
}

fn entry_of(row: &AnnotationRow) -> AnnotationEntry {
    AnnotationEntry {
        id: row.id.0,
        at_ms: row.at_ms,
        text: row.text.clone(),
        author: row.author.clone(),
        experiment_id: row.experiment_id.map(|id| id.0),
        run_id: row.run_id.map(|id| id.0),
    }
}

fn now() -> i64 {
    now_ms()
}

impl EmbeddedOperations {
    /// Opens the schedule table, re-arms every stored scheduled start, and marks experiments left `running`
    /// by a previous process as `interrupted` (their unfinished run is discarded; a start resumes them).
    pub async fn new(store: Store, testbed: Testbed, hub: Hub) -> Result<Self, OperationError> {
        sqlx::query(SCHEDULE_TABLE)
            .execute(store.pool())
            .await
            .map_err(failed)?;
        for experiment in store.experiments().await.map_err(failed)? {
            if experiment.status == Status::Running {
                store
                    .mark_interrupted(experiment.id, now())
                    .await
                    .map_err(failed)?;
                store
                    .set_experiment_status(
                        experiment.id,
                        Status::Interrupted,
                        now(),
                        Some("the controller stopped while it ran"),
                    )
                    .await
                    .map_err(failed)?;
            }
        }
        let load_seconds = Arc::new(Mutex::new(None::<LoadSeconds>));
        let (live_seconds, mut closed_seconds) = tokio::sync::mpsc::unbounded_channel();
        {
            let load_seconds = Arc::clone(&load_seconds);
            tokio::spawn(async move {
                while let Some(second) = closed_seconds.recv().await {
                    load_seconds
                        .lock()
                        .get_or_insert_with(LoadSeconds::default)
                        .add(&second);
                }
            });
        }
        let operations = EmbeddedOperations {
            inner: Arc::new(Inner {
                client: AdminClient::new(testbed.token.clone()),
                runner: Runner::new(store.clone(), testbed.clone()).with_live_seconds(live_seconds),
                load_seconds,
                store,
                testbed,
                hub,
                active: Mutex::new(None),
                schedule: Mutex::new(BTreeMap::new()),
            }),
        };
        let rows = sqlx::query("SELECT experiment_id, at_ms FROM web_schedule")
            .fetch_all(operations.inner.store.pool())
            .await
            .map_err(failed)?;
        for row in rows {
            let id: i64 = row.try_get(0).map_err(failed)?;
            let at: i64 = row.try_get(1).map_err(failed)?;
            operations.arm(id, at);
        }
        operations.restore_annotations().await?;
        Ok(operations)
    }

    /// Puts the latest stored annotations (as many as the hub keeps) back into the hub's live state.
    async fn restore_annotations(&self) -> Result<(), OperationError> {
        let hub = &self.inner.hub;
        let kept = hub.config().history.annotations;
        let stored = self
            .inner
            .store
            .latest_annotations(kept)
            .await
            .map_err(failed)?;
        if stored.is_empty() {
            return Ok(());
        }
        for row in &stored {
            hub.publish(LiveEvent::Annotation(entry_of(row).live()));
        }
        hub.flush();
        Ok(())
    }

    /// Stops the running experiment's task without marking it (a process shutting down: the unfinished
    /// run is redone on the next start) and disarms the timers (their rows stay for the next process).
    pub fn stop_active(&self) {
        if let Some((_, task)) = self.inner.active.lock().take() {
            task.abort();
        }
        for (_, (_, timer)) in std::mem::take(&mut *self.inner.schedule.lock()) {
            timer.abort();
        }
    }

    /// Scheduled starts, by experiment.
    pub fn scheduled(&self) -> BTreeMap<i64, i64> {
        self.inner
            .schedule
            .lock()
            .iter()
            .map(|(id, (at, _))| (*id, *at))
            .collect()
    }

    fn arm(&self, id: i64, at_ms: i64) {
        let operations = self.clone();
        let delay = Duration::from_millis(u64::try_from(at_ms - now()).unwrap_or(0));
        let timer = tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            operations.inner.schedule.lock().remove(&id);
            let _ = operations.unschedule_row(id).await;
            if let Err(error) = operations.start_now(id).await {
                tracing::warn!(experiment = id, %error, "scheduled start failed");
                operations.publish_status(id, "start_failed");
            }
        });
        if let Some((_, previous)) = self
            .inner
            .schedule
            .lock()
            .insert(id, (at_ms, timer.abort_handle()))
        {
            previous.abort();
        }
    }

    async fn unschedule_row(&self, id: i64) -> Result<(), OperationError> {
        sqlx::query("DELETE FROM web_schedule WHERE experiment_id = $1")
            .bind(id)
            .execute(self.inner.store.pool())
            .await
            .map_err(failed)?;
        Ok(())
    }

    fn publish_status(&self, id: i64, status: &str) {
        self.inner
            .hub
            .publish(LiveEvent::Experiment(ExperimentChange {
                experiment_id: id,
                status: status.to_owned(),
                at_ms: now() as u64,
            }));
    }

    async fn experiment_row(&self, id: i64) -> Result<ExperimentRow, OperationError> {
        self.inner
            .store
            .experiment(ExperimentId(id))
            .await
            .map_err(failed)?
            .ok_or(OperationError::NotFound(id))
    }

    async fn start_now(&self, id: i64) -> Result<(), OperationError> {
        let row = self.experiment_row(id).await?;
        if row.status == Status::Finished {
            return Err(OperationError::Conflict(format!(
                "experiment {id} has finished already"
            )));
        }
        let spec = ExperimentSpec::parse(&row.spec_toml)
            .map_err(|error| OperationError::Invalid(format!("stored spec: {error}")))?;
        let mut active = self.inner.active.lock();
        if let Some((running, handle)) = active.as_ref()
            && !handle.is_finished()
        {
            return Err(OperationError::Conflict(format!(
                "experiment {running} is running; abort it or wait for it to finish"
            )));
        }
        let operations = self.clone();
        let task = tokio::spawn(async move { operations.execute(id, row.name, spec).await });
        *active = Some((id, task.abort_handle()));
        Ok(())
    }

    /// Runs every plan position that has no terminal run yet (finished, or stopped by its stop condition: a
    /// verdict, not a crash), in plan order: prepared exactly as `tolerant run` resumes
    /// ([`controller::runner::Runner::prepare_resume`]: leftover faults cleared, a dead attempt marked interrupted).
    async fn execute(&self, id: i64, name: String, spec: ExperimentSpec) {
        let experiment = ExperimentId(id);
        let store = &self.inner.store;
        let done = match self.inner.runner.prepare_resume(&spec, experiment).await {
            Ok(point) => point.done,
            Err(error) => {
                tracing::warn!(experiment = id, %error, "experiment could not start");
                return;
            }
        };
        self.publish_status(id, "running");
        let plan = spec.plan();
        let total = plan.len();
        let run_length = spec.run_warmup() + spec.run_duration();
        for planned in &plan {
            if done.contains(&planned.sequence) {
                continue;
            }
            let hub = self.inner.hub.clone();
            let name = name.clone();
            // The run's start, kept for its later progress events (the live timeline starts there).
            let mut run_started_ms = now() as u64;
            let mut progress = move |progress: Progress| {
                if matches!(progress, Progress::RunStarted { .. }) {
                    run_started_ms = now() as u64;
                }
                let (planned, phase, ends) = match &progress {
                    Progress::RunStarted { planned, .. } => (
                        planned,
                        "running".to_owned(),
                        Some(now() as u64 + run_length.as_millis() as u64),
                    ),
                    Progress::RunFinished {
                        planned, status, ..
                    } => (planned, status.as_str().to_owned(), None),
                };
                hub.publish(LiveEvent::Progress(RunProgress {
                    experiment_id: id,
                    experiment: name.clone(),
                    run: planned.sequence as u64 + 1,
                    runs: total as u64,
                    condition: planned.condition.label(),
                    round: u64::from(planned.round) + 1,
                    phase,
                    started_at_ms: run_started_ms,
                    ends_at_ms: ends,
                }));
            };
            if let Err(error) = self
                .inner
                .runner
                .run_one(&spec, experiment, planned, total, &mut progress)
                .await
            {
                let _ = store
                    .set_experiment_status(
                        experiment,
                        Status::Aborted,
                        now(),
                        Some(&error.to_string()),
                    )
                    .await;
                self.publish_status(id, "aborted");
                return;
            }
        }
        let _ = store
            .set_experiment_status(experiment, Status::Finished, now(), None)
            .await;
        self.publish_status(id, "finished");
    }

    async fn agent_halt(&self) -> Result<(), OperationError> {
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
            event: "halted".into(),
            fault_id: String::new(),
            target: AGENT_SERVICE.into(),
            kind: String::new(),
            rate: 0.0,
        }));
        Ok(())
    }

    fn service_url(&self, service: &str) -> Option<String> {
        self.inner
            .testbed
            .services
            .iter()
            .find(|(name, _)| name == service)
            .map(|(_, url)| url.clone())
    }

    /// Subscribes to every transition stream and the agent stream, and samples once per second, publishing
    /// into the hub until the returned tasks are aborted.
    pub fn spawn_live_feeds(&self) -> Vec<JoinHandle<()>> {
        let mut tasks = Vec::new();
        for (_, url) in &self.inner.testbed.services {
            let hub = self.inner.hub.clone();
            let ws = format!(
                "ws://{}/_breakers/stream",
                url.trim_start_matches("http://")
            );
            tasks.push(tokio::spawn(follow(ws, move |text| {
                if let Ok(event) = serde_json::from_str::<breaker::TransitionEvent>(text) {
                    hub.publish(LiveEvent::Transition(event));
                }
            })));
        }
        let hub = self.inner.hub.clone();
        let ws = format!(
            "ws://{}/_agent/stream",
            self.inner.testbed.agent.trim_start_matches("http://")
        );
        tasks.push(tokio::spawn(follow(ws, move |text| {
            if let Some(change) = fault_change(text) {
                hub.publish(LiveEvent::Fault(change));
            }
        })));
        let operations = self.clone();
        tasks.push(tokio::spawn(
            async move { operations.sample_forever().await },
        ));
        tasks
    }

    async fn get_json(&self, url: String) -> Option<Value> {
        let body = self
            .inner
            .client
            .call(Method::GET, &url, None, Bytes::new())
            .await
            .ok()?;
        serde_json::from_slice(&body).ok()
    }

    async fn get_text(&self, url: String) -> Option<String> {
        let body = self
            .inner
            .client
            .call(Method::GET, &url, None, Bytes::new())
            .await
            .ok()?;
        Some(String::from_utf8_lossy(&body).into_owned())
    }

    /// Once per second: worker pools, mean cart size, and the frontend's answers by status class.
    async fn sample_forever(&self) {
        let mut ticker = tokio::time::interval(Duration::from_secs(1));
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut previous: Option<[u64; 5]> = None;
        let mut previous_rejected: Option<u64> = None;
        let mut second = 0;
        loop {
            ticker.tick().await;
            let mut pools = Vec::new();
            for (service, url) in &self.inner.testbed.services {
                if let Some(pool) = self.get_json(format!("{url}/_pool")).await {
                    let field = |name: &str| pool.get(name).and_then(Value::as_u64).unwrap_or(0);
                    pools.push(PoolSample {
                        service: service.clone(),
                        in_flight: field("in_flight"),
                        queued: field("queued"),
                        capacity: field("capacity"),
                    });
                }
            }
            let cart_mean_items = match self.service_url("cart") {
                Some(url) => self
                    .get_json(format!("{url}/_admin/cart-stats"))
                    .await
                    .and_then(|stats| stats.get("mean_items").and_then(Value::as_f64)),
                None => None,
            };
            let classes = match self.service_url("frontend") {
                Some(url) => self
                    .get_text(format!("{url}/metrics"))
                    .await
                    .map(|text| status_classes(&text)),
                None => None,
            };
            let rejected_total = match self.service_url("frontend") {
                Some(url) => self
                    .get_json(format!("{url}/_breakers"))
                    .await
                    .map(|snapshots| checkout_rejections(&snapshots)),
                None => None,
            };
            let outcomes = match (classes, previous, rejected_total, previous_rejected) {
                (Some(now_counts), Some(before), rejected_now, rejected_before) => {
                    let delta = |i: usize| now_counts[i].saturating_sub(before[i]);
                    let rejected = match (rejected_now, rejected_before) {
                        (Some(now_total), Some(before_total)) => {
                            now_total.saturating_sub(before_total)
                        }
                        _ => 0,
                    };
                    OutcomeCounts {
                        ok: delta(0) + delta(1) + delta(2),
                        client_error: delta(3),
                        // A checkout the frontend's breaker rejected is answered with a 5xx too.
                        failed: delta(4).saturating_sub(rejected),
                        rejected,
                        ..OutcomeCounts::default()
                    }
                }
                _ => OutcomeCounts::default(),
            };
            if classes.is_some() {
                previous = classes;
            }
            if rejected_total.is_some() {
                previous_rejected = rejected_total;
            }
            second += 1;
            // While a run drives load, its own per-second account is the better one.
            let load = self.inner.load_seconds.lock().take().unwrap_or_default();
            let from_load = !load.endpoints.is_empty();
            self.inner.hub.publish(LiveEvent::Sample(LiveSample {
                at_ms: now() as u64,
                second,
                warmup: load.warmup,
                outcomes: if from_load { load.outcomes } else { outcomes },
                endpoints: load.endpoints,
                cart_mean_items,
                cart_p95_us: load.cart_p95_us,
                pools,
            }));
        }
    }
}

/// Calls the frontend's checkout breakers rejected so far (from its `/_breakers` snapshots): each is a
/// checkout the user saw refused.
fn checkout_rejections(snapshots: &Value) -> u64 {
    snapshots
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|snapshot| {
                    snapshot
                        .get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|name| name.starts_with("frontend->checkout"))
                })
                .filter_map(|snapshot| snapshot.get("counters")?.get("rejected")?.as_u64())
                .sum()
        })
        .unwrap_or(0)
}

/// `boutique_http_requests_total{…,class="Nxx"}` counters, 1xx..5xx.
fn status_classes(metrics: &str) -> [u64; 5] {
    let mut counts = [0; 5];
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("boutique_http_requests_total{") else {
            continue;
        };
        let Some(class) = rest
            .split("class=\"")
            .nth(1)
            .and_then(|tail| tail.chars().next())
            .and_then(|digit| digit.to_digit(10))
        else {
            continue;
        };
        let value = rest
            .rsplit(' ')
            .next()
            .and_then(|value| value.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        if (1..=5).contains(&class) {
            counts[class as usize - 1] = value as u64;
        }
    }
    counts
}

/// An agent stream message as a fault change.
fn fault_change(text: &str) -> Option<FaultChange> {
    let value: Value = serde_json::from_str(text).ok()?;
    let event = value.get("event")?.as_str()?;
    let at_ms = value.get("at_ms").and_then(Value::as_u64).unwrap_or(0);
    let fault_id = value
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let fault = value.get("fault");
    let renewed = value
        .get("renewed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let name = match event {
        "applied" if renewed => "renewed",
        "applied" => "applied",
        "expired" => "expired",
        "removed" => "removed",
        _ => return None,
    };
    Some(FaultChange {
        at_ms,
        event: name.into(),
        fault_id,
        target: AGENT_SERVICE.into(),
        kind: fault
            .and_then(|fault| fault.get("kind"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        rate: fault
            .and_then(|fault| fault.get("rate"))
            .and_then(Value::as_f64)
            .unwrap_or(if name == "applied" || name == "renewed" {
                1.0
            } else {
                0.0
            }),
    })
}

/// Follows a websocket, reconnecting after a second whenever it drops.
async fn follow(url: String, mut on_text: impl FnMut(&str) + Send) {
    loop {
        if let Ok((mut stream, _)) = tokio_tungstenite::connect_async(url.as_str()).await {
            while let Some(Ok(message)) = stream.next().await {
                if let Message::Text(text) = message {
                    on_text(text.as_str());
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn summary_of(
    row: &ExperimentRow,
    finished: Option<i64>,
    scheduled: Option<i64>,
) -> ExperimentSummary {
    let status = if scheduled.is_some() && row.status == Status::Pending {
        "scheduled".to_owned()
    } else {
        row.status.as_str().to_owned()
    };
    ExperimentSummary {
        id: row.id.0,
        name: row.name.clone(),
        status,
        planned_runs: row.planned_runs,
        finished_runs: finished,
        created_at_ms: row.created_at_ms,
        started_at_ms: row.started_at_ms,
        finished_at_ms: row.finished_at_ms,
        scheduled_at_ms: scheduled,
        abort_reason: row.abort_reason.clone(),
    }
}

impl Operations for EmbeddedOperations {
    fn experiments(&self) -> OperationFuture<'_, Vec<ExperimentSummary>> {
        Box::pin(async move {
            let scheduled = self.scheduled();
            let rows = self.inner.store.experiments().await.map_err(failed)?;
            let mut list = Vec::with_capacity(rows.len());
            for row in rows {
                let finished = self
                    .inner
                    .store
                    .finished_plan_indices(row.id)
                    .await
                    .map_err(failed)?
                    .len() as i64;
                list.push(summary_of(
                    &row,
                    Some(finished),
                    scheduled.get(&row.id.0).copied(),
                ));
            }
            Ok(list)
        })
    }

    fn create(&self, spec_toml: String) -> OperationFuture<'_, i64> {
        Box::pin(async move {
            let spec = ExperimentSpec::parse(&spec_toml)
                .map_err(|error| OperationError::Invalid(error.to_string()))?;
            let id = self
                .inner
                .store
                .create_experiment(&spec, now())
                .await
                .map_err(failed)?;
            self.publish_status(id.0, "pending");
            Ok(id.0)
        })
    }

    fn spec(&self, id: i64) -> OperationFuture<'_, String> {
        Box::pin(async move { Ok(self.experiment_row(id).await?.spec_toml) })
    }

    fn start(&self, id: i64, at_ms: Option<i64>) -> OperationFuture<'_, ()> {
        Box::pin(async move {
            match at_ms {
                Some(at) if at > now() => {
                    let row = self.experiment_row(id).await?;
                    if matches!(row.status, Status::Running | Status::Finished) {
                        return Err(OperationError::Conflict(format!(
                            "experiment {id} is {}",
                            row.status.as_str()
                        )));
                    }
                    self.unschedule_row(id).await?;
                    sqlx::query("INSERT INTO web_schedule (experiment_id, at_ms) VALUES ($1, $2)")
                        .bind(id)
                        .bind(at)
                        .execute(self.inner.store.pool())
                        .await
                        .map_err(failed)?;
                    self.arm(id, at);
                    self.publish_status(id, "scheduled");
                    Ok(())
                }
                _ => {
                    let scheduled = self.inner.schedule.lock().remove(&id);
                    if let Some((_, timer)) = scheduled {
                        timer.abort();
                    }
                    self.unschedule_row(id).await?;
                    self.start_now(id).await
                }
            }
        })
    }

    fn abort(&self, id: i64) -> OperationFuture<'_, ()> {
        Box::pin(async move {
            let scheduled = self.inner.schedule.lock().remove(&id);
            if let Some((_, timer)) = scheduled {
                timer.abort();
                self.unschedule_row(id).await?;
                self.publish_status(id, "pending");
                return Ok(());
            }
            let handle = {
                let mut active = self.inner.active.lock();
                match active.as_ref() {
                    Some((running, handle)) if *running == id && !handle.is_finished() => {
                        let handle = handle.clone();
                        *active = None;
                        handle
                    }
                    _ => {
                        return Err(OperationError::Conflict(format!(
                            "experiment {id} is neither running nor scheduled"
                        )));
                    }
                }
            };
            handle.abort();
            let halted = self.agent_halt().await;
            let experiment = ExperimentId(id);
            self.inner
                .store
                .mark_interrupted(experiment, now())
                .await
                .map_err(failed)?;
            self.inner
                .store
                .set_experiment_status(
                    experiment,
                    Status::Aborted,
                    now(),
                    Some("aborted from the dashboard"),
                )
                .await
                .map_err(failed)?;
            self.publish_status(id, "aborted");
            halted
        })
    }

    fn results(&self, id: i64) -> OperationFuture<'_, Results> {
        Box::pin(async move {
            let row = self.experiment_row(id).await?;
            let stats = stats::load_experiment(&self.inner.store, ExperimentId(id))
                .await
                .map_err(failed)?;
            let keys: Vec<_> = stats.metric_keys().into_iter().cloned().collect();
            let conditions = stats
                .conditions
                .iter()
                .map(|condition| ConditionResult {
                    label: condition.condition.label.clone(),
                    fault_kind: condition.condition.fault_kind.clone(),
                    fault_rate: condition.condition.fault_rate,
                    breaker_mode: condition.condition.breaker_mode.clone(),
                    runs: condition.runs,
                    cells: keys
                        .iter()
                        .map(|key| {
                            condition.summary(key).map(|summary| Cell {
                                mean: summary.mean,
                                half_width: summary.half_width,
                                n: summary.n,
                            })
                        })
                        .collect(),
                })
                .collect();
            let verdicts = stats
                .comparisons
                .iter()
                .flat_map(|comparison| {
                    comparison.metrics.iter().map(move |metric| VerdictResult {
                        fault_kind: comparison.fault_kind.clone(),
                        fault_rate: comparison.fault_rate,
                        metric: metric.key.to_string(),
                        baseline: comparison.baseline.label.clone(),
                        treatment: comparison.treatment.label.clone(),
                        difference: metric.difference.difference,
                        ci_low: metric.difference.ci_low,
                        ci_high: metric.difference.ci_high,
                        intervals_separate: metric.difference.intervals_separate,
                        verdict: metric.difference.verdict.as_str().to_owned(),
                    })
                })
                .collect();
            // The charts are a bonus on the page: a report that cannot draw them (no finished run yet)
            // still shows the table.
            let charts = if stats.conditions.is_empty() {
                Vec::new()
            } else {
                match report::render(&stats, Format::Md) {
                    Ok(markdown) => markdown
                        .plots
                        .into_iter()
                        .map(|plot| ChartSvg {
                            title: plot.title,
                            svg: plot.svg,
                        })
                        .collect(),
                    Err(error) => {
                        tracing::warn!(experiment = id, %error, "report charts failed");
                        Vec::new()
                    }
                }
            };
            let annotations = self
                .inner
                .store
                .annotations(ExperimentId(id))
                .await
                .map_err(failed)?;
            let csv = report::render(&stats, Format::Csv).map_err(failed)?;
            let json =
                report::render_annotated(&stats, &annotations, Format::Json).map_err(failed)?;
            let finished = stats.experiment.finished_runs as i64;
            Ok(Results {
                experiment: summary_of(&row, Some(finished), self.scheduled().get(&id).copied()),
                annotations: annotations.iter().map(entry_of).collect(),
                metrics: keys.iter().map(ToString::to_string).collect(),
                conditions,
                verdicts,
                charts,
                csv: csv.text,
                json: json.text,
            })
        })
    }

    fn halt(&self) -> OperationFuture<'_, ()> {
        Box::pin(async move { self.agent_halt().await })
    }

    fn set_fault(&self, request: FaultRequest) -> OperationFuture<'_, ()> {
        Box::pin(async move {
            if request.target != AGENT_SERVICE {
                return Err(OperationError::Invalid(format!(
                    "target: the embedded stack runs its agent in {AGENT_SERVICE} only, not in `{}`",
                    request.target
                )));
            }
            let spec = agent::api::FaultSpec::from_json_value(request.fault)
                .map_err(|error| OperationError::Invalid(error.to_string()))?;
            self.inner
                .client
                .put_fault(&self.inner.testbed.agent, &request.id, &spec)
                .await
                .map_err(failed)
        })
    }

    fn clear_fault(&self, target: String, id: String) -> OperationFuture<'_, ()> {
        Box::pin(async move {
            if target != AGENT_SERVICE {
                return Err(OperationError::Invalid(format!(
                    "target: no agent in `{target}`"
                )));
            }
            self.inner
                .client
                .delete_fault(&self.inner.testbed.agent, &id)
                .await
                .map_err(failed)
        })
    }

    fn set_breaker_mode(&self, service: Option<String>, mode: String) -> OperationFuture<'_, ()> {
        Box::pin(async move {
            let mode: breaker::Mode =
                serde_json::from_value(serde_json::Value::String(mode.clone())).map_err(|_| {
                    OperationError::Invalid(format!(
                        "mode: `{mode}` is not one of enforce, shadow, forced-open, disabled"
                    ))
                })?;
            let targets: Vec<String> = match &service {
                Some(name) => vec![self.service_url(name).ok_or_else(|| {
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
        })
    }

    fn services(&self) -> Vec<String> {
        self.inner
            .testbed
            .services
            .iter()
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn annotate(&self, request: AnnotationRequest) -> OperationFuture<'_, AnnotationEntry> {
        Box::pin(async move {
            // Refused fields first: a bad note is a bad request whatever it is about.
            controller::store::annotation_text(&request.text).map_err(store_failed)?;
            controller::store::annotation_author(request.author.as_deref())
                .map_err(store_failed)?;
            let store = &self.inner.store;
            let running = store.running().await.map_err(failed)?;
            let (experiment_id, run_id) = match request.experiment_id {
                None => match running {
                    Some((experiment, run)) => (Some(experiment), run),
                    None => (None, None),
                },
                Some(id) => {
                    let experiment = self.experiment_row(id).await?.id;
                    // The running run only belongs to the note if the note is about its experiment.
                    let run = running
                        .filter(|(running, _)| *running == experiment)
                        .and_then(|(_, run)| run);
                    (Some(experiment), run)
                }
            };
            let row = store
                .insert_annotation(&NewAnnotation {
                    at_ms: request.at_ms,
                    text: request.text,
                    author: request.author,
                    experiment_id,
                    run_id,
                })
                .await
                .map_err(store_failed)?;
            Ok(entry_of(&row))
        })
    }

    fn annotations(&self, experiment: i64) -> OperationFuture<'_, Vec<AnnotationEntry>> {
        Box::pin(async move {
            let id = self.experiment_row(experiment).await?.id;
            let rows = self.inner.store.annotations(id).await.map_err(failed)?;
            Ok(rows.iter().map(entry_of).collect())
        })
    }

    fn latest_annotations(&self, limit: usize) -> OperationFuture<'_, Vec<AnnotationEntry>> {
        Box::pin(async move {
            let rows = self
                .inner
                .store
                .latest_annotations(limit)
                .await
                .map_err(failed)?;
            Ok(rows.iter().map(entry_of).collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint_second(
        endpoint: usize,
        latencies_us: &[u64],
        ok: u64,
        timeout: u64,
    ) -> load::EndpointSecond {
        let mut histogram = load::new_histogram();
        for latency in latencies_us {
            histogram.record(*latency).unwrap();
        }
        load::EndpointSecond {
            endpoint,
            outcomes: load::OutcomeCounts {
                ok,
                timeout,
                ..load::OutcomeCounts::default()
            },
            latency: load::LatencySummary::of(&histogram),
            histogram_v2: load::serialize_histogram(&histogram),
        }
    }

    #[test]
    fn load_seconds_add_outcomes_and_keep_the_newest_latency() {
        let mut seconds = LoadSeconds::default();
        seconds.add(&load::SecondStats {
            second: 3,
            warmup: true,
            endpoints: vec![endpoint_second(
                load::endpoint::VIEW_CART,
                &[900, 1_500],
                2,
                0,
            )],
        });
        seconds.add(&load::SecondStats {
            second: 4,
            warmup: false,
            endpoints: vec![endpoint_second(load::endpoint::CHECKOUT, &[30_000], 0, 1)],
        });
        assert!(!seconds.warmup);
        assert_eq!(seconds.outcomes.ok, 2);
        assert_eq!(seconds.outcomes.timeout, 1);
        // Latency is the newest second's: no GET /cart in it.
        assert_eq!(seconds.cart_p95_us, None);
        assert_eq!(seconds.endpoints.len(), 1);
        let checkout = &seconds.endpoints[0];
        assert_eq!(checkout.name, "POST /cart/checkout");
        assert_eq!(checkout.requests, 1);
        // 30 ms falls in the (20 ms, 50 ms] bucket, index 5.
        let mut expected = vec![0; 13];
        expected[5] = 1;
        assert_eq!(checkout.buckets, expected);
    }

    #[test]
    fn a_cart_second_carries_its_p95() {
        let mut seconds = LoadSeconds::default();
        seconds.add(&load::SecondStats {
            second: 0,
            warmup: false,
            endpoints: vec![endpoint_second(
                load::endpoint::VIEW_CART,
                &[900, 1_500],
                2,
                0,
            )],
        });
        let p95 = seconds
            .cart_p95_us
            .expect("GET /cart completed in this second");
        assert!((1_400..=1_600).contains(&p95), "{p95}");
        assert_eq!(
            seconds.endpoints[0].buckets[0] + seconds.endpoints[0].buckets[1],
            2
        );
    }

    #[test]
    fn status_classes_are_read_from_prometheus_text() {
        let text = "# TYPE boutique_http_requests_total counter\n\
            boutique_http_requests_total{service=\"frontend\",class=\"2xx\"} 41\n\
            boutique_http_requests_total{service=\"frontend\",class=\"5xx\"} 7\n\
            boutique_pool_in_flight{service=\"frontend\"} 3\n";
        assert_eq!(status_classes(text), [0, 41, 0, 0, 7]);
    }

    #[test]
    fn checkout_rejections_sum_the_frontend_checkout_breakers() {
        let snapshots = serde_json::json!([
            {"name": "frontend->checkout", "counters": {"rejected": 4}},
            {"name": "frontend->checkout#placeOrder", "counters": {"rejected": 1}},
            {"name": "frontend->cart", "counters": {"rejected": 100}}
        ]);
        assert_eq!(checkout_rejections(&snapshots), 5);
        assert_eq!(checkout_rejections(&Value::Null), 0);
    }

    #[test]
    fn agent_events_become_fault_changes() {
        let applied = r#"{"event":"applied","id":"f","fault":{"kind":"error","status":500,"rate":0.5},"lease_ms":30000,"at_ms":9,"seq":1}"#;
        let change = fault_change(applied).expect("applied");
        assert_eq!(
            (change.event.as_str(), change.rate, change.kind.as_str()),
            ("applied", 0.5, "error")
        );
        assert!(change.is_active());
        let removed = r#"{"event":"removed","id":"f","reason":"deleted","at_ms":10,"seq":2}"#;
        let change = fault_change(removed).expect("removed");
        assert!(!change.is_active());
        assert!(fault_change(r#"{"event":"lagged","missed":3}"#).is_none());
    }
}
