//! What a late joiner sees first: the latest breaker states and the recent history of the current run,
//! kept bounded so the snapshot never grows with the length of an experiment.

use std::collections::{BTreeMap, VecDeque};

use breaker::{State, TransitionEvent};
use serde::Serialize;

use super::event::{
    Annotation, BreakerBoard, FaultChange, LiveEvent, LiveSample, ModeChange, RunProgress,
};
use super::status::{ExperimentStatus, FaultChangeEvent};

/// How much history a snapshot carries.
#[derive(Debug, Clone, Copy)]
pub struct HistoryLimits {
    pub transitions: usize,
    pub samples: usize,
    pub faults: usize,
    pub annotations: usize,
    pub mode_changes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            transitions: 2_000,
            samples: 900,
            faults: 500,
            annotations: 200,
            mode_changes: 200,
        }
    }
}

/// The latest state of one breaker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakerLatest {
    pub service: String,
    pub state: State,
    pub since_ms: u64,
    pub shadow: bool,
    /// Where a foreign breaker's state came from (`prometheus:<url>`, `push:<library>`); `None` for the
    /// testbed's own. The lane and the tile show it as a badge.
    pub source: Option<String>,
}

/// The dashboard's current picture, folded from events.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveState {
    /// Latest state per breaker name.
    pub breakers: BTreeMap<String, BreakerLatest>,
    /// Transitions into `open` since the current run's warmup ended (shadow ones included), as the results'
    /// `breaker_opens` counts them; between runs (a game day), every one since the last run.
    pub opens: u64,
    /// Transitions into `open` during the current run's warmup (the results leave them out).
    pub warmup_opens: u64,
    pub transitions: VecDeque<TransitionEvent>,
    pub samples: VecDeque<LiveSample>,
    pub faults: VecDeque<FaultChange>,
    /// Faults in force, by id.
    pub active_faults: BTreeMap<String, FaultChange>,
    pub annotations: VecDeque<Annotation>,
    pub progress: Option<RunProgress>,
    /// Every breaker of the testbed as last sampled (lanes and tiles exist before any transition).
    pub board: Option<BreakerBoard>,
    /// Mode switches, oldest first (marked on the timeline).
    pub mode_changes: VecDeque<ModeChange>,
    /// The game day's background load (`None` or 0 users: off).
    pub load: Option<super::event::GameDayLoad>,
    /// The compose project's containers in their latest second (`None`: no engine, or not sampled yet).
    pub containers: Option<super::event::ContainerStats>,
    /// Where the running (or last) experiment's users run, and its load workers (`None`: no experiment ran).
    pub workers: Option<super::event::LoadWorkers>,
    /// Experiment status changes since the dashboard started, for the events list.
    pub experiment_changes: VecDeque<super::event::ExperimentChange>,
    #[serde(skip)]
    limits: HistoryLimits,
}

fn push_bounded<T>(queue: &mut VecDeque<T>, item: T, limit: usize) {
    if limit == 0 {
        return;
    }
    while queue.len() >= limit {
        queue.pop_front();
    }
    queue.push_back(item);
}

impl LiveState {
    pub fn new(limits: HistoryLimits) -> Self {
        LiveState {
            limits,
            ..LiveState::default()
        }
    }

    /// Whether `at_ms` lies in the running run's warmup.
    fn in_warmup(&self, at_ms: u64) -> bool {
        self.progress.as_ref().is_some_and(|progress| {
            progress.phase == ExperimentStatus::Running
                && progress
                    .measured_from_ms
                    .is_some_and(|measured_from| at_ms < measured_from)
        })
    }

    /// Folds one event in.
    pub fn apply(&mut self, event: &LiveEvent) {
        match event {
            LiveEvent::Transition(transition) => {
                if transition.to == State::Open {
                    if self.in_warmup(transition.at_ms) {
                        self.warmup_opens += 1;
                    } else {
                        self.opens += 1;
                    }
                }
                self.breakers.insert(
                    transition.breaker.clone(),
                    BreakerLatest {
                        service: transition.service.clone(),
                        state: transition.to,
                        since_ms: transition.at_ms,
                        shadow: transition.shadow,
                        source: transition.source.clone(),
                    },
                );
                push_bounded(
                    &mut self.transitions,
                    transition.clone(),
                    self.limits.transitions,
                );
            }
            LiveEvent::Sample(sample) => {
                push_bounded(&mut self.samples, sample.clone(), self.limits.samples);
            }
            LiveEvent::Progress(progress) => {
                let new_run = self.progress.as_ref().is_none_or(|current| {
                    current.experiment_id != progress.experiment_id || current.run != progress.run
                });
                if new_run {
                    // A new run starts a new timeline; the latest breaker states stay (they are still true).
                    self.opens = 0;
                    self.warmup_opens = 0;
                    self.transitions.clear();
                    self.samples.clear();
                    self.faults.clear();
                }
                self.progress = Some(progress.clone());
            }
            LiveEvent::Fault(change) => {
                if change.event == FaultChangeEvent::Halted {
                    self.active_faults.clear();
                } else if change.is_active() {
                    self.active_faults
                        .insert(change.fault_id.clone(), change.clone());
                } else {
                    self.active_faults.remove(&change.fault_id);
                }
                push_bounded(&mut self.faults, change.clone(), self.limits.faults);
            }
            LiveEvent::Annotation(annotation) => {
                push_bounded(
                    &mut self.annotations,
                    annotation.clone(),
                    self.limits.annotations,
                );
            }
            LiveEvent::Experiment(change) => {
                // A finished, aborted or failed experiment is not running any more: its last run's phase
                // says so, for the live page and for a page loaded later.
                if let Some(progress) = self.progress.as_mut()
                    && progress.experiment_id == change.experiment_id
                    && change.status.has_ended()
                {
                    progress.phase = change.status;
                    progress.ends_at_ms = None;
                }
                push_bounded(
                    &mut self.experiment_changes,
                    change.clone(),
                    self.limits.annotations,
                );
            }
            LiveEvent::Breakers(board) => {
                for tile in &board.breakers {
                    let latest =
                        self.breakers
                            .entry(tile.name.clone())
                            .or_insert_with(|| BreakerLatest {
                                service: tile.service.clone(),
                                state: tile.state,
                                since_ms: board.at_ms,
                                shadow: false,
                                source: None,
                            });
                    // The sampled state is the truth; a transition that arrives later keeps its own time.
                    if latest.state != tile.state {
                        latest.state = tile.state;
                        latest.since_ms = board.at_ms;
                    }
                }
                self.board = Some(board.clone());
            }
            LiveEvent::Load(load) => {
                self.load = Some(load.clone());
            }
            LiveEvent::Containers(stats) => {
                self.containers = Some(stats.clone());
            }
            LiveEvent::Workers(workers) => {
                self.workers = Some(workers.clone());
            }
            LiveEvent::Mode(change) => {
                push_bounded(
                    &mut self.mode_changes,
                    change.clone(),
                    self.limits.mode_changes,
                );
            }
        }
    }
}
