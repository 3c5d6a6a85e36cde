//! The fault middleware: a tower [`Service`] that asks its [`Agent`] what to do with each request.
//!
//! What each fault kind does inside a service, where no socket is reachable:
//!
//! - `error`: answers at once with the fault's status and body (plus `x-tolerant-injected: error`); the wrapped
//!   service is not called.
//! - `delay`: sleeps (at most the agent's hold cap, and only while the fault lasts), then calls the wrapped
//!   service with the request. The service is taken out of the layer while
//!   ready (the clone-and-swap idiom), so `poll_ready` semantics hold across the sleep.
//! - `hang`: the future stays pending. If the client gives up and the server drops the future, the request is
//!   gone (the `held` gauge falls). After the agent's hold cap, or as soon as the fault ends (expiry, delete,
//!   replacement, halt), it resolves to an *aborted* response.
//! - `reset`: resolves at once to an aborted response.
//!
//! An aborted response carries a [`FaultBody::Aborted`] body that fails on its first poll. hyper's HTTP/1 server
//! then closes the connection: it has buffered the status line and headers (502, `x-tolerant-injected`) but they
//! are discarded with the connection, so on loopback the client sees the connection closed with no response bytes
//! (`tests/layer_over_socket.rs` checks this). The close is an orderly FIN, not a TCP RST; the sidecar
//! ([`crate::sidecar`]) owns its sockets and sends a real RST for `reset` instead. Servers that own their
//! connections can look at [`FaultBody::abort_reason`] and drop the connection themselves.
//!
//! A request marked as a caller's half-open probe ([`crate::PROBE_HEADER`]) is counted before anything else.
//!
//! Requests under `/_agent/` are passed through untouched and uncounted, so a control router behind the layer
//! stays reachable whatever faults are active.

mod body;
mod future;
mod layer;

use std::task::{Context, Poll};

use http::{Request, Response, StatusCode};
use tower_service::Service;

pub use body::{AbortReason, BoxError, FaultAborted, FaultBody};
pub use future::{INJECTED_HEADER, ResponseFuture};
pub use layer::FaultLayer;

use crate::agent::Agent;
use crate::fault_table::decision::Injection;
pub(crate) use future::HeldRequest;
use future::{MadeUpAnswer, Released};

/// A service with an agent's faults in front of it. Built by [`FaultLayer`].
#[derive(Debug, Clone)]
pub struct FaultService<S> {
    agent: Agent,
    inner: S,
}

impl<S> FaultService<S> {
    pub fn new(agent: Agent, inner: S) -> Self {
        FaultService { agent, inner }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for FaultService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone,
{
    type Response = Response<FaultBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqBody>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        if request.headers().contains_key(crate::PROBE_HEADER) {
            self.agent.record_probe();
        }
        match self.agent.decide(request.method(), request.uri().path()) {
            None => ResponseFuture::called(self.inner.call(request)),
            Some(Injection::Error { status, body }) => {
                ResponseFuture::answered(MadeUpAnswer::Error {
                    status: StatusCode::from_u16(status)
                        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    body,
                })
            }
            Some(Injection::Delay { wait, released }) => {
                let fresh = self.inner.clone();
                let ready = std::mem::replace(&mut self.inner, fresh);
                ResponseFuture::delaying(
                    Released::new(tokio::time::sleep(wait), released),
                    ready,
                    request,
                )
            }
            Some(Injection::Hang { hold, released }) => ResponseFuture::holding(
                Released::new(tokio::time::sleep(hold), released),
                HeldRequest::new(self.agent.held_gauge()),
            ),
            Some(Injection::Reset) => {
                ResponseFuture::answered(MadeUpAnswer::Abort(AbortReason::Reset))
            }
        }
    }
}
