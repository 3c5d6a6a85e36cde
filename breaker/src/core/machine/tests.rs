//! Pure transition tests.
