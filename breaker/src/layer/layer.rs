//! [`BreakerLayer`]: builds [`BreakerService`]s around one breaker.

use std::sync::Arc;

use tower_layer::Layer;

use super::{BreakerService, ResultClassifier};
use crate::breaker::CircuitBreaker;

/// Wraps a service so that its calls go through `breaker`.
#[derive(Debug, Clone)]
pub struct BreakerLayer<C = ResultClassifier> {
    breaker: Arc<CircuitBreaker>,
    classify: C,
}

impl BreakerLayer {
    /// `Ok` is a success, `Err` a failure.
    pub fn new(breaker: Arc<CircuitBreaker>) -> Self {
        BreakerLayer {
            breaker,
            classify: ResultClassifier,
        }
    }
}

impl<C> BreakerLayer<C> {
    /// Classify results with `classify` instead (e.g. [`super::StatusClassifier`] for HTTP responses).
    pub fn with_classifier<C2>(self, classify: C2) -> BreakerLayer<C2> {
        BreakerLayer {
            breaker: self.breaker,
            classify,
        }
    }
}

impl<S, C: Clone> Layer<S> for BreakerLayer<C> {
    type Service = BreakerService<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        BreakerService::new(inner, Arc::clone(&self.breaker), self.classify.clone())
    }
}
