//! A validated [`BreakerConfig`] compiled into the integers the state machine works with, and the open-window
//! arithmetic: `base × backoff^(trips − 1)`, capped at `max`, times `1 + jitter·u` with `u` uniform in [−1, 1)
//! drawn from a counter-based generator (splitmix64) seeded by the config or registry seed and the breaker name.
//! A counter-based draw is a pure function of (seed, trip instant, trip count), so the CAS loop can recompute it on
//! a retry and a reference model gets the same window.

use crate::clock::duration_nanos;
use crate::config::{BreakerConfig, Mode, Probes, WINDOW_BUCKETS};

/// A sliding-window rate rule (failure rate or slow-call rate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RateRule {
    pub(crate) threshold: f64,
    pub(crate) window_ns: u64,
    pub(crate) bucket_ns: u64,
    pub(crate) min_calls: u64,
}

impl RateRule {
    fn new(threshold: f64, window_ns: u64, min_calls: u32) -> Self {
        let bucket_ns = (window_ns / u64::from(WINDOW_BUCKETS)).max(1);
        RateRule {
            threshold,
            window_ns,
            bucket_ns,
            min_calls: u64::from(min_calls),
        }
    }

    /// Whether `hits` out of `calls` trips the rule.
    pub(crate) fn fires(&self, hits: u64, calls: u64) -> bool {
        rate_reached(self.threshold, self.min_calls, hits, calls)
    }
}

/// `hits / calls` at or above `threshold` once at least `min_calls` (and one) calls are counted.
fn rate_reached(threshold: f64, min_calls: u64, hits: u64, calls: u64) -> bool {
    calls >= min_calls && calls > 0 && (hits as f64) >= threshold * (calls as f64)
}

/// The failure rate over the last calls: a window of `buckets` buckets of `bucket_calls` calls each, the calls
/// numbered in the order their outcomes are recorded (so "when" is the call's number, not a time). With
/// `bucket_calls = ⌈calls / 10⌉` and `buckets = ⌊calls / bucket_calls⌋` the window slides by one bucket, like the
/// time window: it holds the newest, filling bucket and the full ones before it, between
/// `(buckets − 1) · bucket_calls + 1` and `buckets · bucket_calls ≤ calls` calls (exactly the last `calls` when
/// `calls` ≤ 10; the last 91 to 100 when `calls` = 100).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CallWindowRule {
    pub(crate) threshold: f64,
    pub(crate) calls: u64,
    pub(crate) bucket_calls: u64,
    pub(crate) buckets: u64,
    pub(crate) min_calls: u64,
}

impl CallWindowRule {
    fn new(threshold: f64, calls: u32, min_calls: u32) -> Self {
        let calls = u64::from(calls.max(1));
        let bucket_calls = calls.div_ceil(u64::from(WINDOW_BUCKETS));
        CallWindowRule {
            threshold,
            calls,
            bucket_calls,
            buckets: (calls / bucket_calls).clamp(1, u64::from(WINDOW_BUCKETS)),
            min_calls: u64::from(min_calls),
        }
    }

    /// Whether `hits` out of `calls` trips the rule.
    pub(crate) fn fires(&self, hits: u64, calls: u64) -> bool {
        rate_reached(self.threshold, self.min_calls, hits, calls)
    }
}

/// Everything the machine needs from the config, as integers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Policy {
    pub(crate) mode: Mode,
    pub(crate) consecutive_failures: Option<u32>,
    pub(crate) failure_rate: Option<RateRule>,
    pub(crate) last_calls: Option<CallWindowRule>,
    pub(crate) slow_call: Option<RateRule>,
    pub(crate) slow_call_ns: u64,
    pub(crate) open_base_ns: u64,
    pub(crate) open_backoff: f64,
    pub(crate) open_max_ns: u64,
    pub(crate) open_jitter: f64,
    pub(crate) jitter_seed: u64,
    /// `None` = every caller is a probe.
    pub(crate) probes: Option<u32>,
    pub(crate) successes_to_close: u32,
}

impl Policy {
    /// Compile a (checked) config; `seed` is used when the config has none, `name` decorrelates breakers.
    pub(crate) fn compile(config: &BreakerConfig, seed: u64, name: &str) -> Policy {
        let trip = config.trip();
        let open = config.open();
        let seed = open.seed().unwrap_or(seed);
        Policy {
            mode: config.mode(),
            consecutive_failures: trip.consecutive_failures(),
            failure_rate: trip
                .failure_rate()
                .map(|r| RateRule::new(r.threshold(), duration_nanos(r.window()), r.min_calls())),
            last_calls: trip
                .last_calls()
                .map(|l| CallWindowRule::new(l.threshold(), l.calls(), l.min_calls())),
            slow_call: trip
                .slow_call()
                .map(|s| RateRule::new(s.rate(), duration_nanos(s.window()), s.min_calls())),
            slow_call_ns: trip
                .slow_call()
                .map_or(u64::MAX, |s| duration_nanos(s.duration())),
            open_base_ns: duration_nanos(open.base()),
            open_backoff: open.backoff(),
            open_max_ns: duration_nanos(open.max()),
            open_jitter: open.jitter(),
            jitter_seed: splitmix64(seed ^ fnv1a(name)),
            probes: match config.half_open().probes() {
                Probes::Limited(n) => Some(n.get()),
                Probes::All => None,
            },
            successes_to_close: config.half_open().successes_to_close(),
        }
    }

    /// A slow-call detector is configured: acquiring must read the clock to time the call.
    pub(crate) fn timed(&self) -> bool {
        self.slow_call.is_some()
    }

    /// A window detector is configured: recording must read the clock (and, for a window of the last calls,
    /// number the call).
    pub(crate) fn windowed(&self) -> bool {
        self.failure_rate.is_some() || self.last_calls.is_some() || self.slow_call.is_some()
    }

    /// Length of the open window after the `trips`-th trip without a close (1 = first), opened at `now_ns`.
    pub(crate) fn open_window_ns(&self, trips: u32, now_ns: u64) -> u64 {
        let exponent = i32::try_from(trips.saturating_sub(1)).unwrap_or(i32::MAX);
        let grown = (self.open_base_ns as f64) * self.open_backoff.powi(exponent);
        let capped = grown.min(self.open_max_ns as f64);
        let jittered = if self.open_jitter > 0.0 {
            let draw = splitmix64(self.jitter_seed ^ splitmix64(now_ns ^ (u64::from(trips) << 58)));
            // 53 random bits → u in [-1, 1)
            let unit = (draw >> 11) as f64 / (1u64 << 53) as f64;
            capped * (1.0 + self.open_jitter * (2.0 * unit - 1.0))
        } else {
            capped
        };
        (jittered.min(self.open_max_ns as f64).max(1.0)) as u64
    }
}

/// The open window's end, in whole milliseconds since the clock's origin, rounded up.
pub(crate) fn until_ms(now_ns: u64, window_ns: u64) -> u64 {
    now_ns.saturating_add(window_ns).div_ceil(1_000_000)
}

/// splitmix64 (Steele, Lea, Flood 2014): a full-period mixer, used as a counter-based generator.
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::RawBreakerConfig;

    fn policy(base: u64, backoff: f64, max: u64, jitter: f64) -> Policy {
        let mut config = RawBreakerConfig::default();
        config.open.base = Duration::from_secs(base);
        config.open.backoff = backoff;
        config.open.max = Duration::from_secs(max);
        config.open.jitter = jitter;
        let config = BreakerConfig::try_from(config).expect("a valid test config");
        Policy::compile(&config, 7, "a->b")
    }

    #[test]
    fn backoff_grows_and_caps() {
        let p = policy(10, 2.0, 60, 0.0);
        let secs = |trips| p.open_window_ns(trips, 0) / 1_000_000_000;
        assert_eq!(
            [secs(1), secs(2), secs(3), secs(4), secs(40)],
            [10, 20, 40, 60, 60]
        );
    }

    #[test]
    fn jitter_stays_in_band_and_is_seeded() {
        let p = policy(10, 1.0, 60, 0.2);
        let mut seen_low = false;
        let mut seen_high = false;
        for i in 0..1000u64 {
            let w = p.open_window_ns(1, i * 1_000_003);
            assert!((8_000_000_000..=12_000_000_000).contains(&w), "{w}");
            seen_low |= w < 9_000_000_000;
            seen_high |= w > 11_000_000_000;
            assert_eq!(w, p.open_window_ns(1, i * 1_000_003));
        }
        assert!(seen_low && seen_high);
        let other_seed = {
            let mut config = RawBreakerConfig::default();
            config.open.jitter = 0.2;
            config.open.base = Duration::from_secs(10);
            config.open.seed = Some(99);
            let config = BreakerConfig::try_from(config).expect("a valid test config");
            Policy::compile(&config, 7, "a->b")
        };
        assert_ne!(other_seed.open_window_ns(1, 5), p.open_window_ns(1, 5));
    }

    #[test]
    fn a_window_of_calls_holds_at_most_its_calls_in_up_to_ten_buckets() {
        let shape = |calls| {
            let rule = CallWindowRule::new(0.5, calls, 1);
            (rule.bucket_calls, rule.buckets)
        };
        assert_eq!(shape(100), (10, 10));
        assert_eq!(shape(5), (1, 5));
        assert_eq!(shape(10), (1, 10));
        assert_eq!(shape(25), (3, 8));
        assert_eq!(shape(1), (1, 1));
        for calls in 1..500 {
            let (bucket, buckets) = shape(calls);
            assert!(bucket * buckets <= u64::from(calls), "{calls}");
            assert!((1..=10).contains(&buckets), "{calls}");
        }
        let rule = CallWindowRule::new(0.5, 20, 10);
        assert!(!rule.fires(9, 9));
        assert!(rule.fires(5, 10));
        assert!(!rule.fires(4, 10));
    }

    #[test]
    fn rate_rule_needs_min_calls() {
        let rule = RateRule::new(0.5, 2_000_000_000, 4);
        assert!(!rule.fires(3, 3));
        assert!(rule.fires(2, 4));
        assert!(!rule.fires(1, 4));
        assert_eq!(rule.bucket_ns, 200_000_000);
    }
}
