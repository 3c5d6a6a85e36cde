//! Circuit breaker: a pure state machine with combinable detectors, narrow half-open probing, backoff with seeded
//! jitter, shadow mode, an event for every transition, a registry, and async / tower adapters.
//!
//! ```
//! use std::sync::Arc;
//! use breaker::{BreakerConfig, ManualClock, Outcome, Registry, State};
//!
//! let clock = Arc::new(ManualClock::new());
//! let registry = Registry::new("frontend", BreakerConfig::default(), clock.clone());
//! let checkout = registry.get("frontend->checkout");
//! for _ in 0..5 {
//!     checkout.try_acquire().expect("closed").record(Outcome::Failure);
//! }
//! assert_eq!(checkout.state(), State::Open);
//! assert!(checkout.try_acquire().is_err());
//! clock.advance(std::time::Duration::from_secs(30));
//! assert_eq!(checkout.state(), State::HalfOpen);
//! ```
//!
//! Layout: `core` is the pure machine (packed word, transitions, compiled policy; time is an argument);
//! `stripes` and `window` are the per-thread counting structures; `breaker` is the shell (CAS loops, clock, sink);
//! `registry`, `http` and `layer` are adapters.

#![warn(missing_docs)]

mod breaker;
mod clock;
mod config;
mod core;
mod event;
pub mod http;
#[cfg(feature = "tower")]
pub mod layer;
mod registry;
pub mod sim;
mod state;
mod stripes;
mod window;

pub use crate::breaker::{
    BreakerSnapshot, CallError, CircuitBreaker, Counters, DEFAULT_SEED, OwnedPermit, Permit,
    Rejected,
};
#[cfg(feature = "tokio")]
pub use crate::clock::TokioClock;
pub use crate::clock::{
    COARSE_CLOCK_RESOLUTION, Clock, CoarseClock, Instant, MANUAL_CLOCK_UNIX_ORIGIN_MS, ManualClock,
    SystemClock,
};
pub use crate::config::{
    BreakerConfig, ConfigError, DEFAULT_CONSECUTIVE_FAILURES, DEFAULT_OPEN_BASE, DEFAULT_OPEN_MAX,
    DEFAULT_PROBES, DEFAULT_SUCCESSES_TO_CLOSE, FailureRateConfig, HalfOpenConfig, LastCallsConfig,
    MAX_LAST_CALLS, MAX_PROBES, MAX_SUCCESSES_TO_CLOSE, Mode, OpenConfig, Probes, RawBreakerConfig,
    RawFailureRateConfig, RawHalfOpenConfig, RawLastCallsConfig, RawOpenConfig, RawSlowCallConfig,
    RawTripConfig, SlowCallConfig, TripConfig, UnknownMode, WINDOW_BUCKETS, scale_duration,
};
#[cfg(feature = "tokio")]
pub use crate::event::BroadcastSink;
pub use crate::event::{
    EventSink, MemorySink, NoopSink, Reason, TransitionDetail, TransitionEvent,
};
#[cfg(feature = "tokio")]
pub use crate::registry::BROADCAST_CAPACITY;
pub use crate::registry::Registry;
pub use crate::state::{Outcome, State};
