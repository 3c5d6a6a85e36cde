//! The limits of a head and the refusal of one over them or malformed: what the client or the upstream gets.

/// Most header fields in one head.
pub const MAX_HEADERS: usize = 100;
/// Longest head (request line or status line plus fields) accepted.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Free space made in a buffer before reading a head (most heads fit; a longer one grows the buffer).
pub(crate) const HEAD_READ_RESERVE: usize = 4 * 1024;

/// A head the sidecar refuses: a client's gets the [`HeadError::status`] answer, an upstream's a 502.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    #[error("head is over {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} fields")]
    TooLarge,
    #[error("malformed head: {0}")]
    Malformed(&'static str),
    #[error("{field}: {reason}")]
    Field {
        field: &'static str,
        reason: &'static str,
    },
    #[error("method {0}: not supported through the sidecar")]
    UnsupportedMethod(&'static str),
}

impl HeadError {
    /// The status a client gets for a request head with this error.
    pub fn status(&self) -> u16 {
        match self {
            HeadError::TooLarge => 431,
            HeadError::UnsupportedMethod(_) => 501,
            HeadError::Malformed(_) | HeadError::Field { .. } => 400,
        }
    }
}
