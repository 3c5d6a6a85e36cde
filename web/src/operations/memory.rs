//! An in-memory [`Operations`] for tests: it stores specs and annotations and records every call, and runs
//! nothing.

use std::sync::Arc;

use parking_lot::Mutex;

use controller::store::{Status, annotation_author, annotation_text};
use controller::target::ServiceId;

use crate::hub::ExperimentStatus;

use super::{
    AnnotationEntry, AnnotationRequest, Cell, ConditionResult, ExperimentSummary, FaultRequest,
    OperationError, OperationFuture, Operations, Results,
};

/// A call the in-memory operations received.
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Create(String),
    Start(i64, Option<i64>),
    Abort(i64),
    Halt,
    SetFault(FaultRequest),
    ClearFault(ServiceId, String),
    BreakerMode(super::ModeRequest),
    Load(Option<super::LoadRequest>),
    Annotate(AnnotationRequest),
    /// A report asked for in one format (a download).
    Report(i64, controller::report::Format),
    ContainerFault(super::ContainerFaultRequest),
    ClearContainerFault(i64),
}

#[derive(Debug, Default)]
struct Memory {
    experiments: Vec<(ExperimentSummary, String)>,
    /// Stored annotations, in insertion order.
    annotations: Vec<AnnotationEntry>,
    calls: Vec<Call>,
    /// Finished runs per condition the results report; two unless set.
    rounds: Option<usize>,
}

/// Shared handle; clones see the same memory.
#[derive(Debug, Clone, Default)]
pub struct MemoryOperations {
    memory: Arc<Mutex<Memory>>,
}

impl MemoryOperations {
    pub fn new() -> Self {
        MemoryOperations::default()
    }

    /// Results report `rounds` finished runs per condition (one round: no interval, no verdict).
    pub fn set_rounds(&self, rounds: usize) {
        self.memory.lock().rounds = Some(rounds);
    }

    /// Every mutating call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.memory.lock().calls.clone()
    }

    fn record(&self, call: Call) {
        self.memory.lock().calls.push(call);
    }

    /// An experiment's annotations, oldest first.
    fn annotations_of(&self, id: i64) -> Vec<AnnotationEntry> {
        let mut list: Vec<AnnotationEntry> = self
            .memory
            .lock()
            .annotations
            .iter()
            .filter(|entry| entry.experiment_id == Some(id))
            .cloned()
            .collect();
        list.sort_by_key(|entry| (entry.at_ms, entry.id));
        list
    }

    fn with_experiment<T>(
        &self,
        id: i64,
        f: impl FnOnce(&mut ExperimentSummary, &String) -> T,
    ) -> Result<T, OperationError> {
        let mut memory = self.memory.lock();
        let (summary, spec) = memory
            .experiments
            .iter_mut()
            .find(|(summary, _)| summary.id == id)
            .ok_or(OperationError::NotFound(id))?;
        Ok(f(summary, spec))
    }
}

fn ready<T: Send + 'static>(value: Result<T, OperationError>) -> OperationFuture<'static, T> {
    Box::pin(futures::future::ready(value))
}

impl Operations for MemoryOperations {
    fn experiments(&self) -> OperationFuture<'_, Vec<ExperimentSummary>> {
        let list = self
            .memory
            .lock()
            .experiments
            .iter()
            .map(|(summary, _)| summary.clone())
            .collect();
        ready(Ok(list))
    }

    fn create(&self, spec_toml: String) -> OperationFuture<'_, i64> {
        self.record(Call::Create(spec_toml.clone()));
        let parsed: Result<toml::Table, _> = spec_toml.parse();
        let name = match parsed {
            Err(error) => return ready(Err(OperationError::Invalid(format!("spec: {error}")))),
            Ok(table) => match table.get("name").and_then(|name| name.as_str()) {
                Some(name) => name.to_owned(),
                None => return ready(Err(OperationError::Invalid("name: missing".into()))),
            },
        };
        let mut memory = self.memory.lock();
        let id = memory.experiments.len() as i64 + 1;
        memory.experiments.push((
            ExperimentSummary {
                id,
                name,
                status: ExperimentStatus::Pending,
                planned_runs: 4,
                finished_runs: Some(0),
                created_at_ms: 0,
                started_at_ms: None,
                finished_at_ms: None,
                scheduled_at_ms: None,
                abort_reason: None,
            },
            spec_toml,
        ));
        ready(Ok(id))
    }

    fn spec(&self, id: i64) -> OperationFuture<'_, String> {
        ready(self.with_experiment(id, |_, spec| spec.clone()))
    }

    fn start(&self, id: i64, at_ms: Option<i64>) -> OperationFuture<'_, ()> {
        self.record(Call::Start(id, at_ms));
        ready(self.with_experiment(id, |summary, _| {
            summary.status = if at_ms.is_some() {
                ExperimentStatus::Scheduled
            } else {
                ExperimentStatus::Running
            };
            summary.scheduled_at_ms = at_ms;
        }))
    }

    fn abort(&self, id: i64) -> OperationFuture<'_, ()> {
        self.record(Call::Abort(id));
        ready(self.with_experiment(id, |summary, _| summary.status = ExperimentStatus::Aborted))
    }

    fn results(&self, id: i64) -> OperationFuture<'_, Results> {
        let annotations = self.annotations_of(id);
        let rounds = self.memory.lock().rounds.unwrap_or(2);
        ready(self.with_experiment(id, |summary, _| Results {
            experiment: summary.clone(),
            annotations,
            metrics: vec!["availability".into()],
            conditions: vec![ConditionResult {
                label: "error@1.00/enforce".into(),
                fault_kind: "error".into(),
                fault_rate: 1.0,
                breaker_mode: "enforce".into(),
                runs: rounds,
                cells: vec![Some(Cell {
                    mean: 0.5,
                    half_width: (rounds >= 2).then_some(0.1),
                    n: rounds,
                })],
            }],
            verdicts: Vec::new(),
            predictions: vec![predicted_opens()],
            not_measured: Vec::new(),
            runs: vec![super::RunLine {
                id: 1,
                position: 1,
                condition: "error@1.00/enforce".into(),
                round: 1,
                status: Status::Finished,
            }],
            charts: Vec::new(),
        }))
    }

    fn report(&self, id: i64, format: controller::report::Format) -> OperationFuture<'_, String> {
        use controller::report::Format;
        self.record(Call::Report(id, format));
        ready(self.with_experiment(id, |_, _| match format {
            Format::Csv => "condition,availability\nerror@1.00/enforce,0.5\n".into(),
            Format::Json => "{}".into(),
            Format::Md => "# Experiment\n".into(),
        }))
    }

    /// Run 1 of any experiment: an empty timeline of 10 s (no transition, sample or fault).
    fn run_timeline(
        &self,
        experiment: i64,
        run: i64,
    ) -> OperationFuture<'_, Option<super::RunTimeline>> {
        let exists = self.with_experiment(experiment, |_, _| ());
        ready(exists.map(|()| {
            (run == 1).then(|| super::RunTimeline {
                run: super::RunLine {
                    id: 1,
                    position: 1,
                    condition: "error@1.00/enforce".into(),
                    round: 1,
                    status: Status::Finished,
                },
                started_at_ms: 1_000_000,
                measured_from_ms: 1_002_000,
                ended_at_ms: 1_010_000,
                transitions: Vec::new(),
                samples: Vec::new(),
                faults: Vec::new(),
            })
        }))
    }

    /// Run 1 of any experiment: the results' one figure.
    fn run_figures(
        &self,
        experiment: i64,
        run: i64,
    ) -> OperationFuture<'_, Option<super::RunFigures>> {
        let exists = self.with_experiment(experiment, |_, _| ());
        ready(exists.map(|()| {
            (run == 1).then(|| super::RunFigures {
                run_id: 1,
                condition: "error@1.00/enforce".into(),
                round: 1,
                figures: [("availability".to_owned(), 0.5)].into(),
            })
        }))
    }

    fn halt(&self) -> OperationFuture<'_, ()> {
        self.record(Call::Halt);
        ready(Ok(()))
    }

    fn set_fault(&self, request: FaultRequest) -> OperationFuture<'_, ()> {
        self.record(Call::SetFault(request));
        ready(Ok(()))
    }

    fn clear_fault(&self, target: ServiceId, id: String) -> OperationFuture<'_, ()> {
        self.record(Call::ClearFault(target, id));
        ready(Ok(()))
    }

    /// The faults set and not cleared since the last halt, as an agent would list them (nothing injected yet).
    fn faults(&self) -> OperationFuture<'_, super::AgentFaults> {
        let mut faults: Vec<agent::api::FaultView> = Vec::new();
        for call in self.calls() {
            match call {
                Call::SetFault(request) => {
                    faults.retain(|fault| fault.id != request.id);
                    let lease_ms = request
                        .fault
                        .lease()
                        .map_or(0, |lease| lease.as_millis() as u64);
                    faults.push(agent::api::FaultView {
                        id: request.id,
                        fault: request.fault,
                        lease_ms,
                        expires_in_ms: lease_ms,
                        injected: 0,
                    });
                }
                Call::ClearFault(_, id) => faults.retain(|fault| fault.id != id),
                Call::Halt => faults.clear(),
                _ => {}
            }
        }
        ready(Ok(super::AgentFaults {
            target: boutique::ServiceName::Payment.into(),
            faults,
        }))
    }

    /// The stored spec's criteria, each unevaluable (the memory stores no runs); none is a conflict.
    fn validate(&self, id: i64) -> OperationFuture<'_, controller::stats::ValidationReport> {
        ready(
            self.with_experiment(id, |_, spec| controller::stats::criteria_of_spec(spec))
                .and_then(|criteria| {
                    let criteria =
                        criteria.map_err(|error| OperationError::Invalid(error.to_string()))?;
                    if criteria.is_empty() {
                        return Err(OperationError::Conflict(format!(
                            "validate: the spec of experiment {id} has no [[validate]] criteria"
                        )));
                    }
                    let results = criteria
                        .into_iter()
                        .map(|criterion| controller::stats::CriterionResult {
                            criterion,
                            outcome: controller::stats::CriterionOutcome::Unevaluable,
                            condition: None,
                            summary: None,
                            explanation: "the in-memory operations store no runs".into(),
                        })
                        .collect();
                    Ok(controller::stats::ValidationReport { results })
                }),
        )
    }

    fn set_breaker_mode(&self, request: super::ModeRequest) -> OperationFuture<'_, ()> {
        self.record(Call::BreakerMode(request));
        ready(Ok(()))
    }

    fn set_load(&self, load: Option<super::LoadRequest>) -> OperationFuture<'_, ()> {
        self.record(Call::Load(load));
        ready(Ok(()))
    }

    fn services(&self) -> Vec<ServiceId> {
        use boutique::ServiceName;
        [
            ServiceName::Frontend,
            ServiceName::Checkout,
            ServiceName::Payment,
        ]
        .map(ServiceId::from)
        .into()
    }

    /// Two replicas of checkout and one payment, all running.
    fn containers(&self) -> OperationFuture<'_, Option<Vec<super::ContainerLine>>> {
        let line = |replica: &str, service: &str, name: &str| super::ContainerLine {
            replica: replica.into(),
            service: service.into(),
            name: name.into(),
            state: "running".into(),
        };
        ready(Ok(Some(vec![
            line("checkout", "checkout", "shop_checkout_1"),
            line("checkout#2", "checkout", "shop_checkout_2"),
            line("payment", "payment", "shop_payment_1"),
        ])))
    }

    /// Records the request; its id is the number of container faults asked for so far.
    fn set_container_fault(
        &self,
        request: super::ContainerFaultRequest,
    ) -> OperationFuture<'_, i64> {
        self.record(Call::ContainerFault(request));
        let count = self
            .calls()
            .iter()
            .filter(|call| matches!(call, Call::ContainerFault(_)))
            .count();
        ready(Ok(count as i64))
    }

    fn clear_container_fault(&self, id: i64) -> OperationFuture<'_, ()> {
        self.record(Call::ClearContainerFault(id));
        ready(Ok(()))
    }

    /// Validates like the store; an unnamed experiment is the one whose status is `running`, if any.
    fn annotate(&self, request: AnnotationRequest) -> OperationFuture<'_, AnnotationEntry> {
        self.record(Call::Annotate(request.clone()));
        let checked = annotation_text(&request.text).and_then(|text| {
            annotation_author(request.author.as_deref()).map(|author| (text, author))
        });
        let (text, author) = match checked {
            Ok(checked) => checked,
            Err(error) => return ready(Err(OperationError::Invalid(error.to_string()))),
        };
        let mut memory = self.memory.lock();
        let experiment_id = match request.experiment_id {
            Some(id) if !memory.experiments.iter().any(|(e, _)| e.id == id) => {
                return ready(Err(OperationError::NotFound(id)));
            }
            Some(id) => Some(id),
            None => memory
                .experiments
                .iter()
                .find(|(summary, _)| summary.status == ExperimentStatus::Running)
                .map(|(summary, _)| summary.id),
        };
        let entry = AnnotationEntry {
            id: memory.annotations.len() as i64 + 1,
            at_ms: request.at_ms,
            text,
            author,
            experiment_id,
            run_id: None,
        };
        memory.annotations.push(entry.clone());
        ready(Ok(entry))
    }

    fn annotations(&self, experiment: i64) -> OperationFuture<'_, Vec<AnnotationEntry>> {
        let exists = self.with_experiment(experiment, |_, _| ());
        ready(exists.map(|()| self.annotations_of(experiment)))
    }

    fn latest_annotations(&self, limit: usize) -> OperationFuture<'_, Vec<AnnotationEntry>> {
        let mut list = self.memory.lock().annotations.clone();
        list.sort_by_key(|entry| (entry.at_ms, entry.id));
        let skip = list.len().saturating_sub(limit);
        ready(Ok(list.split_off(skip)))
    }
}

/// A stored prediction of the one condition: 56–60 opens of Checkout's breaker on Payment and 50–55 of the
/// frontend's on Checkout predicted at 55–58 checkouts/s, none measured yet.
fn predicted_opens() -> controller::stats::PredictedCondition {
    use controller::predict::{Band, BreakerPrediction, Prediction};
    let band = |low: f64, high: f64| Band {
        low,
        mean: (low + high) / 2.0,
        high,
        band_low: low,
        band_high: high,
        simulations: 40,
    };
    controller::stats::PredictedCondition::of(
        Prediction {
            condition: 0,
            breaker: "checkout->payment".into(),
            not_modelled: Vec::new(),
            breaker_opens: band(56.0, 60.0),
            rejected: band(0.0, 0.0),
            checkout_failure: band(1.0, 1.0),
            injected_rate: 1.0,
            time_open_s: band(1700.0, 1750.0),
            opens_bound: Some(62),
            breaker_rejected: None,
            upstream: vec![BreakerPrediction {
                breaker: "frontend->checkout".into(),
                opens: band(50.0, 55.0),
                time_open_s: band(1650.0, 1720.0),
                rejected: band(0.0, 0.0),
                opens_bound: Some(62),
            }],
            opens_estimate: Some(57.98),
            pool: None,
            checkout_rate: Some(band(55.0, 58.0)),
            at_measured_load: None,
        },
        "error@1.00/enforce".into(),
        None,
        None,
    )
}
