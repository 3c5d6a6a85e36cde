//! The live window's history: one bounded list of what happened, oldest first, kept across runs and
//! experiments so a page loaded later draws what the window held. Bounded three ways, all checked as items
//! arrive: a count, an age (the window, measured against the newest time seen, never a clock) and the bytes
//! the items serialize to (what a snapshot carries).

use std::collections::VecDeque;
use std::ops::Deref;

use serde::{Serialize, Serializer};

/// Something that happened at a wall-clock time (Unix ms).
pub trait Timed {
    fn at_ms(&self) -> u64;
}

/// How much one history keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowLimit {
    /// Items at most.
    pub count: usize,
    /// Items older than this behind the newest time seen are dropped.
    pub age_ms: u64,
    /// Serialized bytes at most (the items' JSON).
    pub bytes: usize,
}

/// A history bounded by [`WindowLimit`]; reads as the `VecDeque` it holds and serializes as a JSON array.
#[derive(Debug, Clone)]
pub struct Window<T> {
    items: VecDeque<T>,
    /// The serialized size of each item, in the same order.
    sizes: VecDeque<usize>,
    bytes: usize,
    limit: WindowLimit,
}

impl<T: Timed + Serialize> Window<T> {
    pub fn new(limit: WindowLimit) -> Self {
        Window {
            items: VecDeque::new(),
            sizes: VecDeque::new(),
            bytes: 0,
            limit,
        }
    }

    /// Appends `item`, then drops the oldest until every bound holds again. An item larger than the byte
    /// bound by itself is not kept.
    pub fn push(&mut self, item: T) {
        let limit = self.limit;
        if limit.count == 0 {
            return;
        }
        let size = json_len(&item);
        if size > limit.bytes {
            return;
        }
        let newest = item.at_ms();
        self.items.push_back(item);
        self.sizes.push_back(size);
        self.bytes += size;
        while self.items.len() > limit.count || self.bytes > limit.bytes {
            self.pop_front();
        }
        self.forget_before(newest.saturating_sub(limit.age_ms));
    }

    /// Drops what happened before `cutoff_ms` (items are kept in arrival order; arrival times are close to
    /// their own, so the oldest are at the front).
    pub fn forget_before(&mut self, cutoff_ms: u64) {
        while self
            .items
            .front()
            .is_some_and(|item| item.at_ms() < cutoff_ms)
        {
            self.pop_front();
        }
    }

    /// Drops what is older than the window behind `now_ms` (a sampled board's time: the history ages while
    /// nothing new arrives).
    pub fn age_to(&mut self, now_ms: u64) {
        self.forget_before(now_ms.saturating_sub(self.limit.age_ms));
    }

    /// The bytes the items serialize to, their separators aside.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn pop_front(&mut self) {
        self.items.pop_front();
        self.bytes -= self.sizes.pop_front().unwrap_or(0);
    }
}

impl<T> Deref for Window<T> {
    type Target = VecDeque<T>;

    fn deref(&self) -> &VecDeque<T> {
        &self.items
    }
}

impl<T: Serialize> Serialize for Window<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(&self.items)
    }
}

/// The length of `item`'s JSON, counted without keeping it.
fn json_len(item: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Counting cannot fail, and the hub's events are plain data.
    let _ = serde_json::to_writer(&mut count, item);
    count.0
}

impl Timed for breaker::TransitionEvent {
    fn at_ms(&self) -> u64 {
        self.at_ms
    }
}

impl Timed for super::event::LiveSample {
    fn at_ms(&self) -> u64 {
        self.at_ms
    }
}

impl Timed for super::event::FaultChange {
    fn at_ms(&self) -> u64 {
        self.at_ms
    }
}

impl Timed for super::event::Annotation {
    fn at_ms(&self) -> u64 {
        self.at_ms
    }
}

impl Timed for super::event::ModeChange {
    fn at_ms(&self) -> u64 {
        self.at_ms
    }
}

impl Timed for super::event::ExperimentChange {
    fn at_ms(&self) -> u64 {
        self.at_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize)]
    struct Seen {
        at_ms: u64,
        text: String,
    }

    impl Timed for Seen {
        fn at_ms(&self) -> u64 {
            self.at_ms
        }
    }

    fn seen(at_ms: u64, length: usize) -> Seen {
        Seen {
            at_ms,
            text: "x".repeat(length),
        }
    }

    fn limit(count: usize, age_ms: u64, bytes: usize) -> WindowLimit {
        WindowLimit {
            count,
            age_ms,
            bytes,
        }
    }

    fn times(window: &Window<Seen>) -> Vec<u64> {
        window.iter().map(|item| item.at_ms).collect()
    }

    #[test]
    fn the_count_bound_drops_the_oldest() {
        let mut window = Window::new(limit(3, u64::MAX, usize::MAX));
        for at in 0..10 {
            window.push(seen(at, 1));
        }
        assert_eq!(times(&window), vec![7, 8, 9]);
    }

    #[test]
    fn the_age_bound_follows_the_newest_time_and_a_board_tick() {
        let mut window = Window::new(limit(100, 1_000, usize::MAX));
        for at in [0, 400, 900, 1_500] {
            window.push(seen(at, 1));
        }
        assert_eq!(
            times(&window),
            vec![900, 1_500],
            "older than 1 s behind 1.5 s"
        );
        window.age_to(2_200);
        assert_eq!(times(&window), vec![1_500]);
        window.age_to(10_000);
        assert!(window.is_empty());
    }

    #[test]
    fn the_byte_bound_holds_and_counts_what_a_snapshot_carries() {
        let one = json_len(&seen(0, 100));
        let mut window = Window::new(limit(100, u64::MAX, 3 * one));
        for at in 0..10 {
            window.push(seen(at, 100));
        }
        assert_eq!(times(&window), vec![7, 8, 9]);
        assert_eq!(window.bytes(), 3 * one);
        let json = serde_json::to_string(&window).expect("serializes");
        // Three items, two commas, two brackets.
        assert_eq!(json.len(), window.bytes() + 4);
        // An item larger than the whole bound is not kept, and leaves the others be.
        window.push(seen(10, 1_000));
        assert_eq!(times(&window), vec![7, 8, 9]);
    }
}
