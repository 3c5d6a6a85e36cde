//! [`ResponseFuture`]: the wrapped call, recording its outcome when it completes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;

use super::Classify;
use crate::breaker::{CallError, OwnedPermit, Rejected};

pin_project! {
    /// Resolves to the inner response, or `CallError::Rejected` at once when the breaker said no.
    #[derive(Debug)]
    pub struct ResponseFuture<F, C> {
        #[pin]
        state: State<F>,
        classify: C,
    }
}

pin_project! {
    #[project = StateProjection]
    #[project_replace = StateReplace]
    #[derive(Debug)]
    enum State<F> {
        /// Admitted: waiting for the wrapped service; the permit records the outcome (dropped unrecorded, it
        /// counts the call as ignored and frees its probe slot).
        Running { #[pin] inner: F, permit: OwnedPermit },
        /// Rejected by the breaker: handed out on the first poll without calling the service.
        Rejected { rejected: Rejected },
        /// The answer was handed out.
        Done,
    }
}

impl<F, C> ResponseFuture<F, C> {
    pub(super) fn running(inner: F, permit: OwnedPermit, classify: C) -> Self {
        ResponseFuture {
            state: State::Running { inner, permit },
            classify,
        }
    }

    pub(super) fn rejected(rejected: Rejected, classify: C) -> Self {
        ResponseFuture {
            state: State::Rejected { rejected },
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
        let mut this = self.project();
        let result = match this.state.as_mut().project() {
            StateProjection::Running { inner, .. } => ready!(inner.poll(cx)),
            StateProjection::Rejected { .. } | StateProjection::Done => {
                return match this.state.project_replace(State::Done) {
                    StateReplace::Rejected { rejected } => {
                        Poll::Ready(Err(CallError::Rejected(rejected)))
                    }
                    _ => panic!("breaker ResponseFuture polled after completion"),
                };
            }
        };
        let StateReplace::Running { permit, .. } = this.state.project_replace(State::Done) else {
            unreachable!("the state was Running a moment ago");
        };
        permit.record(this.classify.classify(&result));
        Poll::Ready(result.map_err(CallError::Inner))
    }
}
