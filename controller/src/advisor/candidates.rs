//! The search space: every detector the breaker has (consecutive failures; failure rate over a time window with
//! minimum calls; failure rate over the last N calls; slow calls, when a profile hangs), crossed with open windows
//! (fixed or doubling, with jitter when several instances recover together) and half-open policies. Each
//! candidate is a checked [`BreakerConfig`]; a grid larger than `search.max_candidates` is thinned evenly.

use std::time::Duration;

use breaker::{
    BreakerConfig, Probes, RawBreakerConfig, RawFailureRateConfig, RawLastCallsConfig,
    RawSlowCallConfig, RawTripConfig,
};

use crate::advisor::input::{ProfileKind, TuneInput};

const CONSECUTIVE: [u32; 6] = [2, 3, 5, 8, 12, 20];
const THRESHOLDS: [f64; 5] = [0.1, 0.2, 0.3, 0.5, 0.8];
const WINDOWS_S: [u64; 5] = [2, 5, 10, 30, 60];
const MIN_CALLS: [u32; 5] = [5, 10, 20, 50, 100];
const LAST_CALLS: [u32; 5] = [10, 20, 50, 100, 200];
const OPEN_BASE_MS: [u64; 8] = [1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 30_000, 60_000];
const BACKOFF: [f64; 2] = [1.0, 2.0];
/// (probes at once, successes to close).
const HALF_OPEN: [(u32, u32); 3] = [(1, 1), (1, 2), (3, 3)];
/// Growth room of a doubling open window: it caps at eight times its base.
const BACKOFF_CAP: u32 = 8;

/// The detector tables of every candidate.
fn detectors(input: &TuneInput) -> Vec<RawTripConfig> {
    let none = RawTripConfig {
        consecutive_failures: None,
        failure_rate: None,
        last_calls: None,
        slow_call: None,
    };
    let mut trips = Vec::new();
    for k in CONSECUTIVE {
        trips.push(RawTripConfig {
            consecutive_failures: Some(k),
            ..none.clone()
        });
    }
    for threshold in THRESHOLDS {
        for window_s in WINDOWS_S {
            for min_calls in MIN_CALLS {
                trips.push(RawTripConfig {
                    failure_rate: Some(RawFailureRateConfig {
                        threshold,
                        window: Duration::from_secs(window_s),
                        min_calls,
                    }),
                    ..none.clone()
                });
            }
        }
        for calls in LAST_CALLS {
            for min_calls in MIN_CALLS.into_iter().filter(|m| *m <= calls) {
                trips.push(RawTripConfig {
                    last_calls: Some(RawLastCallsConfig {
                        threshold,
                        calls,
                        min_calls,
                    }),
                    ..none.clone()
                });
            }
        }
    }
    let hangs = input
        .profiles
        .iter()
        .any(|p| matches!(p.kind, ProfileKind::Hang { .. }));
    if hangs {
        // A hang lasts the caller's timeout: a call is slow well before that, never before a healthy one ends.
        let slow =
            (input.traffic.timeout / 2).max(input.traffic.latency + Duration::from_millis(1));
        for rate in [0.5, 0.8] {
            for window_s in [5, 10, 30] {
                for min_calls in [5, 20] {
                    trips.push(RawTripConfig {
                        slow_call: Some(RawSlowCallConfig {
                            duration: slow,
                            rate,
                            window: Duration::from_secs(window_s),
                            min_calls,
                        }),
                        ..none.clone()
                    });
                }
            }
        }
    }
    trips
}

/// Every candidate of the grid for `input`, thinned evenly to `search.max_candidates`; each one checked.
pub fn candidates(input: &TuneInput) -> Vec<BreakerConfig> {
    let jitters: &[f64] = if input.traffic.instances > 1 {
        &[0.0, 0.2]
    } else {
        &[0.0]
    };
    let mut all = Vec::new();
    for trip in detectors(input) {
        for base_ms in OPEN_BASE_MS {
            for backoff in BACKOFF {
                for &jitter in jitters {
                    for (probes, successes) in HALF_OPEN {
                        let mut raw = RawBreakerConfig {
                            trip: trip.clone(),
                            ..RawBreakerConfig::default()
                        };
                        raw.open.base = Duration::from_millis(base_ms);
                        raw.open.backoff = backoff;
                        raw.open.max = if backoff > 1.0 {
                            raw.open.base * BACKOFF_CAP
                        } else {
                            raw.open.base
                        };
                        raw.open.jitter = jitter;
                        raw.half_open.probes = Probes::limited(probes).unwrap_or_default();
                        raw.half_open.successes_to_close = successes;
                        if let Ok(config) = raw.build() {
                            all.push(config);
                        }
                    }
                }
            }
        }
    }
    thin(all, input.search.max_candidates as usize)
}

/// At most `max` of `all`, taken evenly across it (its order kept).
fn thin<T>(all: Vec<T>, max: usize) -> Vec<T> {
    if all.len() <= max {
        return all;
    }
    let step = all.len() as f64 / max as f64;
    let picked: Vec<usize> = (0..max).map(|i| (i as f64 * step) as usize).collect();
    all.into_iter()
        .enumerate()
        .filter(|(i, _)| picked.binary_search(i).is_ok())
        .map(|(_, c)| c)
        .collect()
}

/// A short label of a config in Tolerant's vocabulary, e.g. `last_calls 20% of 50 (min 20) · open 5s×2≤40s ·
/// probes 1, close 2`.
pub fn label(config: &BreakerConfig) -> String {
    let trip = config.trip();
    let mut detectors = Vec::new();
    if let Some(k) = trip.consecutive_failures() {
        detectors.push(format!("consecutive {k}"));
    }
    if let Some(rate) = trip.failure_rate() {
        detectors.push(format!(
            "failure_rate {}% over {} (min {})",
            percent(rate.threshold()),
            humantime::format_duration(rate.window()),
            rate.min_calls()
        ));
    }
    if let Some(last) = trip.last_calls() {
        detectors.push(format!(
            "last_calls {}% of {} (min {})",
            percent(last.threshold()),
            last.calls(),
            last.min_calls()
        ));
    }
    if let Some(slow) = trip.slow_call() {
        detectors.push(format!(
            "slow_call {}% ≥{} over {} (min {})",
            percent(slow.rate()),
            humantime::format_duration(slow.duration()),
            humantime::format_duration(slow.window()),
            slow.min_calls()
        ));
    }
    let open = config.open();
    let mut window = humantime::format_duration(open.base()).to_string();
    if open.backoff() > 1.0 {
        window = format!(
            "{window}×{}≤{}",
            open.backoff(),
            humantime::format_duration(open.max())
        );
    }
    if open.jitter() > 0.0 {
        window = format!("{window} ±{}%", percent(open.jitter()));
    }
    format!(
        "{} · open {window} · probes {}, close {}",
        detectors.join(" + "),
        config.half_open().probes(),
        config.half_open().successes_to_close()
    )
}

fn percent(share: f64) -> String {
    let p = share * 100.0;
    if (p - p.round()).abs() < 1e-9 {
        format!("{}", p.round())
    } else {
        format!("{p:.1}")
    }
}

/// The family of a config's detector, for the first decision (matching the detector to the failure rates).
pub fn detector_family(config: &BreakerConfig) -> &'static str {
    let trip = config.trip();
    if trip.last_calls().is_some() {
        "last_calls"
    } else if trip.failure_rate().is_some() {
        "failure_rate"
    } else if trip.slow_call().is_some() {
        "slow_call"
    } else {
        "consecutive_failures"
    }
}
