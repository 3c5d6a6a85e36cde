//! A bounded worker pool per service: `capacity` requests run at once, up to `queue` wait, the rest get a
//! quick 503.
//!
//! Async services have no threads to exhaust, so the pool is what makes exhaustion real and visible: a
//! request holds its slot until its response is ready, including the time it spends waiting on a hanging
//! dependency. That is the cascade a breaker exists to stop (seed 001), and the numbers it exports
//! (`in_flight`, `queued`, `capacity`) are what the collector samples. The pool also stamps, in milliseconds
//! on the clock it is given, when it becomes full and when it stops being full ([`crate::pool_edges`]): a
//! sample a second cannot see a fill that takes about a second.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use breaker::Clock;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::PoolConfig;
use crate::pool_edges::{Fullness, FullnessStats};

/// Occupancy of a pool at one instant (the `/_pool` body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStats {
    pub in_flight: usize,
    pub queued: usize,
    pub capacity: usize,
    pub queue_capacity: usize,
    pub rejected: u64,
    /// When the pool was full (every field defaults, so bodies without them still parse).
    #[serde(flatten)]
    pub fullness: FullnessStats,
}

/// The pool is full and so is its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("worker pool full: {capacity} in flight and {queue_capacity} queued")]
pub struct PoolFull {
    pub capacity: usize,
    pub queue_capacity: usize,
}

/// A bounded worker pool, cheap to clone.
#[derive(Debug, Clone)]
pub struct WorkerPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    workers: Arc<Semaphore>,
    capacity: usize,
    queue_capacity: usize,
    queued: AtomicUsize,
    rejected: AtomicU64,
    clock: Arc<dyn Clock>,
    fullness: Mutex<Fullness>,
    /// `fullness`'s last noted state, read without its lock.
    noted_full: AtomicBool,
}

impl std::fmt::Debug for PoolInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoolInner")
            .field("capacity", &self.capacity)
            .field("queue_capacity", &self.queue_capacity)
            .finish_non_exhaustive()
    }
}

impl PoolInner {
    fn now_ms(&self) -> u64 {
        self.clock.unix_ms(self.clock.now())
    }

    /// Notes whether every worker is taken now. The check runs under the lock, so the edges are in the order
    /// the pool's state changed; a request that changes nothing (the pool neither fills nor frees, nearly
    /// every one) skips the lock and the clock, as the state it would note is the one already noted.
    fn observe(&self) {
        let full = |pool: &PoolInner| pool.workers.available_permits() == 0;
        if full(self) == self.noted_full.load(Ordering::Acquire) {
            return;
        }
        let mut fullness = self.fullness.lock();
        let now_full = full(self);
        fullness.observe(now_full, self.now_ms());
        self.noted_full.store(now_full, Ordering::Release);
    }
}

/// A held worker; the slot frees when this drops.
#[derive(Debug)]
pub struct WorkerSlot {
    permit: Option<OwnedSemaphorePermit>,
    pool: Arc<PoolInner>,
}

impl WorkerSlot {
    fn taken(permit: OwnedSemaphorePermit, pool: &Arc<PoolInner>) -> WorkerSlot {
        pool.observe();
        WorkerSlot {
            permit: Some(permit),
            pool: pool.clone(),
        }
    }
}

impl Drop for WorkerSlot {
    fn drop(&mut self) {
        // A queued request takes the freed worker at once, so the pool stays full while its queue holds any.
        drop(self.permit.take());
        self.pool.observe();
    }
}

/// Decrements the queue count however the wait ends (admitted, or the request was dropped).
struct QueuedGuard<'a>(&'a AtomicUsize);

impl Drop for QueuedGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl WorkerPool {
    /// A pool with `config.capacity` workers and a queue of `config.queue`, on the system clock.
    pub fn new(config: PoolConfig) -> Self {
        Self::with_clock(config, Arc::new(breaker::SystemClock))
    }

    /// A pool stamping its full / not-full edges with `clock`.
    pub fn with_clock(config: PoolConfig, clock: Arc<dyn Clock>) -> Self {
        WorkerPool {
            inner: Arc::new(PoolInner {
                workers: Arc::new(Semaphore::new(config.capacity)),
                capacity: config.capacity,
                queue_capacity: config.queue,
                queued: AtomicUsize::new(0),
                rejected: AtomicU64::new(0),
                clock,
                fullness: Mutex::new(Fullness::default()),
                noted_full: AtomicBool::new(false),
            }),
        }
    }

    /// Starts a new account of full stretches (between runs: `POST /_admin/reset`).
    pub fn reset_fullness(&self) {
        let inner = &*self.inner;
        let mut fullness = inner.fullness.lock();
        let full = inner.workers.available_permits() == 0;
        fullness.observe(full, inner.now_ms());
        inner.noted_full.store(full, Ordering::Release);
        fullness.reset(inner.now_ms());
    }

    /// Takes a worker, waiting in the queue if every worker is busy; fails at once if the queue is full too.
    pub async fn admit(&self) -> Result<WorkerSlot, PoolFull> {
        let inner = &*self.inner;
        if let Ok(permit) = inner.workers.clone().try_acquire_owned() {
            return Ok(WorkerSlot::taken(permit, &self.inner));
        }
        let joined = inner
            .queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued < inner.queue_capacity).then_some(queued + 1)
            });
        if joined.is_err() {
            inner.rejected.fetch_add(1, Ordering::Relaxed);
            return Err(PoolFull {
                capacity: inner.capacity,
                queue_capacity: inner.queue_capacity,
            });
        }
        let _queued = QueuedGuard(&inner.queued);
        let permit = inner
            .workers
            .clone()
            .acquire_owned()
            .await
            .expect("the pool never closes its semaphore");
        Ok(WorkerSlot::taken(permit, &self.inner))
    }

    /// Current occupancy.
    pub fn stats(&self) -> PoolStats {
        let inner = &*self.inner;
        PoolStats {
            in_flight: inner.capacity - inner.workers.available_permits().min(inner.capacity),
            queued: inner.queued.load(Ordering::Acquire),
            capacity: inner.capacity,
            queue_capacity: inner.queue_capacity,
            rejected: inner.rejected.load(Ordering::Relaxed),
            fullness: inner.fullness.lock().stats(inner.now_ms()),
        }
    }
}

/// Axum middleware: runs the request inside a worker slot, or answers 503 at once when the pool is full.
pub async fn limit(State(pool): State<WorkerPool>, request: Request, next: Next) -> Response {
    match pool.admit().await {
        Ok(slot) => {
            let response = next.run(request).await;
            drop(slot);
            response
        }
        Err(full) => {
            let mut response = (StatusCode::SERVICE_UNAVAILABLE, full.to_string()).into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task waiting in `pool`'s queue (the queue then holds one), admitted or refused when it ends.
    async fn queue_one(pool: &WorkerPool) -> tokio::task::JoinHandle<Result<(), PoolFull>> {
        let waiting_pool = pool.clone();
        let waiter = tokio::spawn(async move { waiting_pool.admit().await.map(|_| ()) });
        for _ in 0..100 {
            if pool.stats().queued == 1 {
                break;
            }
            tokio::task::yield_now().await;
        }
        waiter
    }

    #[tokio::test]
    async fn admits_capacity_then_queues_then_rejects() {
        let pool = WorkerPool::new(PoolConfig {
            capacity: 2,
            queue: 1,
        });
        let first = pool.admit().await.unwrap();
        let _second = pool.admit().await.unwrap();
        assert_eq!(pool.stats().in_flight, 2);

        let waiter = queue_one(&pool).await;
        assert_eq!(pool.stats().queued, 1);

        assert!(pool.admit().await.is_err(), "queue is full");
        assert_eq!(pool.stats().rejected, 1);

        drop(first);
        waiter.await.unwrap().unwrap();
        assert_eq!(pool.stats().queued, 0);
    }

    #[tokio::test]
    async fn a_dropped_waiter_leaves_the_queue() {
        let pool = WorkerPool::new(PoolConfig {
            capacity: 1,
            queue: 1,
        });
        let _held = pool.admit().await.unwrap();
        let waiter = queue_one(&pool).await;
        waiter.abort();
        let _ = waiter.await;
        assert_eq!(pool.stats().queued, 0);
    }

    #[tokio::test]
    async fn the_pool_stamps_when_it_fills_and_when_it_frees() {
        let clock = Arc::new(breaker::ManualClock::with_unix_origin_ms(1_000_000));
        let pool = WorkerPool::with_clock(
            PoolConfig {
                capacity: 2,
                queue: 1,
            },
            clock.clone(),
        );
        let first = pool.admit().await.unwrap();
        clock.advance(std::time::Duration::from_millis(1_280));
        let second = pool.admit().await.unwrap();
        let full = pool.stats().fullness;
        assert!(full.full);
        assert_eq!(full.first_full_ms, Some(1_001_280));

        clock.advance(std::time::Duration::from_millis(750));
        drop(second);
        drop(first);
        let freed = pool.stats().fullness;
        assert!(!freed.full);
        assert_eq!(freed.fills, 1);
        assert_eq!(freed.full_ms, 750);
        assert_eq!(
            freed.edges,
            [(1_001_280, true), (1_002_030, false)]
                .map(|(at_ms, full)| crate::pool_edges::FullEdge { at_ms, full })
        );

        pool.reset_fullness();
        let reset = pool.stats().fullness;
        assert_eq!(
            (reset.fills, reset.first_full_ms, reset.edges.len()),
            (0, None, 0)
        );
    }
}
