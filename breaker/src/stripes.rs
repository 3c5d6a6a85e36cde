//! Per-thread stripes: how the call path counts without a shared write.
//!
//! Every live thread that touches a breaker gets a small slot number (reused after the thread exits, like the
//! `thread_local` crate's ids). Slot `i` owns stripe `i` of every breaker exclusively, so incrementing is a plain
//! load + store of a relaxed atomic on a cache line no other thread writes — no `lock`-prefixed instruction and no
//! line bouncing between cores. Readers (snapshots, window sums) add the stripes up with relaxed loads. Threads
//! beyond [`STRIPES`] share one overflow stripe with `fetch_add`. Slot hand-over goes through a mutex, so the next
//! owner sees the previous owner's last stores.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Number of exclusively owned stripes; stripe `STRIPES` is the shared overflow stripe.
pub(crate) const STRIPES: usize = 32;
pub(crate) const OVERFLOW: usize = STRIPES;
const UNCLAIMED: usize = usize::MAX;

static FREE_SLOTS: Mutex<Vec<usize>> = Mutex::new(Vec::new());
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
/// One more than the highest slot ever handed out (bounds the stripes a reader must visit).
static SLOTS_IN_USE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SLOT: Cell<usize> = const { Cell::new(UNCLAIMED) };
    static SLOT_GUARD: SlotGuard = const { SlotGuard };
}

/// Returns the thread's slot to the free list when the thread exits.
struct SlotGuard;

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let slot = SLOT.try_with(|s| s.replace(OVERFLOW)).unwrap_or(OVERFLOW);
        if slot < STRIPES {
            FREE_SLOTS.lock().push(slot);
        }
    }
}

/// The calling thread's stripe index (`OVERFLOW` if it has none).
#[inline]
pub(crate) fn current() -> usize {
    match SLOT.try_with(Cell::get) {
        Ok(UNCLAIMED) => claim(),
        Ok(slot) => slot,
        Err(_) => OVERFLOW,
    }
}

#[cold]
fn claim() -> usize {
    let slot = {
        let mut free = FREE_SLOTS.lock();
        free.sort_unstable_by(|a, b| b.cmp(a));
        match free.pop() {
            Some(slot) => slot,
            None => {
                let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
                if slot < STRIPES { slot } else { OVERFLOW }
            }
        }
    };
    // Registering the guard can fail while the thread is shutting down; then keep the overflow stripe.
    if slot < STRIPES && SLOT_GUARD.try_with(|_| ()).is_err() {
        FREE_SLOTS.lock().push(slot);
        let _ = SLOT.try_with(|s| s.set(OVERFLOW));
        return OVERFLOW;
    }
    if slot < STRIPES {
        SLOTS_IN_USE.fetch_max(slot + 1, Ordering::Release);
    }
    let _ = SLOT.try_with(|s| s.set(slot));
    slot
}

/// Stripes a reader must visit: `0..slots_in_use()` and the overflow stripe.
#[inline]
pub(crate) fn slots_in_use() -> usize {
    SLOTS_IN_USE.load(Ordering::Acquire).min(STRIPES)
}

/// `cell += by` where `stripe` is the calling thread's own stripe (or the shared overflow stripe).
#[inline]
pub(crate) fn bump(cell: &AtomicU64, stripe: usize, by: u64) {
    if stripe == OVERFLOW {
        cell.fetch_add(by, Ordering::Relaxed);
    } else {
        cell.store(
            cell.load(Ordering::Relaxed).wrapping_add(by),
            Ordering::Relaxed,
        );
    }
}

/// Aligned to two cache lines (adjacent-line prefetch pairs them on x86).
#[derive(Debug, Default)]
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// One stripe of call counters.
#[derive(Debug, Default)]
pub(crate) struct StripeCounters {
    pub(crate) rejected: AtomicU64,
    pub(crate) shadow_rejected: AtomicU64,
    pub(crate) successes: AtomicU64,
    pub(crate) failures: AtomicU64,
    pub(crate) ignored: AtomicU64,
    pub(crate) slow: AtomicU64,
}

/// Totals of the call counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CallTotals {
    pub(crate) permitted: u64,
    pub(crate) rejected: u64,
    pub(crate) shadow_rejected: u64,
    pub(crate) successes: u64,
    pub(crate) failures: u64,
    pub(crate) ignored: u64,
    pub(crate) slow: u64,
}

impl CallTotals {
    pub(crate) fn since(self, baseline: CallTotals) -> CallTotals {
        CallTotals {
            permitted: self.permitted.wrapping_sub(baseline.permitted),
            rejected: self.rejected.wrapping_sub(baseline.rejected),
            shadow_rejected: self.shadow_rejected.wrapping_sub(baseline.shadow_rejected),
            successes: self.successes.wrapping_sub(baseline.successes),
            failures: self.failures.wrapping_sub(baseline.failures),
            ignored: self.ignored.wrapping_sub(baseline.ignored),
            slow: self.slow.wrapping_sub(baseline.slow),
        }
    }
}

/// Call counters, one stripe per slot plus the overflow stripe.
#[derive(Debug)]
pub(crate) struct StripedCounters {
    /// A fixed-size array, so that indexing with `min(OVERFLOW)` needs no bounds check on the call path.
    stripes: Box<[Padded<StripeCounters>; STRIPES + 1]>,
}

impl StripedCounters {
    pub(crate) fn new() -> Self {
        StripedCounters {
            stripes: Box::new(std::array::from_fn(|_| Padded::default())),
        }
    }

    #[inline]
    pub(crate) fn stripe(&self, stripe: usize) -> &StripeCounters {
        &self.stripes[stripe.min(OVERFLOW)]
    }

    pub(crate) fn totals(&self) -> CallTotals {
        let mut totals = CallTotals::default();
        let visit = slots_in_use();
        for stripe in self.stripes[..visit]
            .iter()
            .chain(std::iter::once(&self.stripes[OVERFLOW]))
        {
            let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
            totals.rejected = totals.rejected.wrapping_add(load(&stripe.rejected));
            totals.shadow_rejected = totals
                .shadow_rejected
                .wrapping_add(load(&stripe.shadow_rejected));
            totals.successes = totals.successes.wrapping_add(load(&stripe.successes));
            totals.failures = totals.failures.wrapping_add(load(&stripe.failures));
            totals.ignored = totals.ignored.wrapping_add(load(&stripe.ignored));
            totals.slow = totals.slow.wrapping_add(load(&stripe.slow));
        }
        // Every admitted call ends exactly once, as a success, a failure or ignored (a dropped permit): counting
        // it there keeps the admission path free of any write. Calls still in flight are not yet counted.
        totals.permitted = totals
            .successes
            .wrapping_add(totals.failures)
            .wrapping_add(totals.ignored);
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_get_distinct_slots_and_counts_add_up() {
        let counters = StripedCounters::new();
        let slots = Mutex::new(Vec::new());
        let all_claimed = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    let stripe = current();
                    slots.lock().push(stripe);
                    // Keep every thread alive until all have claimed, so no slot can be reused in between.
                    all_claimed.wait();
                    for _ in 0..1000 {
                        bump(&counters.stripe(stripe).successes, stripe, 1);
                    }
                });
            }
        });
        let mut slots = slots.into_inner();
        slots.retain(|s| *s != OVERFLOW);
        let before = slots.len();
        slots.sort_unstable();
        slots.dedup();
        assert_eq!(slots.len(), before, "two live threads shared a slot");
        assert_eq!(counters.totals().successes, 4000);
    }
}
