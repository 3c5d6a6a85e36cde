//! How the middleware turns a service result into an [`Outcome`].

use crate::http::Classifier;
use crate::state::Outcome;

/// Classifies a service's result.
pub trait Classify<T, E> {
    /// The outcome of `result`.
    fn classify(&self, result: &Result<T, E>) -> Outcome;
}

impl<T, E, F: Fn(&Result<T, E>) -> Outcome> Classify<T, E> for F {
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        self(result)
    }
}

/// `Ok` → success, `Err` → failure.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResultClassifier;

impl<T, E> Classify<T, E> for ResultClassifier {
    fn classify(&self, result: &Result<T, E>) -> Outcome {
        if result.is_ok() {
            Outcome::Success
        } else {
            Outcome::Failure
        }
    }
}

/// HTTP responses by status ([`Classifier::status`]); a service error is a transport failure.
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusClassifier(pub Classifier);

impl<B, E> Classify<http::Response<B>, E> for StatusClassifier {
    fn classify(&self, result: &Result<http::Response<B>, E>) -> Outcome {
        match result {
            Ok(response) => self.0.status(response.status().as_u16()),
            Err(_) => Outcome::Failure,
        }
    }
}
