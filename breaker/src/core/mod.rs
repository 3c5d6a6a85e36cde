//! The pure core: the packed state word and the transitions on it. No clock, no I/O, no atomics — time is an
//! argument and every function maps a word to the next word, so the shell can wrap each in one CAS loop and tests
//! can call them directly.

pub(crate) mod machine;
pub(crate) mod policy;
pub(crate) mod word;
