//! The breaker board: every breaker of the testbed once a second, from each service's `/_breakers` snapshots
//! and its running config (`GET /_admin/breakers`), with the counters of the last [`TILE_WINDOW_S`] seconds and
//! the mode switches seen between two samples.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use breaker::{BreakerConfig, BreakerSnapshot, Mode, Probes};

use crate::hub::{BreakerBoard, BreakerTile, ModeChange, TILE_WINDOW_S, TileConfig, TileWindow};

/// `30s`, `1.5s`, `250ms`.
fn short_duration(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms == 0 || ms % 1000 != 0 && ms < 1000 {
        format!("{ms}ms")
    } else if ms % 60_000 == 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

fn percent(fraction: f64) -> String {
    format!("{:.0} %", fraction * 100.0)
}

/// A breaker config as a tile shows it.
pub(super) fn describe_config(config: &BreakerConfig) -> TileConfig {
    let trip = config.trip();
    let mut detectors = Vec::new();
    if let Some(count) = trip.consecutive_failures() {
        detectors.push(format!("{count} failures in a row"));
    }
    if let Some(rate) = trip.failure_rate() {
        detectors.push(format!(
            "failures ≥ {} of ≥ {} calls in {}",
            percent(rate.threshold()),
            rate.min_calls(),
            short_duration(rate.window())
        ));
    }
    if let Some(slow) = trip.slow_call() {
        detectors.push(format!(
            "calls ≥ {} make ≥ {} of ≥ {} in {}",
            short_duration(slow.duration()),
            percent(slow.rate()),
            slow.min_calls(),
            short_duration(slow.window())
        ));
    }
    let open = config.open();
    let open_window = if open.backoff() > 1.0 {
        format!(
            "{} ×{} up to {}",
            short_duration(open.base()),
            open.backoff(),
            short_duration(open.max())
        )
    } else {
        short_duration(open.base())
    };
    let probes = match config.half_open().probes() {
        Probes::All => "every caller".to_owned(),
        Probes::Limited(count) if count.get() == 1 => "1 probe".to_owned(),
        Probes::Limited(count) => format!("{count} probes"),
    };
    TileConfig {
        detector: if detectors.is_empty() {
            "none".into()
        } else {
            detectors.join(" or ")
        },
        open_window,
        probes: format!(
            "{probes}, {} successes close",
            config.half_open().successes_to_close()
        ),
    }
}

/// One breaker's cumulative counters at one sample.
#[derive(Debug, Clone, Copy)]
struct Totals {
    calls: u64,
    failures: u64,
    rejected: u64,
}

/// Remembers the last samples to turn snapshots into tiles and mode switches.
#[derive(Debug, Default)]
pub(super) struct BoardTracker {
    /// Per breaker, its totals of the last `TILE_WINDOW_S + 1` samples, oldest first.
    history: BTreeMap<String, VecDeque<Totals>>,
    modes: BTreeMap<String, Mode>,
}

impl BoardTracker {
    /// The board for one sample: `snapshots` of every service that answered, `configs` by service.
    pub(super) fn observe(
        &mut self,
        at_ms: u64,
        snapshots: &[BreakerSnapshot],
        configs: &BTreeMap<String, BreakerConfig>,
    ) -> (BreakerBoard, Vec<ModeChange>) {
        let mut changes = Vec::new();
        let mut breakers = Vec::with_capacity(snapshots.len());
        for snapshot in snapshots {
            let counters = &snapshot.counters;
            let totals = Totals {
                calls: counters.successes + counters.failures,
                failures: counters.failures,
                rejected: counters.rejected,
            };
            let history = self.history.entry(snapshot.name.clone()).or_default();
            // Counters restart when a service resets its breakers: the window starts again.
            if history.back().is_some_and(|last| {
                last.calls > totals.calls
                    || last.failures > totals.failures
                    || last.rejected > totals.rejected
            }) {
                history.clear();
            }
            history.push_back(totals);
            while history.len() as u64 > TILE_WINDOW_S + 1 {
                history.pop_front();
            }
            let oldest = history.front().copied().unwrap_or(totals);
            let calls = totals.calls - oldest.calls;
            let failures = totals.failures - oldest.failures;
            let window = TileWindow {
                calls,
                failures,
                rejected: totals.rejected - oldest.rejected,
                failure_rate: (calls > 0).then(|| failures as f64 / calls as f64),
            };
            if let Some(before) = self.modes.insert(snapshot.name.clone(), snapshot.mode)
                && before != snapshot.mode
            {
                changes.push(ModeChange {
                    at_ms,
                    breaker: snapshot.name.clone(),
                    service: snapshot.service.clone(),
                    from: before,
                    to: snapshot.mode,
                });
            }
            breakers.push(BreakerTile {
                name: snapshot.name.clone(),
                service: snapshot.service.clone(),
                state: snapshot.state,
                mode: snapshot.mode,
                config: configs.get(&snapshot.service).map(describe_config),
                calls: totals.calls,
                failures: totals.failures,
                rejected: totals.rejected,
                opens: counters.opens,
                window,
                open_until_ms: snapshot.open_until_ms,
            });
        }
        breakers.sort_by(|a, b| breaker_order(&a.name).cmp(&breaker_order(&b.name)));
        (BreakerBoard { at_ms, breakers }, changes)
    }
}

/// A breaker name's place on the board: its calling service, that service's replica number (`checkout` is 1,
/// `checkout#2` is 2, so `checkout#10` comes after `checkout#9` and every replica after the first), then the
/// rest of the name. The page orders its lanes the same way (`breakerOrder` in `static/runview.js`).
fn breaker_order(name: &str) -> (&str, u32, &str) {
    let (caller, rest) = name.split_once("->").unwrap_or((name, ""));
    let (service, number) = controller::target::split_replica(caller).unwrap_or((caller, 1));
    (service, number, rest)
}

/// A closed breaker `name` (`caller->callee`) of `service` in `mode` with these counters: the tests' snapshot.
#[cfg(test)]
pub(super) fn closed_snapshot(
    service: &str,
    name: &str,
    mode: Mode,
    counters: breaker::Counters,
) -> BreakerSnapshot {
    BreakerSnapshot {
        service: service.to_owned(),
        name: name.to_owned(),
        state: breaker::State::Closed,
        mode,
        counters,
        consecutive_failures: 0,
        probes_in_flight: 0,
        probe_successes: 0,
        trips: 0,
        open_until_ms: None,
        seq: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use breaker::Counters;

    fn snapshot(name: &str, mode: Mode, successes: u64, failures: u64) -> BreakerSnapshot {
        let counters = Counters {
            successes,
            failures,
            rejected: failures / 2,
            ..Counters::default()
        };
        closed_snapshot(name.split("->").next().unwrap(), name, mode, counters)
    }

    #[test]
    fn the_window_counts_the_last_ten_seconds_and_mode_switches_are_reported() {
        let mut tracker = BoardTracker::default();
        let configs = BTreeMap::from([("checkout".to_owned(), BreakerConfig::default())]);
        // Second 0..=14: 10 successes a second; from second 10 on, 10 failures a second too.
        let mut board = None;
        for second in 0..=14u64 {
            let failures = second.saturating_sub(9) * 10;
            let (next, changes) = tracker.observe(
                second * 1000,
                &[snapshot(
                    "checkout->payment",
                    Mode::Enforce,
                    second * 10,
                    failures,
                )],
                &configs,
            );
            assert!(changes.is_empty());
            board = Some(next);
        }
        let tile = &board.expect("a board").breakers[0];
        // Seconds 5..=14: 100 successes, and failures in seconds 10..=14: 50.
        assert_eq!(tile.window.calls, 150);
        assert_eq!(tile.window.failures, 50);
        assert_eq!(tile.window.failure_rate, Some(50.0 / 150.0));
        assert_eq!(tile.calls, 140 + 50);
        let config = tile.config.as_ref().expect("config known");
        assert_eq!(config.detector, "5 failures in a row");
        assert_eq!(config.open_window, "30s");
        assert_eq!(config.probes, "1 probe, 2 successes close");

        let (board, changes) = tracker.observe(
            15_000,
            &[snapshot("checkout->payment", Mode::ForcedOpen, 150, 60)],
            &BTreeMap::new(),
        );
        assert_eq!(
            changes,
            vec![ModeChange {
                at_ms: 15_000,
                breaker: "checkout->payment".into(),
                service: "checkout".into(),
                from: Mode::Enforce,
                to: Mode::ForcedOpen,
            }]
        );
        assert_eq!(
            board.breakers[0].config, None,
            "no config known this second"
        );
    }

    #[test]
    fn reset_counters_restart_the_window() {
        let mut tracker = BoardTracker::default();
        let none = BTreeMap::new();
        tracker.observe(0, &[snapshot("a->b", Mode::Enforce, 100, 100)], &none);
        let (board, _) = tracker.observe(1000, &[snapshot("a->b", Mode::Enforce, 3, 1)], &none);
        assert_eq!(board.breakers[0].window.calls, 0);
        assert_eq!(board.breakers[0].window.failure_rate, None);
    }

    #[test]
    fn configs_read_in_words() {
        let config: BreakerConfig = serde_json::from_value(serde_json::json!({
            "trip": {"failure_rate": {"threshold": 0.5, "window": "10s", "min_calls": 20}},
            "open": {"base": "5s", "backoff": 2.0, "max": "2m"},
            "half_open": {"probes": "all", "successes_to_close": 3}
        }))
        .expect("config");
        let tile = describe_config(&config);
        assert_eq!(tile.detector, "failures ≥ 50 % of ≥ 20 calls in 10s");
        assert_eq!(tile.open_window, "5s ×2 up to 2m");
        assert_eq!(tile.probes, "every caller, 3 successes close");
    }

    #[test]
    fn replicas_of_a_service_stand_together_in_number_order() {
        let mut names = vec![
            "frontend->checkout",
            "checkout#10->payment",
            "checkout#2->payment",
            "checkout->payment",
            "checkout#2->cart",
            "checkout->cart",
        ];
        names.sort_by(|a, b| super::breaker_order(a).cmp(&super::breaker_order(b)));
        assert_eq!(
            names,
            [
                "checkout->cart",
                "checkout->payment",
                "checkout#2->cart",
                "checkout#2->payment",
                "checkout#10->payment",
                "frontend->checkout",
            ]
        );
    }
}
