//! Outcome classes of one request as a user saw it, and their counters.

use serde::{Deserialize, Serialize};

/// Header a boutique service sets when one of its breakers rejected the call.
pub const REJECTED_HEADER: &str = "x-tolerant-rejected";

/// What happened to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestOutcome {
    /// 1xx–3xx (after following redirects).
    Ok,
    /// 5xx without the rejection header: the dependency chain failed.
    Failed,
    /// A breaker rejected it (the `x-tolerant-rejected` header), whatever the status.
    Rejected,
    /// No complete response within the client timeout.
    Timeout,
    /// Connect, reset or protocol error.
    ConnectionError,
    /// 4xx without the rejection header: the request was wrong (e.g. 422 on invalid form input).
    ClientError,
}

impl RequestOutcome {
    pub const ALL: [RequestOutcome; 6] = [
        RequestOutcome::Ok,
        RequestOutcome::Failed,
        RequestOutcome::Rejected,
        RequestOutcome::Timeout,
        RequestOutcome::ConnectionError,
        RequestOutcome::ClientError,
    ];

    /// Classifies a complete response by status and whether the rejection header was present.
    pub fn of_response(status: u16, rejected: bool) -> RequestOutcome {
        if rejected {
            RequestOutcome::Rejected
        } else if status >= 500 {
            RequestOutcome::Failed
        } else if status >= 400 {
            RequestOutcome::ClientError
        } else {
            RequestOutcome::Ok
        }
    }

    /// Like [`RequestOutcome::of_response`] with the statuses that count as success: a listed status is ok, an
    /// unlisted one below 400 failed (the service did not do what the task expects); `None` lists nothing.
    pub fn of_response_expecting(
        status: u16,
        rejected: bool,
        expect: Option<&[u16]>,
    ) -> RequestOutcome {
        match (RequestOutcome::of_response(status, rejected), expect) {
            (RequestOutcome::Rejected, _) | (_, None) => {
                RequestOutcome::of_response(status, rejected)
            }
            (_, Some(expected)) if expected.contains(&status) => RequestOutcome::Ok,
            (RequestOutcome::Ok, Some(_)) => RequestOutcome::Failed,
            (other, Some(_)) => other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RequestOutcome::Ok => "ok",
            RequestOutcome::Failed => "failed",
            RequestOutcome::Rejected => "rejected",
            RequestOutcome::Timeout => "timeout",
            RequestOutcome::ConnectionError => "connection_error",
            RequestOutcome::ClientError => "client_error",
        }
    }
}

/// Requests counted per outcome class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeCounts {
    pub ok: u64,
    pub failed: u64,
    pub rejected: u64,
    pub timeout: u64,
    pub connection_error: u64,
    pub client_error: u64,
}

impl OutcomeCounts {
    pub fn add(&mut self, outcome: RequestOutcome) {
        *self.slot(outcome) += 1;
    }

    pub fn get(&self, outcome: RequestOutcome) -> u64 {
        match outcome {
            RequestOutcome::Ok => self.ok,
            RequestOutcome::Failed => self.failed,
            RequestOutcome::Rejected => self.rejected,
            RequestOutcome::Timeout => self.timeout,
            RequestOutcome::ConnectionError => self.connection_error,
            RequestOutcome::ClientError => self.client_error,
        }
    }

    fn slot(&mut self, outcome: RequestOutcome) -> &mut u64 {
        match outcome {
            RequestOutcome::Ok => &mut self.ok,
            RequestOutcome::Failed => &mut self.failed,
            RequestOutcome::Rejected => &mut self.rejected,
            RequestOutcome::Timeout => &mut self.timeout,
            RequestOutcome::ConnectionError => &mut self.connection_error,
            RequestOutcome::ClientError => &mut self.client_error,
        }
    }

    pub fn merge(&mut self, other: &OutcomeCounts) {
        for outcome in RequestOutcome::ALL {
            *self.slot(outcome) += other.get(outcome);
        }
    }

    /// Every request, whatever its outcome.
    pub fn total(&self) -> u64 {
        RequestOutcome::ALL.iter().map(|&o| self.get(o)).sum()
    }

    /// `ok / total` (a breaker rejection counts as a failure: the user got an error either way);
    /// `None` without requests.
    pub fn availability(&self) -> Option<f64> {
        let total = self.total();
        (total > 0).then(|| self.ok as f64 / total as f64)
    }
}
