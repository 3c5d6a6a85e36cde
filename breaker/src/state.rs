//! The breaker's three states and the three outcomes a call can report.

use serde::{Deserialize, Serialize};

/// Where the breaker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Calls pass and outcomes are watched.
    Closed,
    /// Calls are rejected until the open window ends.
    Open,
    /// A limited number of probes test whether the dependency recovered.
    HalfOpen,
}

impl State {
    /// The wire spelling (`closed`, `open`, `half_open`).
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        }
    }

    pub(crate) fn index(self) -> usize {
        match self {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
        }
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a call's result means to the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The dependency worked.
    Success,
    /// The dependency failed (5xx, timeout, connect or reset error).
    Failure,
    /// Says nothing about the dependency (a 4xx, a cancelled call): counted, never detected on.
    Ignored,
}
