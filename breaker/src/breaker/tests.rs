//! Breaker shell tests.
