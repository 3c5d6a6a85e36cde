//! Config parsing and validation tests.
