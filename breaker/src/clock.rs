//! Time as a value: the breaker core never reads a clock, its shells ask a [`Clock`] and pass the answer in.
//!
//! [`Instant`] is the crate's own monotonic type, nanoseconds since the clock's origin, so that a manual clock can
//! represent any point in time and the core can do integer arithmetic on it (and pack it into atomic words).

use std::ops::{Add, Sub};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point on a clock's monotonic time line: nanoseconds since that clock's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    /// The clock's origin.
    pub const ZERO: Instant = Instant(0);

    /// The instant `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time elapsed from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl From<Duration> for Instant {
    /// The instant `d` after the origin.
    fn from(d: Duration) -> Self {
        Instant(duration_nanos(d))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(duration_nanos(d)))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (584 years).
pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Where the breaker's shells get time from.
pub trait Clock: Send + Sync + 'static {
    /// The current instant on this clock's monotonic time line.
    fn now(&self) -> Instant;
    /// Wall-clock milliseconds since the Unix epoch at `at` (for event timestamps).
    fn unix_ms(&self, at: Instant) -> u64;
}

/// The real clock: `std::time::Instant` for the time line, anchored once per process to the system time.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

struct SystemOrigin {
    monotonic: std::time::Instant,
    unix_ms: u64,
}

// The one wall-clock read of every `Clock`: the Unix time at the monotonic origin.
#[allow(clippy::disallowed_methods)]
fn system_origin() -> &'static SystemOrigin {
    static ORIGIN: OnceLock<SystemOrigin> = OnceLock::new();
    ORIGIN.get_or_init(|| SystemOrigin {
        monotonic: std::time::Instant::now(),
        unix_ms: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0),
    })
}

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Instant {
        let origin = system_origin();
        Instant(duration_nanos(origin.monotonic.elapsed()))
    }

    fn unix_ms(&self, at: Instant) -> u64 {
        system_origin().unix_ms.saturating_add(at.0 / 1_000_000)
    }
}

/// The real clock at millisecond resolution, for the call path: `now()` is one relaxed load of a value a
/// background thread refreshes about every millisecond, instead of a `clock_gettime` (≈ 50 ns on the VMs this
/// project runs on, more than the whole closed path). Same time line and wall-clock anchor as [`SystemClock`].
/// Everything the breaker times — window buckets (≥ 1 ms), slow calls, open windows (whole ms) — is coarser than
/// its resolution. One process-wide refresher thread is started on first use and runs for the life of the process.
#[derive(Debug, Clone, Copy)]
pub struct CoarseClock {
    _started: (),
}

/// Milliseconds between refreshes of the [`CoarseClock`].
pub const COARSE_CLOCK_RESOLUTION: Duration = Duration::from_millis(1);

fn coarse_now() -> &'static AtomicU64 {
    static NOW: OnceLock<&'static AtomicU64> = OnceLock::new();
    NOW.get_or_init(|| {
        let now: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(SystemClock.now().0)));
        let spawned = std::thread::Builder::new()
            .name("breaker-coarse-clock".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(COARSE_CLOCK_RESOLUTION);
                    now.fetch_max(SystemClock.now().0, Ordering::Relaxed);
                }
            });
        if spawned.is_err() {
            // Without a refresher the clock would stand still; fall back to reading the system clock.
            now.store(u64::MAX, Ordering::Relaxed);
        }
        now
    })
}

impl CoarseClock {
    /// The shared coarse clock (starts the refresher thread on first use).
    pub fn new() -> Self {
        coarse_now();
        CoarseClock { _started: () }
    }
}

impl Default for CoarseClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for CoarseClock {
    #[inline]
    fn now(&self) -> Instant {
        match coarse_now().load(Ordering::Relaxed) {
            u64::MAX => SystemClock.now(),
            nanos => Instant(nanos),
        }
    }

    fn unix_ms(&self, at: Instant) -> u64 {
        SystemClock.unix_ms(at)
    }
}

/// A clock that only moves when told to: for tests and simulations.
#[derive(Debug)]
pub struct ManualClock {
    nanos: AtomicU64,
    unix_origin_ms: u64,
}

/// Default Unix time of a [`ManualClock`]'s origin: 2024-11-29T16:00:00Z, so timestamps look like real ones.
pub const MANUAL_CLOCK_UNIX_ORIGIN_MS: u64 = 1_732_896_000_000;

impl ManualClock {
    /// A clock at its origin, whose origin is [`MANUAL_CLOCK_UNIX_ORIGIN_MS`] in wall-clock time.
    pub fn new() -> Self {
        Self::with_unix_origin_ms(MANUAL_CLOCK_UNIX_ORIGIN_MS)
    }

    /// A clock at its origin, whose origin is `unix_origin_ms` in wall-clock time.
    pub fn with_unix_origin_ms(unix_origin_ms: u64) -> Self {
        ManualClock {
            nanos: AtomicU64::new(0),
            unix_origin_ms,
        }
    }

    /// Move the clock forward by `d`.
    pub fn advance(&self, d: Duration) {
        let step = duration_nanos(d);
        let _ = self
            .nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(step))
            });
    }

    /// Put the clock at `at` (an [`Instant`], or a `Duration` since the origin). Moving backwards is allowed, but
    /// the breaker treats time that went backwards as not having moved.
    pub fn set(&self, at: impl Into<Instant>) {
        self.nanos.store(at.into().0, Ordering::Release);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant(self.nanos.load(Ordering::Acquire))
    }

    fn unix_ms(&self, at: Instant) -> u64 {
        self.unix_origin_ms.saturating_add(at.0 / 1_000_000)
    }
}

/// A clock that follows `tokio::time`, so `#[tokio::test(start_paused = true)]` controls it.
#[cfg(feature = "tokio")]
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
    unix_origin_ms: u64,
}

#[cfg(feature = "tokio")]
impl TokioClock {
    /// A clock whose origin is tokio's `now()` at this call.
    pub fn new() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
            unix_origin_ms: SystemClock.unix_ms(SystemClock.now()),
        }
    }
}

#[cfg(feature = "tokio")]
impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "tokio")]
impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant(duration_nanos(
            tokio::time::Instant::now().saturating_duration_since(self.origin),
        ))
    }

    fn unix_ms(&self, at: Instant) -> u64 {
        self.unix_origin_ms.saturating_add(at.0 / 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_advances_and_sets() {
        let clock = ManualClock::new();
        assert_eq!(clock.now(), Instant::ZERO);
        clock.advance(Duration::from_millis(1500));
        assert_eq!(clock.now().as_nanos(), 1_500_000_000);
        assert_eq!(
            clock.unix_ms(clock.now()),
            MANUAL_CLOCK_UNIX_ORIGIN_MS + 1500
        );
        clock.set(Duration::from_secs(2));
        assert_eq!(clock.now(), Instant::from_nanos(2_000_000_000));
    }

    #[test]
    fn coarse_clock_follows_the_system_clock() {
        let coarse = CoarseClock::new();
        let before = SystemClock.now();
        let mut moved = false;
        // Bounded wait: the refresher ticks every millisecond.
        for _ in 0..2_000 {
            if coarse.now() > before {
                moved = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(moved, "the coarse clock never moved past the system clock");
        assert!(coarse.now() <= SystemClock.now());
    }

    // Compares the clock with the wall clock it is built on.
    #[allow(clippy::disallowed_methods)]
    #[test]
    fn system_clock_is_monotonic_and_near_wall_time() {
        let a = SystemClock.now();
        let b = SystemClock.now();
        assert!(b >= a);
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let ours = SystemClock.unix_ms(b);
        assert!(ours.abs_diff(wall) < 5_000, "{ours} vs {wall}");
    }
}
