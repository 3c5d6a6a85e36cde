//! Bucketed sliding time windows, striped per thread.
//!
//! Why buckets: a window of the last `w` seconds kept per call would need a queue and a lock; divided into
//! [`WINDOW_BUCKETS`] buckets of `w / 10` each, a call is one increment of the bucket its time falls in, and
//! the window is the sum of the buckets no older than ten widths (so it slides in steps of one bucket). Why
//! striped: each thread increments only its own stripe's buckets (see [`crate::stripes`]), so the success path
//! has no shared write; the sum is taken only when a failure or slow call is recorded, which is the only time the
//! rate can newly reach the threshold.
//!
//! Each bucket carries a tag `epoch | geometry version | generation`: a bucket from an older epoch, an older
//! window geometry (a config change or a reset bumps the version) or from before the breaker's last transition is
//! stale; its owner resets it on the next write and readers skip it. That is how a close or a reset clears the
//! window without touching other threads' stripes. The window object itself lives as long as the breaker, so the
//! call path reaches it without going through the swappable config (no `ArcSwap` load per call).
//!
//! "Time" is any non-decreasing count: nanoseconds for the time windows, the call's number for the window of the
//! last calls (`trip.last_calls`), whose buckets are then so many calls wide.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::config::WINDOW_BUCKETS;
use crate::core::word::{GEN_BITS, GEN_MASK};
use crate::stripes::{self, OVERFLOW, Padded, STRIPES};

const BUCKETS: usize = WINDOW_BUCKETS as usize;

/// Geometry word: `version << 56 | bucket_ns`; bucket_ns 0 = no window configured.
const VERSION_SHIFT: u32 = 56;
const BUCKET_NS_MASK: u64 = (1 << VERSION_SHIFT) - 1;
const VERSION_BITS: u32 = 8;
const VERSION_MASK: u64 = (1 << VERSION_BITS) - 1;
/// Tag: `WRITTEN | epoch << 20 | version << 12 | generation`.
const WRITTEN: u64 = 1 << 63;
const EPOCH_SHIFT: u32 = GEN_BITS + VERSION_BITS;

#[derive(Debug, Default)]
struct Bucket {
    tag: AtomicU64,
    calls: AtomicU64,
    hits: AtomicU64,
}

/// One thread's buckets, and the bounds of the bucket it wrote last (so the common case, another call in the same
/// bucket, needs two compares instead of a 64-bit division).
#[derive(Debug, Default)]
struct StripeBuckets {
    last_geometry: AtomicU64,
    last_epoch: AtomicU64,
    last_start_ns: AtomicU64,
    last_end_ns: AtomicU64,
    buckets: [Bucket; BUCKETS],
}

/// (hits, calls) in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WindowCount {
    pub(crate) hits: u64,
    pub(crate) calls: u64,
}

/// One detector's window over all stripes. Its stripes are allocated the first time a geometry is set.
#[derive(Debug, Default)]
pub(crate) struct StripedWindow {
    geometry: AtomicU64,
    stripes: OnceLock<Box<[Padded<StripeBuckets>; STRIPES + 1]>>,
    /// Serialises writers of the shared overflow stripe (its reset-on-new-epoch is not a single atomic step).
    overflow_lock: Mutex<()>,
}

fn tag(epoch: u64, geometry: u64, generation: u16) -> u64 {
    let version = (geometry >> VERSION_SHIFT) & VERSION_MASK;
    WRITTEN | ((epoch << EPOCH_SHIFT) & !WRITTEN) | (version << GEN_BITS) | u64::from(generation)
}

impl StripedWindow {
    /// Set the bucket width (`None`: no window). A new width, or `clear`, starts a new version: every bucket
    /// written so far becomes stale. Versions wrap after 256 changes; a bucket would then only be miscounted if it
    /// also matched the epoch range and the generation.
    pub(crate) fn configure(&self, bucket_ns: Option<u64>, clear: bool) {
        let Some(bucket_ns) = bucket_ns else {
            self.geometry.store(0, Ordering::Release);
            return;
        };
        let bucket_ns = bucket_ns.clamp(1, BUCKET_NS_MASK);
        self.stripes
            .get_or_init(|| Box::new(std::array::from_fn(|_| Padded::default())));
        let old = self.geometry.load(Ordering::Acquire);
        if !clear && old & BUCKET_NS_MASK == bucket_ns {
            return;
        }
        let version = ((old >> VERSION_SHIFT) + 1) & VERSION_MASK;
        self.geometry
            .store((version << VERSION_SHIFT) | bucket_ns, Ordering::Release);
    }

    /// Count one call (and a hit if `hit`) at `now_ns` in generation `generation`, from the calling thread.
    #[inline]
    pub(crate) fn record(&self, stripe: usize, now_ns: u64, generation: u16, hit: bool) {
        let geometry = self.geometry.load(Ordering::Acquire);
        let bucket_ns = geometry & BUCKET_NS_MASK;
        let Some(stripes) = self.stripes.get() else {
            return;
        };
        if bucket_ns == 0 {
            return;
        }
        let own = &stripes[stripe.min(OVERFLOW)];
        let _guard = (stripe == OVERFLOW).then(|| self.overflow_lock.lock());
        let in_last = own.last_geometry.load(Ordering::Relaxed) == geometry
            && now_ns >= own.last_start_ns.load(Ordering::Relaxed)
            && now_ns < own.last_end_ns.load(Ordering::Relaxed);
        let epoch = if in_last {
            own.last_epoch.load(Ordering::Relaxed)
        } else {
            let epoch = now_ns / bucket_ns;
            let start = epoch * bucket_ns;
            own.last_geometry.store(geometry, Ordering::Relaxed);
            own.last_epoch.store(epoch, Ordering::Relaxed);
            own.last_start_ns.store(start, Ordering::Relaxed);
            own.last_end_ns
                .store(start.saturating_add(bucket_ns), Ordering::Relaxed);
            epoch
        };
        let bucket = &own.buckets[(epoch % BUCKETS as u64) as usize];
        let want = tag(epoch, geometry, generation);
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

    /// Whether a bucket width is set.
    #[inline]
    pub(crate) fn is_configured(&self) -> bool {
        self.geometry.load(Ordering::Relaxed) & BUCKET_NS_MASK != 0
    }

    /// The window ending at `now_ns`, counting only current buckets of generation `generation`.
    pub(crate) fn count(&self, now_ns: u64, generation: u16) -> WindowCount {
        self.count_last(now_ns, generation, BUCKETS as u64)
    }

    /// The newest `buckets` buckets (1 to [`WINDOW_BUCKETS`]) ending at `now_ns`, counting only current buckets of
    /// generation `generation`.
    pub(crate) fn count_last(&self, now_ns: u64, generation: u16, buckets: u64) -> WindowCount {
        let geometry = self.geometry.load(Ordering::Acquire);
        let bucket_ns = geometry & BUCKET_NS_MASK;
        let mut count = WindowCount::default();
        let Some(stripes) = self.stripes.get() else {
            return count;
        };
        if bucket_ns == 0 {
            return count;
        }
        let newest = now_ns / bucket_ns;
        let oldest = newest.saturating_sub(buckets.clamp(1, BUCKETS as u64) - 1);
        let low_bits = tag(0, geometry, generation) & !WRITTEN;
        let visit = stripes::slots_in_use();
        for stripe in stripes[..visit]
            .iter()
            .chain(std::iter::once(&stripes[OVERFLOW]))
        {
            for bucket in stripe.buckets.iter() {
                let tag = bucket.tag.load(Ordering::Acquire);
                let epoch = (tag & !WRITTEN) >> EPOCH_SHIFT;
                let current = tag & WRITTEN != 0 && tag & ((1 << EPOCH_SHIFT) - 1) == low_bits;
                if current && (oldest..=newest).contains(&epoch) {
                    count.calls += bucket.calls.load(Ordering::Relaxed);
                    count.hits += bucket.hits.load(Ordering::Relaxed);
                }
            }
        }
        count
    }
}

// The generation mask must fit below the version bits of the tag.
const _: () = assert!(GEN_MASK < (1 << GEN_BITS));

#[cfg(test)]
mod tests {
    use super::*;

    fn window() -> StripedWindow {
        let w = StripedWindow::default();
        w.configure(Some(100), false);
        w
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
        // time going backwards falls into the right bucket too
        w.record(stripe, 1_120, 3, true);
        assert_eq!(w.count(1_150, 3), WindowCount { hits: 1, calls: 3 });
    }

    #[test]
    fn counting_the_last_buckets_only_leaves_the_older_ones_out() {
        let w = window();
        let stripe = stripes::current();
        for t in (0..1_000).step_by(100) {
            w.record(stripe, t, 1, t >= 800);
        }
        assert_eq!(w.count(950, 1), WindowCount { hits: 2, calls: 10 });
        assert_eq!(w.count_last(950, 1, 2), WindowCount { hits: 2, calls: 2 });
        assert_eq!(w.count_last(950, 1, 3), WindowCount { hits: 2, calls: 3 });
        assert_eq!(w.count_last(950, 1, 0), w.count_last(950, 1, 1));
        assert_eq!(w.count_last(950, 1, 99), w.count(950, 1));
        assert!(w.is_configured());
        w.configure(None, false);
        assert!(!w.is_configured());
    }

    #[test]
    fn a_new_geometry_or_a_clear_forgets_everything() {
        let w = window();
        let stripe = stripes::current();
        w.record(stripe, 10, 0, true);
        w.configure(Some(100), false);
        assert_eq!(
            w.count(10, 0),
            WindowCount { hits: 1, calls: 1 },
            "same geometry keeps the counts"
        );
        w.configure(Some(100), true);
        assert_eq!(w.count(10, 0), WindowCount::default());
        w.record(stripe, 10, 0, true);
        w.configure(Some(50), false);
        assert_eq!(w.count(10, 0), WindowCount::default());
        w.record(stripe, 10, 0, false);
        assert_eq!(w.count(10, 0), WindowCount { hits: 0, calls: 1 });
        w.configure(None, false);
        w.record(stripe, 10, 0, false);
        assert_eq!(w.count(10, 0), WindowCount::default());
    }
}
