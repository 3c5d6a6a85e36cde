//! [`ResponseFuture`]: the wrapped call, recording its outcome when it completes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::Classify;
use crate::breaker::{CallError, OwnedPermit, Rejected};

pin_project! {
    /// Resolves to the inner response, or `CallError::Rejected` at once when the breaker said no.
    #[derive(Debug)]
    pub struct ResponseFuture<F, C> {
        #[pin]
        inner: Option<F>,
        permit: Option<OwnedPermit>,
        rejected: Option<Rejected>,
        classify: C,
    }
}

impl<F, C> ResponseFuture<F, C> {
    pub(super) fn running(inner: F, permit: OwnedPermit, classify: C) -> Self {
        ResponseFuture {
            inner: Some(inner),
            permit: Some(permit),
            rejected: None,
            classify,
        }
    }

    pub(super) fn rejected(rejected: Rejected, classify: C) -> Self {
        ResponseFuture {
            inner: None,
            permit: None,
            rejected: Some(rejected),
            classify,
        }
    }
}

impl<F, C, T, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<T, E>>,
    C: Classify<T, E>,
{
    type Output = Result<T, CallError<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let Some(inner) = this.inner.as_pin_mut() else {
            let rejected = this.rejected.take().map(CallError::Rejected);
            return Poll::Ready(Err(rejected.unwrap_or_else(|| {
                CallError::Rejected(Rejected {
                    breaker: String::new(),
                    state: crate::state::State::Open,
                })
            })));
        };
        let result = std::task::ready!(inner.poll(cx));
        if let Some(permit) = this.permit.take() {
            permit.record(this.classify.classify(&result));
        }
        Poll::Ready(result.map_err(CallError::Inner))
    }
}
