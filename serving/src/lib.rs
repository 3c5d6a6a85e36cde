//! What every server of the stack — the boutique services, the agent's control port and sidecar, the dashboard —
//! serves through, so none borrows it from another:
//!
//! - [`server`]: serving an axum router with the one head-read timeout ([`serve`], [`HEADER_READ_TIMEOUT`]).
//! - [`event_stream`]: the read-only event streams' loop (`/_agent/stream`, `/_breakers/stream`), a stalled client
//!   dropped.
//! - [`origin`]: who may open such a stream from a browser.
//! - [`error_body`]: the one JSON body of every error answer ([`ErrorBody`]).
//! - [`throttle`]: wrong bearer tokens throttled per client address ([`throttle::TokenThrottle`]).
//! - [`runtime`]: the process's live tokio task count, the gauge every `/metrics` of Tolerant's own ends with.

pub mod error_body;
pub mod event_stream;
pub mod origin;
pub mod runtime;
pub mod server;
pub mod throttle;

pub use error_body::ErrorBody;
pub use server::{
    CLIENT_IDLE_TIMEOUT, HEADER_READ_TIMEOUT, HEADER_READ_TIMEOUT_RANGE, HeadReadTimeoutOutOfRange,
    check_header_read_timeout, serve,
};
