//! What a service counts of the requests it answered: by status class, and their latency.

use std::sync::atomic::{AtomicU64, Ordering};

/// Requests answered by a service's business routes, by status class, and their total latency.
#[derive(Debug, Default)]
pub struct RequestStats {
    pub(crate) by_class: [AtomicU64; 5],
    pub(crate) latency_micros_total: AtomicU64,
}

impl RequestStats {
    /// Records one answered request.
    pub fn record(&self, status: u16, micros: u64) {
        let class = usize::from(status / 100).clamp(1, 5) - 1;
        self.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.latency_micros_total
            .fetch_add(micros, Ordering::Relaxed);
    }

    /// Requests answered with status class `class` (1..=5).
    pub fn count(&self, class: usize) -> u64 {
        self.by_class[class.clamp(1, 5) - 1].load(Ordering::Relaxed)
    }
}
