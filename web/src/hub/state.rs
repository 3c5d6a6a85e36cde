//! What a late joiner sees first: the latest breaker states and the history of the live window (every run's,
//! experiments' and game day's transitions, seconds, faults, notes and mode switches of the last hour), kept
//! bounded in count, age and bytes so the snapshot never grows with the length of an experiment. A reload
//! draws what the page drew before it: the window's content comes from here alone.

use std::collections::BTreeMap;

use breaker::{State, TransitionEvent};
use serde::Serialize;

use super::event::{
    Annotation, BreakerBoard, FaultChange, LiveEvent, LiveSample, ModeChange, RunProgress,
};
use super::status::{ExperimentStatus, FaultChangeEvent};
use super::window::{Window, WindowLimit};

/// How much history a snapshot carries: per list a count, and for all of them the window's age; the
/// seconds' list (the large one) and each list of events capped in bytes as well. In the snapshot too, so the
/// page keeps no more than the hub does.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct HistoryLimits {
    pub transitions: usize,
    pub samples: usize,
    pub faults: usize,
    pub annotations: usize,
    pub mode_changes: usize,
    /// How far back the window reaches behind the newest time seen (the live page's longest range).
    pub window_ms: u64,
    /// The seconds' JSON at most.
    pub sample_bytes: usize,
    /// Each list of events' JSON at most.
    pub event_bytes: usize,
}

/// The live page's longest time range: an hour.
pub const WINDOW_MS: u64 = 60 * 60 * 1000;

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            transitions: 5_000,
            // A second each over the window.
            samples: (WINDOW_MS / 1000) as usize,
            faults: 2_000,
            annotations: 500,
            mode_changes: 500,
            window_ms: WINDOW_MS,
            // An hour of the Online Boutique mix's seconds (about 2.8 kB each) fits.
            sample_bytes: 10 << 20,
            event_bytes: 1 << 20,
        }
    }
}

impl HistoryLimits {
    fn of(&self, count: usize, bytes: usize) -> WindowLimit {
        WindowLimit {
            count,
            age_ms: self.window_ms,
            bytes,
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
#[derive(Debug, Clone, Serialize)]
pub struct LiveState {
    /// Latest state per breaker name.
    pub breakers: BTreeMap<String, BreakerLatest>,
    /// Transitions into `open` since the current run's warmup ended (shadow ones included, a forced-open
    /// mode's not), as the results' `breaker_opens` counts them; between runs (a game day), every one since
    /// the last run.
    pub opens: u64,
    /// Transitions into `open` during the current run's warmup (the results leave them out).
    pub warmup_opens: u64,
    pub transitions: Window<TransitionEvent>,
    pub samples: Window<LiveSample>,
    pub faults: Window<FaultChange>,
    /// Faults in force, by id.
    pub active_faults: BTreeMap<String, FaultChange>,
    pub annotations: Window<Annotation>,
    pub progress: Option<RunProgress>,
    /// Every breaker of the testbed as last sampled (lanes and tiles exist before any transition).
    pub board: Option<BreakerBoard>,
    /// Mode switches, oldest first (marked on the timeline).
    pub mode_changes: Window<ModeChange>,
    /// The game day's background load (`None` or 0 users: off).
    pub load: Option<super::event::GameDayLoad>,
    /// The compose project's containers in their latest second (`None`: no engine, or not sampled yet).
    pub containers: Option<super::event::ContainerStats>,
    /// Where the running (or last) experiment's users run, and its load workers (`None`: no experiment ran).
    pub workers: Option<super::event::LoadWorkers>,
    /// Experiment status changes since the dashboard started, for the events list.
    pub experiment_changes: Window<super::event::ExperimentChange>,
    /// How far back the histories reach (the page's longest time range).
    pub window_ms: u64,
    /// What the histories keep at most.
    pub history_limits: HistoryLimits,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState::new(HistoryLimits::default())
    }
}

impl LiveState {
    pub fn new(limits: HistoryLimits) -> Self {
        LiveState {
            breakers: BTreeMap::new(),
            opens: 0,
            warmup_opens: 0,
            transitions: Window::new(limits.of(limits.transitions, limits.event_bytes)),
            samples: Window::new(limits.of(limits.samples, limits.sample_bytes)),
            faults: Window::new(limits.of(limits.faults, limits.event_bytes)),
            active_faults: BTreeMap::new(),
            annotations: Window::new(limits.of(limits.annotations, limits.event_bytes)),
            progress: None,
            board: None,
            mode_changes: Window::new(limits.of(limits.mode_changes, limits.event_bytes)),
            load: None,
            containers: None,
            workers: None,
            experiment_changes: Window::new(limits.of(limits.annotations, limits.event_bytes)),
            window_ms: limits.window_ms,
            history_limits: limits,
        }
    }

    /// Ages every history to the window behind `now_ms`.
    fn age_to(&mut self, now_ms: u64) {
        self.transitions.age_to(now_ms);
        self.samples.age_to(now_ms);
        self.faults.age_to(now_ms);
        self.annotations.age_to(now_ms);
        self.mode_changes.age_to(now_ms);
        self.experiment_changes.age_to(now_ms);
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
                // A forced-open mode's open is the operator's, not a trip: not counted.
                if transition.to == State::Open && transition.reason != breaker::Reason::Forced {
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
                self.transitions.push(transition.clone());
            }
            LiveEvent::Sample(sample) => {
                self.samples.push(sample.clone());
            }
            LiveEvent::Progress(progress) => {
                let new_run = self.progress.as_ref().is_none_or(|current| {
                    current.experiment_id != progress.experiment_id || current.run != progress.run
                });
                if new_run {
                    // A new run counts its own opens; the window keeps what happened before it (the earlier
                    // runs' states, faults and seconds, and the fault this run put just before it started).
                    self.opens = 0;
                    self.warmup_opens = 0;
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
                self.faults.push(change.clone());
            }
            LiveEvent::Annotation(annotation) => {
                self.annotations.push(annotation.clone());
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
                self.experiment_changes.push(change.clone());
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
                self.age_to(board.at_ms);
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
                self.mode_changes.push(change.clone());
            }
        }
    }
}
