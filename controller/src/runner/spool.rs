//! Bounded memory for a run's transitions, whatever their rate (issue 26, item 2): a transition is kept only
//! while a breaker stays within [`MAX_PER_BREAKER_SECOND`] transitions in a second of its own time — beyond that
//! it is counted, not stored one by one — and what is kept is written to the store while the run goes
//! ([`spool`]): once a second, every kept transition stamped more than [`SETTLE_MS`] ago (later ones may still
//! arrive out of order) goes into the run's `transitions` table in one transaction, in time order. The run's end
//! writes the rest after them. Should the store fall behind, at most [`MAX_PENDING`] transitions wait in memory;
//! the ones beyond are counted too. What was counted instead of kept is in the run's event log
//! (`transitions:not_stored`, one event per breaker, with the count and why).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::clock::now_ms;
use crate::store::{RunEvent, RunEventRecord, RunId, Store, TransitionRecord};
use crate::task::OwnedTask;

/// Transitions of one breaker kept per second of its own clock; the ones beyond are counted. A breaker cannot
/// usefully change state more often: even a 50 ms open window gives 40 transitions a second only while
/// it opens and closes back to back, and the timeline cannot draw more.
pub const MAX_PER_BREAKER_SECOND: u32 = 20;
/// Transitions waiting in memory for the store, at most (about 300 bytes each).
pub const MAX_PENDING: usize = 200_000;
/// How recent a transition may be and still wait for the next write: later ones may still arrive before it.
pub const SETTLE_MS: i64 = 2_000;
/// How often the spool writes.
pub const SPOOL_EVERY: Duration = Duration::from_secs(1);

/// Which breaker a transition belongs to: its service and name, and its source for a foreign one.
type BreakerKey = (Option<String>, String, String);

fn key(record: &TransitionRecord) -> BreakerKey {
    let source = record.source.clone();
    (source, record.service.clone(), record.breaker.clone())
}

/// Why a transition was counted instead of kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NotStored {
    /// Its breaker had already changed [`MAX_PER_BREAKER_SECOND`] times in that second.
    OverCeiling,
    /// [`MAX_PENDING`] transitions were already waiting for the store.
    StoreBehind,
}

impl NotStored {
    fn describe(self) -> String {
        match self {
            NotStored::OverCeiling => {
                format!(
                    "over the ceiling of {MAX_PER_BREAKER_SECOND} transitions a second per breaker"
                )
            }
            NotStored::StoreBehind => "the store fell behind".to_owned(),
        }
    }
}

/// The transitions a run keeps: what waits for the store, what was written, what was counted instead.
#[derive(Debug, Default)]
pub struct Transitions {
    pending: Vec<TransitionRecord>,
    /// How many were written to the store already.
    pub stored: u64,
    /// Per breaker: the second (ms / 1000) last seen and how many were kept in it.
    seconds: HashMap<BreakerKey, (i64, u32)>,
    not_stored: BTreeMap<(BreakerKey, NotStored), u64>,
}

impl Transitions {
    /// Keeps `record` unless its breaker is over the ceiling in its second or too many wait for the store.
    pub fn admit(&mut self, record: TransitionRecord) {
        let key = key(&record);
        let second = record.at_ms.div_euclid(1_000);
        let why = {
            let seen = self.seconds.entry(key.clone()).or_insert((second, 0));
            if seen.0 != second {
                *seen = (second, 0);
            }
            if seen.1 >= MAX_PER_BREAKER_SECOND {
                Some(NotStored::OverCeiling)
            } else if self.pending.len() >= MAX_PENDING {
                Some(NotStored::StoreBehind)
            } else {
                seen.1 += 1;
                None
            }
        };
        match why {
            None => self.pending.push(record),
            Some(why) => *self.not_stored.entry((key, why)).or_default() += 1,
        }
    }

    /// How many wait for the store.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Takes, in time order, the waiting transitions stamped before `horizon_ms` (all of them for `None`).
    pub fn take_settled(&mut self, horizon_ms: Option<i64>) -> Vec<TransitionRecord> {
        let (mut settled, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|record| horizon_ms.is_none_or(|horizon| record.at_ms < horizon));
        self.pending = waiting;
        settled.sort_by_key(|record| (record.at_ms, record.seq));
        settled
    }

    /// Puts back what a failed write took (it is tried again at the next one).
    fn put_back(&mut self, mut batch: Vec<TransitionRecord>) {
        batch.append(&mut self.pending);
        self.pending = batch;
    }

    /// What was counted instead of kept, as the run's event log stores it (stamped `at_ms`).
    pub fn not_stored_events(&self, at_ms: i64) -> Vec<RunEventRecord> {
        (self.not_stored.iter())
            .map(
                |(((source, service, breaker), why), count)| RunEventRecord {
                    at_ms,
                    fault_id: String::new(),
                    event: RunEvent::TransitionsNotStored {
                        service: service.clone(),
                        breaker: breaker.clone(),
                        source: source.clone(),
                        count: *count,
                        why: why.describe(),
                    },
                },
            )
            .collect()
    }
}

/// Writes the settled `transitions` transitions to `run` in `store` once a second until `stop` is cancelled; join the
/// task before the run's end writes the rest (a write in progress is finished, never cut).
pub fn spool(
    transitions: Arc<Mutex<Transitions>>,
    store: Store,
    run: RunId,
    stop: CancellationToken,
) -> OwnedTask<()> {
    OwnedTask::spawn(async move {
        let mut tick = tokio::time::interval(SPOOL_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let batch = transitions.lock().take_settled(Some(now_ms() - SETTLE_MS));
            if batch.is_empty() {
                continue;
            }
            match store.append_transitions(run, &batch).await {
                Ok(()) => transitions.lock().stored += batch.len() as u64,
                Err(error) => {
                    tracing::warn!(%error, run = run.0, "transitions not written yet; tried again");
                    transitions.lock().put_back(batch);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use breaker::{Reason, State};

    fn transition(breaker: &str, at_ms: i64, seq: i64) -> TransitionRecord {
        TransitionRecord {
            at_ms,
            service: "checkout".into(),
            breaker: breaker.into(),
            from: State::Closed,
            to: State::Open,
            reason: Reason::Forced,
            detail: Default::default(),
            seq,
            shadow: false,
            source: None,
        }
    }

    #[test]
    fn a_breaker_over_its_ceiling_is_counted_and_the_others_kept() {
        let mut kept = Transitions::default();
        // 100 transitions of one breaker inside one second, 5 of another, then the first one's next second.
        for i in 0..100 {
            kept.admit(transition("a", 1_000 + i, i));
        }
        for i in 0..5 {
            kept.admit(transition("b", 1_500 + i, i));
        }
        kept.admit(transition("a", 2_000, 100));
        assert_eq!(kept.pending(), MAX_PER_BREAKER_SECOND as usize + 5 + 1);
        let events = kept.not_stored_events(9);
        assert_eq!(events.len(), 1, "{events:?}");
        match &events[0].event {
            RunEvent::TransitionsNotStored { breaker, count, .. } => {
                assert_eq!((breaker.as_str(), *count), ("a", 80))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn settled_transitions_leave_in_time_order_and_recent_ones_wait() {
        let mut kept = Transitions::default();
        for (at, seq) in [(3_000, 3), (1_000, 1), (5_000, 5), (2_000, 2)] {
            kept.admit(transition(&format!("b{seq}"), at, seq));
        }
        let settled: Vec<i64> = (kept.take_settled(Some(3_500)).iter())
            .map(|r| r.at_ms)
            .collect();
        assert_eq!(settled, [1_000, 2_000, 3_000]);
        assert_eq!(kept.pending(), 1);
        assert_eq!(kept.take_settled(None).len(), 1);
        assert_eq!(kept.pending(), 0);
    }

    #[test]
    fn past_the_pending_bound_transitions_are_counted() {
        let mut kept = Transitions::default();
        // Every breaker at one transition a second: only the pending bound stops them.
        for i in 0..(MAX_PENDING + 7) {
            kept.admit(transition(&format!("b{i}"), 1_000, 0));
        }
        assert_eq!(kept.pending(), MAX_PENDING);
        let counted: u64 = (kept.not_stored_events(0).iter())
            .map(|record| match record.event {
                RunEvent::TransitionsNotStored { count, .. } => count,
                _ => 0,
            })
            .sum();
        assert_eq!(counted, 7);
    }

    /// The spool writes what settled while the run goes and leaves the recent ones; joined after a stop, it
    /// has finished its last write, and what it left is what the run's end writes after it.
    #[tokio::test]
    async fn the_spool_writes_settled_transitions_while_the_run_goes() {
        let file = crate::test_support::TempStore::new("spool");
        let store = file.open().await;
        let run = crate::test_support::started_run(&store).await;
        let now = now_ms();
        let transitions = Arc::new(Mutex::new(Transitions::default()));
        {
            let mut kept = transitions.lock();
            for i in 0..50 {
                kept.admit(transition(&format!("old{i}"), now - 10_000 + i, i));
            }
            kept.admit(transition("recent", now + 60_000, 99));
        }
        let stop = CancellationToken::new();
        let task = spool(Arc::clone(&transitions), store.clone(), run, stop.clone());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while transitions.lock().stored < 50 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        stop.cancel();
        assert_eq!(task.join().await, None);
        let stored = store.transitions(run).await.unwrap();
        let seqs: Vec<i64> = stored.iter().map(|t| t.seq).collect();
        assert_eq!(seqs, (0..50).collect::<Vec<i64>>());
        let rest = transitions.lock().take_settled(None);
        assert_eq!(rest.iter().map(|t| t.seq).collect::<Vec<_>>(), [99]);
    }
}
