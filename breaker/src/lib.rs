//! Circuit breaker: a pure state machine with detectors, policies, events and async adapters.
