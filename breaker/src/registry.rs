//! [`Registry`]: the breakers of one service, keyed by name (`caller->dependency`, finer keys allowed), sharing one
//! config, clock, seed and event sink.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwap;
use parking_lot::RwLock;

use crate::breaker::{BreakerSnapshot, CircuitBreaker, DEFAULT_SEED};
use crate::clock::Clock;
use crate::config::BreakerConfig;
use crate::event::{EventSink, NoopSink, TransitionEvent};

/// Capacity of the registry's broadcast channel (events a slow subscriber may lag behind).
#[cfg(feature = "tokio")]
pub const BROADCAST_CAPACITY: usize = 1024;

/// Where every breaker of the registry sends its events: the registry's current sink (and its broadcast channel).
struct RegistrySink {
    sink: ArcSwap<Arc<dyn EventSink>>,
    #[cfg(feature = "tokio")]
    broadcast: crate::event::BroadcastSink,
}

impl EventSink for RegistrySink {
    fn emit(&self, event: &TransitionEvent) {
        self.sink.load().emit(event);
        #[cfg(feature = "tokio")]
        self.broadcast.emit(event);
    }
}

struct RegistryInner {
    service: String,
    clock: Arc<dyn Clock>,
    seed: AtomicU64,
    config: RwLock<BreakerConfig>,
    breakers: RwLock<HashMap<String, Arc<CircuitBreaker>>>,
    sink: Arc<RegistrySink>,
}

/// The breakers of one service. Cheap to clone (an `Arc` inside).
#[derive(Clone)]
pub struct Registry {
    inner: Arc<RegistryInner>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("service", &self.inner.service)
            .field("breakers", &self.inner.breakers.read().len())
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// An empty registry for `service`; breakers are created on first [`Registry::get`] with `config`.
    pub fn new(service: impl Into<String>, config: BreakerConfig, clock: Arc<dyn Clock>) -> Self {
        let sink = RegistrySink {
            sink: ArcSwap::from_pointee(Arc::new(NoopSink) as Arc<dyn EventSink>),
            #[cfg(feature = "tokio")]
            broadcast: crate::event::BroadcastSink::new(BROADCAST_CAPACITY),
        };
        Registry {
            inner: Arc::new(RegistryInner {
                service: service.into(),
                clock,
                seed: AtomicU64::new(DEFAULT_SEED),
                config: RwLock::new(config),
                breakers: RwLock::new(HashMap::new()),
                sink: Arc::new(sink),
            }),
        }
    }

    /// Send every breaker's transitions (present and future) to `sink`.
    pub fn with_sink(self, sink: Arc<dyn EventSink>) -> Self {
        self.inner.sink.sink.store(Arc::new(sink));
        self
    }

    /// Seed the open-window jitter of breakers created from now on (a config's `open.seed` wins).
    pub fn with_seed(self, seed: u64) -> Self {
        self.inner.seed.store(seed, Ordering::Relaxed);
        self
    }

    /// The service name.
    pub fn service(&self) -> &str {
        &self.inner.service
    }

    /// The clock every breaker uses.
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.inner.clock)
    }

    /// The breaker called `name`, created with the current config if it does not exist yet. Takes the registry's
    /// read lock (an atomic read-modify-write shared by all callers): on a hot path, look a breaker up once and keep
    /// the `Arc`.
    pub fn get(&self, name: &str) -> Arc<CircuitBreaker> {
        if let Some(breaker) = self.inner.breakers.read().get(name) {
            return Arc::clone(breaker);
        }
        let mut breakers = self.inner.breakers.write();
        let inner = &self.inner;
        let breaker = breakers.entry(name.to_string()).or_insert_with(|| {
            let config = inner.config.read().clone();
            Arc::new(
                CircuitBreaker::new(name, config, Arc::clone(&inner.clock))
                    .with_service(inner.service.clone())
                    .with_seed(inner.seed.load(Ordering::Relaxed))
                    .with_sink(Arc::clone(&inner.sink) as Arc<dyn EventSink>),
            )
        });
        Arc::clone(breaker)
    }

    /// Apply `config` to every breaker, present and future.
    pub fn set_config(&self, config: BreakerConfig) {
        let breakers = self.inner.breakers.write();
        *self.inner.config.write() = config.clone();
        for breaker in breakers.values() {
            breaker.set_config(config.clone());
        }
    }

    /// The config new breakers get.
    pub fn config(&self) -> BreakerConfig {
        self.inner.config.read().clone()
    }

    /// Reset every breaker.
    pub fn reset(&self) {
        for breaker in self.breakers() {
            breaker.reset();
        }
    }

    /// Every breaker, sorted by name.
    pub fn breakers(&self) -> Vec<Arc<CircuitBreaker>> {
        let mut breakers: Vec<_> = self.inner.breakers.read().values().cloned().collect();
        breakers.sort_by(|a, b| a.name().cmp(b.name()));
        breakers
    }

    /// Every breaker's snapshot, sorted by name.
    pub fn snapshots(&self) -> Vec<BreakerSnapshot> {
        self.breakers().iter().map(|b| b.snapshot()).collect()
    }

    /// A receiver of every transition of every breaker from now on.
    #[cfg(feature = "tokio")]
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<TransitionEvent> {
        self.inner.sink.broadcast.subscribe()
    }
}
