//! Stop conditions: watches a run's closed seconds and says when the spec's steady-state condition
//! is violated (availability over the last `window` below the threshold), so the run is aborted
//! and its fault cleared. Its reason starts with [`STOP_CONDITION_REASON`]: the stored run is a
//! verdict on its plan position, which a resume does not run again.

use std::collections::VecDeque;

use crate::load::SecondStats;
use crate::spec::StopSpec;
use crate::store::STOP_CONDITION_REASON;

/// Sliding window over the measured seconds of one run.
#[derive(Debug, Clone)]
pub struct StopMonitor {
    threshold: f64,
    window_seconds: usize,
    /// (ok, total) per closed measured second, newest last.
    recent: VecDeque<(u64, u64)>,
}

impl StopMonitor {
    /// `None` when the spec sets no availability threshold.
    pub fn new(stop: &StopSpec) -> Option<Self> {
        let threshold = stop.availability_below?;
        let window_seconds = (stop.window.as_secs_f64().ceil() as usize).max(1);
        Some(StopMonitor {
            threshold,
            window_seconds,
            recent: VecDeque::with_capacity(window_seconds + 1),
        })
    }

    /// Feeds one closed second (warmup seconds are ignored). Returns the abort reason once the
    /// availability over the last `window` seconds (pooled over their requests) is below the
    /// threshold; windows without any completed request do not trigger.
    pub fn observe(&mut self, second: &SecondStats) -> Option<String> {
        if second.warmup {
            return None;
        }
        let outcomes = second.outcomes();
        self.recent.push_back((outcomes.ok, outcomes.total()));
        if self.recent.len() > self.window_seconds {
            self.recent.pop_front();
        }
        if self.recent.len() < self.window_seconds {
            return None;
        }
        let (ok, total) = self
            .recent
            .iter()
            .fold((0, 0), |(ok, total), (o, t)| (ok + o, total + t));
        if total == 0 {
            return None;
        }
        let availability = ok as f64 / total as f64;
        (availability < self.threshold).then(|| {
            format!(
                "{STOP_CONDITION_REASON}availability {availability:.3} below {} over the last {} s (second {})",
                self.threshold, self.window_seconds, second.second
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::load::{EndpointSecond, LatencySummary, OutcomeCounts};

    fn second(second: u64, warmup: bool, ok: u64, failed: u64) -> SecondStats {
        SecondStats {
            second,
            warmup,
            endpoints: vec![EndpointSecond {
                endpoint: 0,
                outcomes: OutcomeCounts {
                    ok,
                    failed,
                    ..OutcomeCounts::default()
                },
                latency: LatencySummary::default(),
                latency_ok: LatencySummary::default(),
                latency_failed: LatencySummary::default(),
                histogram_v2: Vec::new(),
                outcome_histograms_v2: None,
            }],
        }
    }

    fn monitor(threshold: Option<f64>, window_s: u64) -> Option<StopMonitor> {
        StopMonitor::new(&StopSpec {
            availability_below: threshold,
            window: Duration::from_secs(window_s),
        })
    }

    #[test]
    fn no_threshold_no_monitor() {
        assert!(monitor(None, 10).is_none());
    }

    #[test]
    fn fires_only_after_a_full_window_below_the_threshold() {
        let mut m = monitor(Some(0.5), 3).unwrap();
        assert_eq!(m.observe(&second(0, true, 0, 10)), None, "warmup ignored");
        assert_eq!(m.observe(&second(1, false, 1, 9)), None);
        assert_eq!(m.observe(&second(2, false, 1, 9)), None);
        let reason = m.observe(&second(3, false, 1, 9)).unwrap();
        assert!(reason.contains("0.100 below 0.5"), "{reason}");
        // What the store recognises as a stop condition's verdict.
        assert!(reason.starts_with(STOP_CONDITION_REASON), "{reason}");
    }

    #[test]
    fn a_good_second_in_the_window_can_hold_it_up() {
        let mut m = monitor(Some(0.5), 3).unwrap();
        assert_eq!(m.observe(&second(1, false, 0, 10)), None);
        assert_eq!(m.observe(&second(2, false, 30, 0)), None);
        // (0 + 30 + 0) / (10 + 30 + 10) = 0.6: above.
        assert_eq!(m.observe(&second(3, false, 0, 10)), None);
        // The good second slides out: (30 + 0 + 0) / 30... = (30+0+0)/(30+10+10) = 0.6 still.
        assert_eq!(m.observe(&second(4, false, 0, 10)), None);
        // Now only bad seconds remain.
        assert!(m.observe(&second(5, false, 0, 10)).is_some());
    }

    #[test]
    fn silent_windows_do_not_fire() {
        let mut m = monitor(Some(0.9), 2).unwrap();
        let empty = SecondStats {
            second: 1,
            warmup: false,
            endpoints: Vec::new(),
        };
        assert_eq!(m.observe(&empty), None);
        assert_eq!(m.observe(&empty), None);
    }
}
