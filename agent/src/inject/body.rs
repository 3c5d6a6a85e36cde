//! [`FaultBody`]: the response body of a faulted service — the inner body, an injected answer, or an abort.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

/// Boxed error of a [`FaultBody`].
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a response is aborted instead of answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbortReason {
    /// A `reset` fault fired: the connection must be dropped.
    Reset,
    /// A `hang` fault held the request for the agent's whole hold cap: the connection must be closed.
    HoldCapReached,
    /// The `hang` fault holding the request ended (expired, deleted, replaced or halted): the connection is
    /// closed at once, as at the hold cap.
    FaultEnded,
}

/// The error an aborted body yields on its first poll, which makes hyper close the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("response aborted by the fault agent ({reason:?})")]
pub struct FaultAborted {
    pub reason: AbortReason,
}

pin_project! {
    /// Response body of a [`super::FaultService`].
    #[project = FaultBodyProjection]
    pub enum FaultBody<B> {
        /// No fault: the wrapped service's body, untouched.
        Passed { #[pin] inner: B },
        /// An `error` fault's body, sent in one frame.
        Injected { data: Option<Bytes> },
        /// A `reset` or an exhausted `hang`: fails on the first poll.
        Aborted { reason: AbortReason },
    }
}

impl<B> FaultBody<B> {
    /// Why this body aborts, if it does; servers use this to drop the connection without answering.
    pub fn abort_reason(&self) -> Option<AbortReason> {
        match self {
            FaultBody::Aborted { reason } => Some(*reason),
            _ => None,
        }
    }

    pub(crate) fn injected(data: Bytes) -> Self {
        FaultBody::Injected {
            data: (!data.is_empty()).then_some(data),
        }
    }
}

impl<B> Body for FaultBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.project() {
            FaultBodyProjection::Passed { inner } => inner
                .poll_frame(context)
                .map(|frame| frame.map(|result| result.map_err(Into::into))),
            FaultBodyProjection::Injected { data } => {
                Poll::Ready(data.take().map(|data| Ok(Frame::data(data))))
            }
            FaultBodyProjection::Aborted { reason } => {
                Poll::Ready(Some(Err(Box::new(FaultAborted { reason: *reason }))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            FaultBody::Passed { inner } => inner.is_end_stream(),
            FaultBody::Injected { data } => data.is_none(),
            FaultBody::Aborted { .. } => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            FaultBody::Passed { inner } => inner.size_hint(),
            FaultBody::Injected { data } => {
                SizeHint::with_exact(data.as_ref().map_or(0, |data| data.len() as u64))
            }
            FaultBody::Aborted { .. } => SizeHint::default(),
        }
    }
}
