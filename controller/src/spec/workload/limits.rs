//! Bounds of a custom workload, and the headers a request may not set.

use http::header::{self, HeaderName};

/// Bounds of a custom workload.
pub const MAX_TASKS: usize = 64;
pub const MAX_REQUESTS_PER_TASK: usize = 32;
pub const MAX_WEIGHT: u32 = 10_000;
pub const MAX_VALUES: usize = 10_000;
pub const MAX_HEADERS: usize = 32;
/// Longest header value as written, and longest value a placeholder in a header may put in it.
pub const MAX_HEADER_VALUE: usize = 4_096;
/// Deepest nesting and most values of a request's `json` body.
pub const MAX_JSON_DEPTH: usize = 16;
pub const MAX_JSON_VALUES: usize = 1_000;
/// Headers the session sets itself (framing and the target), which a request cannot replace.
pub(super) const RESERVED_HEADERS: [HeaderName; 4] = [
    header::HOST,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::CONNECTION,
];
