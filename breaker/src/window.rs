//! Bucketed sliding time windows, striped per thread.
//!
//! Why buckets: a window of the last `w` seconds kept per call would need a queue and a lock; divided into
//! [`WINDOW_BUCKETS`] buckets of `w / 10` each, a call is one increment of the bucket its time falls in, and
//! the window is the sum of the buckets no older than ten widths (so it slides in steps of one bucket). Why
//! striped: each thread increments only its own stripe's buckets (see [`crate::stripes`]), so the success path
//! has no shared write; the sum is taken only when a failure or slow call is recorded, which is the only time the
//! rate can newly reach the threshold.
//!
//! Each bucket carries a tag `epoch << 12 | generation`: a bucket from an older epoch or from before the breaker's
//! last transition is stale and is reset by its owner on the next write and skipped by readers. That is how a close
//! clears the window without touching other threads' stripes.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::config::WINDOW_BUCKETS;
use crate::core::policy::RateRule;
use crate::core::word::{GEN_BITS, GEN_MASK};
use crate::stripes::{self, OVERFLOW, Padded, STRIPES};

const BUCKETS: usize = WINDOW_BUCKETS as usize;

#[derive(Debug, Default)]
struct Bucket {
    tag: AtomicU64,
    calls: AtomicU64,
    hits: AtomicU64,
}

/// (hits, calls) in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WindowCount {
    pub(crate) hits: u64,
    pub(crate) calls: u64,
}

/// One thread's buckets, and the bounds of the bucket it wrote last (so the common case, another call in the same
/// bucket, needs two compares instead of a 64-bit division).
#[derive(Debug, Default)]
struct StripeBuckets {
    last_epoch: AtomicU64,
    last_start_ns: AtomicU64,
    last_end_ns: AtomicU64,
    buckets: [Bucket; BUCKETS],
}

/// One rule's window over all stripes.
#[derive(Debug)]
pub(crate) struct StripedWindow {
    bucket_ns: u64,
    stripes: Box<[Padded<StripeBuckets>]>,
    /// Serialises writers of the shared overflow stripe (its reset-on-new-epoch is not a single atomic step).
    overflow_lock: Mutex<()>,
}

/// Set in every written tag, so that a fresh (all-zero) bucket never matches epoch 0 of generation 0.
const WRITTEN: u64 = 1 << 63;

fn tag(epoch: u64, generation: u16) -> u64 {
    WRITTEN | ((epoch << GEN_BITS) & !WRITTEN) | u64::from(generation)
}

impl StripedWindow {
    pub(crate) fn new(rule: &RateRule) -> Self {
        StripedWindow {
            bucket_ns: rule.bucket_ns,
            stripes: (0..=STRIPES).map(|_| Padded::default()).collect(),
            overflow_lock: Mutex::new(()),
        }
    }

    /// Count one call (and a hit if `hit`) at `now_ns` in generation `generation`, from the calling thread.
    #[inline]
    pub(crate) fn record(&self, stripe: usize, now_ns: u64, generation: u16, hit: bool) {
        let own = &self.stripes[stripe.min(OVERFLOW)];
        let _guard = (stripe == OVERFLOW).then(|| self.overflow_lock.lock());
        let in_last = now_ns >= own.last_start_ns.load(Ordering::Relaxed)
            && now_ns < own.last_end_ns.load(Ordering::Relaxed);
        let epoch = if in_last {
            own.last_epoch.load(Ordering::Relaxed)
        } else {
            let epoch = now_ns / self.bucket_ns;
            let start = epoch * self.bucket_ns;
            own.last_epoch.store(epoch, Ordering::Relaxed);
            own.last_start_ns.store(start, Ordering::Relaxed);
            own.last_end_ns
                .store(start.saturating_add(self.bucket_ns), Ordering::Relaxed);
            epoch
        };
        let bucket = &own.buckets[(epoch % BUCKETS as u64) as usize];
        let want = tag(epoch, generation);
        if bucket.tag.load(Ordering::Relaxed) != want {
            bucket.calls.store(0, Ordering::Relaxed);
            bucket.hits.store(0, Ordering::Relaxed);
            bucket.tag.store(want, Ordering::Release);
        }
        stripes::bump(&bucket.calls, stripe, 1);
        if hit {
            stripes::bump(&bucket.hits, stripe, 1);
        }
    }

    /// The window ending at `now_ns`, counting only buckets of generation `generation`.
    pub(crate) fn count(&self, now_ns: u64, generation: u16) -> WindowCount {
        let newest = now_ns / self.bucket_ns;
        let oldest = newest.saturating_sub(BUCKETS as u64 - 1);
        let mut count = WindowCount::default();
        let visit = stripes::slots_in_use();
        for stripe in self.stripes[..visit]
            .iter()
            .chain(std::iter::once(&self.stripes[OVERFLOW]))
        {
            for bucket in stripe.buckets.iter() {
                let tag = bucket.tag.load(Ordering::Acquire);
                let epoch = (tag & !WRITTEN) >> GEN_BITS;
                if tag & WRITTEN != 0
                    && (tag & GEN_MASK) as u16 == generation
                    && (oldest..=newest).contains(&epoch)
                {
                    count.calls += bucket.calls.load(Ordering::Relaxed);
                    count.hits += bucket.hits.load(Ordering::Relaxed);
                }
            }
        }
        count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> StripedWindow {
        StripedWindow::new(&RateRule {
            threshold: 0.5,
            window_ns: 1_000,
            bucket_ns: 100,
            min_calls: 1,
        })
    }

    #[test]
    fn slides_by_buckets_and_drops_other_generations() {
        let w = window();
        let stripe = stripes::current();
        w.record(stripe, 0, 3, true);
        assert_eq!(w.count(0, 3), WindowCount { hits: 1, calls: 1 });
        assert_eq!(w.count(0, 0), WindowCount::default());
        for t in [100, 150, 250] {
            w.record(stripe, t, 3, t == 150);
        }
        assert_eq!(w.count(299, 3), WindowCount { hits: 2, calls: 4 });
        assert_eq!(w.count(299, 4), WindowCount::default());
        // at 1099 the oldest bucket still in the window is epoch 1 (100..200)
        assert_eq!(w.count(1_099, 3), WindowCount { hits: 1, calls: 3 });
        assert_eq!(w.count(1_100, 3), WindowCount { hits: 0, calls: 1 });
        assert_eq!(w.count(1_200, 3), WindowCount::default());
        // a write into a reused slot resets it
        w.record(stripe, 1_150, 3, false);
        assert_eq!(w.count(1_150, 3), WindowCount { hits: 0, calls: 2 });
    }
}
