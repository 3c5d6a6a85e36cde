//! [`ResponseFuture`]: the future of one request through a [`super::FaultService`].

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tower_service::Service;

use super::body::{AbortReason, FaultBody};

/// Header naming the fault kind on every answer the agent made up itself.
pub const INJECTED_HEADER: &str = "x-tolerant-injected";

/// An answer decided without calling the wrapped service.
#[derive(Debug)]
pub(crate) enum MadeUpAnswer {
    Error { status: StatusCode, body: Bytes },
    Abort(AbortReason),
}

impl MadeUpAnswer {
    fn into_response<B>(self) -> Response<FaultBody<B>> {
        match self {
            MadeUpAnswer::Error { status, body } => {
                let has_body = !body.is_empty();
                let mut response = Response::new(FaultBody::injected(body));
                *response.status_mut() = status;
                let headers = response.headers_mut();
                headers.insert(INJECTED_HEADER, HeaderValue::from_static("error"));
                if has_body {
                    headers.insert(
                        http::header::CONTENT_TYPE,
                        HeaderValue::from_static("text/plain; charset=utf-8"),
                    );
                }
                response
            }
            MadeUpAnswer::Abort(reason) => {
                let mut response = Response::new(FaultBody::Aborted { reason });
                *response.status_mut() = StatusCode::BAD_GATEWAY;
                let kind = match reason {
                    AbortReason::Reset => "reset",
                    AbortReason::HoldCapReached | AbortReason::FaultEnded => "hang",
                };
                response
                    .headers_mut()
                    .insert(INJECTED_HEADER, HeaderValue::from_static(kind));
                response
            }
        }
    }
}

/// Counts a request as held while it lives (the `requests held` gauge).
#[derive(Debug)]
pub(crate) struct HeldRequest {
    held: Arc<AtomicU64>,
}

impl HeldRequest {
    pub(crate) fn new(held: Arc<AtomicU64>) -> Self {
        held.fetch_add(1, Ordering::Relaxed);
        HeldRequest { held }
    }
}

impl Drop for HeldRequest {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::Relaxed);
    }
}

/// How a [`Released`] wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// The whole time passed.
    Elapsed,
    /// The fault that holds the request ended first (expired, deleted, replaced or halted).
    FaultEnded,
}

pin_project! {
    /// A wait that ends after its time or as soon as its fault ends, whichever comes first.
    pub(crate) struct Released {
        #[pin]
        sleep: Sleep,
        #[pin]
        released: WaitForCancellationFutureOwned,
    }
}

impl Released {
    pub(crate) fn new(sleep: Sleep, released: CancellationToken) -> Self {
        Released {
            sleep,
            released: released.cancelled_owned(),
        }
    }
}

impl Future for Released {
    type Output = WaitEnd;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<WaitEnd> {
        let this = self.project();
        if this.released.poll(context).is_ready() {
            return Poll::Ready(WaitEnd::FaultEnded);
        }
        this.sleep.poll(context).map(|()| WaitEnd::Elapsed)
    }
}

pin_project! {
    /// Future of [`super::FaultService`].
    pub struct ResponseFuture<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        #[pin]
        state: State<S, ReqBody>,
    }
}

pin_project! {
    #[project = StateProjection]
    enum State<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        /// Passed through: waiting for the wrapped service.
        Called { #[pin] future: S::Future },
        /// A `delay` fault: sleeping (until the delay is over or the fault ends), then the request goes to the
        /// service (already ready). Boxed, like `Holding`, so the common pass-through future stays small.
        Delaying {
            wait: Pin<Box<Released>>,
            pending: Option<Box<(S, Request<ReqBody>)>>,
        },
        /// A `hang` fault: held until the client gives up (the future is dropped), the hold cap, or the fault ends.
        Holding { wait: Pin<Box<Released>>, held: HeldRequest },
        /// An answer made up by the agent, handed out on the first poll.
        Answered { answer: Option<MadeUpAnswer> },
    }
}

impl<S, ReqBody> ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    pub(crate) fn called(future: S::Future) -> Self {
        ResponseFuture {
            state: State::Called { future },
        }
    }

    pub(crate) fn delaying(wait: Released, service: S, request: Request<ReqBody>) -> Self {
        ResponseFuture {
            state: State::Delaying {
                wait: Box::pin(wait),
                pending: Some(Box::new((service, request))),
            },
        }
    }

    pub(crate) fn holding(wait: Released, held: HeldRequest) -> Self {
        ResponseFuture {
            state: State::Holding {
                wait: Box::pin(wait),
                held,
            },
        }
    }

    pub(crate) fn answered(answer: MadeUpAnswer) -> Self {
        ResponseFuture {
            state: State::Answered {
                answer: Some(answer),
            },
        }
    }
}

impl<S, ReqBody, ResBody> Future for ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
{
    type Output = Result<Response<FaultBody<ResBody>>, S::Error>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                StateProjection::Called { future } => {
                    let response = ready!(future.poll(context))?;
                    return Poll::Ready(Ok(response.map(|inner| FaultBody::Passed { inner })));
                }
                StateProjection::Delaying { wait, pending } => {
                    ready!(wait.as_mut().poll(context));
                    let (mut service, request) = *pending
                        .take()
                        .expect("ResponseFuture polled after the delayed request was sent");
                    let future = service.call(request);
                    state.set(State::Called { future });
                }
                StateProjection::Holding { wait, .. } => {
                    let reason = match ready!(wait.as_mut().poll(context)) {
                        WaitEnd::Elapsed => AbortReason::HoldCapReached,
                        WaitEnd::FaultEnded => AbortReason::FaultEnded,
                    };
                    state.set(State::Answered {
                        answer: Some(MadeUpAnswer::Abort(reason)),
                    });
                }
                StateProjection::Answered { answer } => {
                    let answer = answer
                        .take()
                        .expect("ResponseFuture polled after completion");
                    return Poll::Ready(Ok(answer.into_response()));
                }
            }
        }
    }
}
