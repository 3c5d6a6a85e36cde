//! Classifying HTTP results: 5xx, timeouts and connect/reset errors are dependency failures; 4xx is the caller's
//! mistake and must not open a breaker for everyone (429 is configurable).

use crate::state::Outcome;

/// Maps HTTP statuses and transport errors to outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Classifier {
    /// Count 429 Too Many Requests as a failure (default: ignored, like every 4xx).
    pub treat_429_as_failure: bool,
}

/// Kinds of transport failure, for callers whose client reports them as flags (e.g. `reqwest::Error::is_timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportError {
    /// The request or connect timed out.
    Timeout,
    /// The connection could not be made.
    Connect,
    /// The connection was reset or closed mid-request.
    Reset,
    /// Any other transport failure (malformed response, protocol error).
    Other,
}

impl Classifier {
    /// 5xx → failure, 4xx → ignored (429 per `treat_429_as_failure`), anything else → success.
    pub fn status(&self, status: u16) -> Outcome {
        match status {
            429 if self.treat_429_as_failure => Outcome::Failure,
            500..=599 => Outcome::Failure,
            400..=499 => Outcome::Ignored,
            _ => Outcome::Success,
        }
    }

    /// Every transport error is a dependency failure.
    pub fn transport(&self, _error: TransportError) -> Outcome {
        Outcome::Failure
    }

    /// An I/O error is a dependency failure, except an interrupted call (the caller gave up: ignored).
    pub fn io_error(&self, error: &std::io::Error) -> Outcome {
        match error.kind() {
            std::io::ErrorKind::Interrupted => Outcome::Ignored,
            _ => Outcome::Failure,
        }
    }

    /// A status or a transport error.
    pub fn result<E>(
        &self,
        result: &Result<u16, E>,
        transport: impl FnOnce(&E) -> TransportError,
    ) -> Outcome {
        match result {
            Ok(status) => self.status(*status),
            Err(error) => self.transport(transport(error)),
        }
    }
}

/// Which kind of I/O error this is, as a [`TransportError`].
pub fn transport_kind(error: &std::io::Error) -> TransportError {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::TimedOut | ErrorKind::WouldBlock => TransportError::Timeout,
        ErrorKind::ConnectionRefused | ErrorKind::AddrNotAvailable | ErrorKind::NotConnected => {
            TransportError::Connect
        }
        ErrorKind::ConnectionReset
        | ErrorKind::ConnectionAborted
        | ErrorKind::BrokenPipe
        | ErrorKind::UnexpectedEof => TransportError::Reset,
        _ => TransportError::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let c = Classifier::default();
        assert_eq!(c.status(200), Outcome::Success);
        assert_eq!(c.status(302), Outcome::Success);
        assert_eq!(c.status(404), Outcome::Ignored);
        assert_eq!(c.status(422), Outcome::Ignored);
        assert_eq!(c.status(429), Outcome::Ignored);
        assert_eq!(c.status(500), Outcome::Failure);
        assert_eq!(c.status(503), Outcome::Failure);
        let strict = Classifier {
            treat_429_as_failure: true,
        };
        assert_eq!(strict.status(429), Outcome::Failure);
        assert_eq!(strict.status(404), Outcome::Ignored);
    }

    #[test]
    fn transport_errors_are_failures() {
        let c = Classifier::default();
        for kind in [
            TransportError::Timeout,
            TransportError::Connect,
            TransportError::Reset,
            TransportError::Other,
        ] {
            assert_eq!(c.transport(kind), Outcome::Failure);
        }
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert_eq!(transport_kind(&reset), TransportError::Reset);
        assert_eq!(c.io_error(&reset), Outcome::Failure);
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(transport_kind(&refused), TransportError::Connect);
        let timeout = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert_eq!(transport_kind(&timeout), TransportError::Timeout);
        assert_eq!(
            c.result(&Err::<u16, _>(timeout), transport_kind),
            Outcome::Failure
        );
        assert_eq!(
            c.result::<std::io::Error>(&Ok(404), transport_kind),
            Outcome::Ignored
        );
    }
}
