//! The defaults and bounds of a breaker config: what a missing key means and how far each value may go.

use std::time::Duration;

/// Default consecutive-failure threshold (the study's breaker).
pub const DEFAULT_CONSECUTIVE_FAILURES: u32 = 5;
/// Default open window.
pub const DEFAULT_OPEN_BASE: Duration = Duration::from_secs(30);
/// Default cap on the open window.
pub const DEFAULT_OPEN_MAX: Duration = Duration::from_secs(300);
/// Default number of half-open probes admitted at once.
pub const DEFAULT_PROBES: u32 = 1;
/// Default number of probe successes that close the breaker.
pub const DEFAULT_SUCCESSES_TO_CLOSE: u32 = 2;
/// Number of buckets a sliding time window is divided into.
pub const WINDOW_BUCKETS: u32 = 10;

/// Largest limited probe count (the in-flight count has 20 bits in the state word).
pub const MAX_PROBES: u32 = (1 << 20) - 2;
/// Largest `successes_to_close` (20 bits in the state word).
pub const MAX_SUCCESSES_TO_CLOSE: u32 = (1 << 20) - 1;
/// Most calls a count-based window (`trip.last_calls.calls`) may hold.
pub const MAX_LAST_CALLS: u32 = 1_000_000;
/// Longest detector window (and slow-call threshold): a day.
pub const MAX_WINDOW: Duration = Duration::from_secs(24 * 3600);
