//! The wall clock, read in one place: milliseconds since the Unix epoch as every stored time is kept (`i64`, the
//! store's integer). Logic that depends on time takes such a value as an argument; only the edges (a run's
//! record, a handler, the dashboard's sampler) call [`now_ms`].

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now (0 before the epoch, `i64::MAX` past the year 292 million).
#[allow(clippy::disallowed_methods)] // the controller's one wall-clock read (see the header)
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
