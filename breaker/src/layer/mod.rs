//! A tower middleware that runs every request of the wrapped service through one [`CircuitBreaker`]: rejected
//! requests fail fast with [`CallError::Rejected`] without reaching the service; the others are classified on
//! completion (a dropped response future counts as ignored and frees its probe slot).

mod classify;
mod future;
// Tower's folder layout (`mod.rs` service, `layer.rs`, `future.rs`) inside the contract's `layer` module.
#[allow(clippy::module_inception)]
mod layer;

use std::sync::Arc;
use std::task::{Context, Poll};

use tower_service::Service;

pub use self::classify::{Classify, ResultClassifier, StatusClassifier};
pub use self::future::ResponseFuture;
pub use self::layer::BreakerLayer;
use crate::breaker::{CallError, CircuitBreaker};

/// The wrapped service.
#[derive(Debug, Clone)]
pub struct BreakerService<S, C = ResultClassifier> {
    inner: S,
    breaker: Arc<CircuitBreaker>,
    classify: C,
}

impl<S, C> BreakerService<S, C> {
    /// Wrap `inner` with `breaker`, classifying results with `classify`.
    pub fn new(inner: S, breaker: Arc<CircuitBreaker>, classify: C) -> Self {
        BreakerService {
            inner,
            breaker,
            classify,
        }
    }

    /// The breaker.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, C, Request> Service<Request> for BreakerService<S, C>
where
    S: Service<Request>,
    C: Classify<S::Response, S::Error> + Clone,
{
    type Response = S::Response;
    type Error = CallError<S::Error>;
    type Future = ResponseFuture<S::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(CallError::Inner)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        match self.breaker.try_acquire_owned() {
            Ok(permit) => {
                ResponseFuture::running(self.inner.call(request), permit, self.classify.clone())
            }
            Err(rejected) => ResponseFuture::rejected(rejected, self.classify.clone()),
        }
    }
}
