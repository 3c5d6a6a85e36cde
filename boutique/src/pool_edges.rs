//! When a worker pool was full: the pure record of its full / not-full edges, stamped in Unix milliseconds.
//!
//! A pool sampled once a second cannot show a fill that takes 1.28 s (seed 001's 256 workers at 200 hanging
//! calls a second), so the pool keeps its own account: every time it becomes full (every worker taken) or stops
//! being full, with the millisecond it happened, the first "full" since the last reset, counters, and the time
//! spent full. Time is an argument: the caller reads its clock and passes the stamp in.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// How many of the most recent edges [`Fullness`] keeps (older ones are dropped, the counters keep counting).
pub const RECENT_EDGES: usize = 32;

/// The pool became full (`full: true`) or stopped being full (`full: false`) at `at_ms` (Unix milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullEdge {
    pub at_ms: u64,
    pub full: bool,
}

/// What [`Fullness`] tells of the pool at one instant (part of the `/_pool` body).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FullnessStats {
    /// When these figures were taken (Unix milliseconds).
    #[serde(default)]
    pub at_ms: u64,
    /// Every worker is taken now.
    #[serde(default)]
    pub full: bool,
    /// Times the pool became full since the last reset.
    #[serde(default)]
    pub fills: u64,
    /// When the pool first became full since the last reset (Unix milliseconds).
    #[serde(default)]
    pub first_full_ms: Option<u64>,
    /// Milliseconds spent full since the last reset, the current full stretch up to `at_ms` included.
    #[serde(default)]
    pub full_ms: u64,
    /// The most recent edges, oldest first, at most [`RECENT_EDGES`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub edges: Vec<FullEdge>,
}

/// The running account of a pool's full stretches.
#[derive(Debug, Clone, Default)]
pub struct Fullness {
    full: bool,
    /// Start of the current full stretch, while full.
    since_ms: u64,
    fills: u64,
    first_full_ms: Option<u64>,
    /// Milliseconds of the full stretches that ended.
    closed_ms: u64,
    edges: VecDeque<FullEdge>,
}

impl Fullness {
    /// Takes note that the pool is `full` (or not) at `at_ms`; records an edge when that changed.
    pub fn observe(&mut self, full: bool, at_ms: u64) {
        if full == self.full {
            return;
        }
        self.full = full;
        if full {
            self.since_ms = at_ms;
            self.fills += 1;
            self.first_full_ms.get_or_insert(at_ms);
        } else {
            self.closed_ms += at_ms.saturating_sub(self.since_ms);
        }
        if self.edges.len() == RECENT_EDGES {
            self.edges.pop_front();
        }
        self.edges.push_back(FullEdge { at_ms, full });
    }

    /// Forgets everything but whether the pool is full now, which counts from `at_ms` (a fill if it is full).
    pub fn reset(&mut self, at_ms: u64) {
        let full = self.full;
        *self = Fullness::default();
        self.observe(full, at_ms);
    }

    /// The figures at `at_ms`.
    pub fn stats(&self, at_ms: u64) -> FullnessStats {
        let open_ms = if self.full {
            at_ms.saturating_sub(self.since_ms)
        } else {
            0
        };
        FullnessStats {
            at_ms,
            full: self.full,
            fills: self.fills,
            first_full_ms: self.first_full_ms,
            full_ms: self.closed_ms + open_ms,
            edges: self.edges.iter().copied().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_counters_and_full_time_follow_the_observations() {
        let mut fullness = Fullness::default();
        fullness.observe(false, 1_000);
        assert_eq!(
            fullness.stats(1_000),
            FullnessStats {
                at_ms: 1_000,
                ..FullnessStats::default()
            }
        );
        fullness.observe(true, 1_280);
        fullness.observe(true, 1_500);
        let during = fullness.stats(2_000);
        assert!(during.full);
        assert_eq!(during.first_full_ms, Some(1_280));
        assert_eq!(during.full_ms, 720, "the open stretch counts up to now");
        fullness.observe(false, 4_280);
        fullness.observe(true, 14_000);
        fullness.observe(false, 14_100);
        let after = fullness.stats(20_000);
        assert_eq!(after.fills, 2);
        assert_eq!(after.first_full_ms, Some(1_280));
        assert_eq!(after.full_ms, 3_000 + 100);
        assert_eq!(
            after.edges,
            [
                (1_280, true),
                (4_280, false),
                (14_000, true),
                (14_100, false)
            ]
            .map(|(at_ms, full)| FullEdge { at_ms, full })
        );
    }

    #[test]
    fn only_the_most_recent_edges_are_kept() {
        let mut fullness = Fullness::default();
        for i in 0..(RECENT_EDGES as u64 + 10) {
            fullness.observe(i % 2 == 0, i * 10);
        }
        let stats = fullness.stats(10_000);
        assert_eq!(stats.edges.len(), RECENT_EDGES);
        assert_eq!(stats.edges[0].at_ms, 100);
        assert_eq!(stats.fills, (RECENT_EDGES as u64 + 10) / 2);
        assert_eq!(stats.first_full_ms, Some(0));
    }

    #[test]
    fn a_reset_starts_a_new_account_from_the_current_state() {
        let mut fullness = Fullness::default();
        fullness.observe(true, 100);
        fullness.observe(false, 200);
        fullness.reset(5_000);
        assert_eq!(
            fullness.stats(6_000),
            FullnessStats {
                at_ms: 6_000,
                ..FullnessStats::default()
            }
        );
        fullness.observe(true, 7_000);
        fullness.reset(8_000);
        let stats = fullness.stats(9_000);
        assert_eq!(
            (stats.fills, stats.first_full_ms, stats.full_ms),
            (1, Some(8_000), 1_000)
        );
    }

    #[test]
    fn old_readers_parse_and_new_fields_default() {
        let stats: FullnessStats = serde_json::from_str("{}").unwrap();
        assert_eq!(stats, FullnessStats::default());
    }
}
