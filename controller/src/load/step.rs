//! One HTTP request a task makes, as every workload draws it.

use std::sync::Arc;

use http::header::{HeaderName, HeaderValue};
use http::{Method, Uri};

use super::session::Body;

/// One HTTP request a task makes.
#[derive(Debug, Clone)]
pub struct Step {
    pub endpoint: usize,
    pub method: Method,
    /// Origin-form request target (path and query).
    pub uri: Uri,
    pub body: Option<Body>,
    /// Headers besides the session's own (a custom workload's `headers`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Statuses that count as success (a custom workload's `expect`); `None` = any status below 400.
    pub expect: Option<Arc<[u16]>>,
}

impl Step {
    pub(super) fn get(endpoint: usize, uri: Uri) -> Self {
        Step {
            endpoint,
            method: Method::GET,
            uri,
            body: None,
            headers: Vec::new(),
            expect: None,
        }
    }
}
