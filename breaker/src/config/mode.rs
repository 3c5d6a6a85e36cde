//! How the breaker acts on its decisions: enforce, shadow, forced-open, disabled, and their names.

use serde::{Deserialize, Serialize};

/// How the breaker acts on its decisions.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Detect, trip and reject.
    #[default]
    Enforce,
    /// Detect and emit the transitions it would make (`shadow: true`), but never reject ("breaker off").
    Shadow,
    /// Reject every call.
    ForcedOpen,
    /// Admit every call and detect nothing (counters still count).
    Disabled,
}

/// A mode name that is not one of [`Mode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mode: `{0}` is not one of enforce, shadow, forced-open, disabled")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| UnknownMode(name.to_owned()))
    }
}

impl Mode {
    /// Every mode, in the order an operator is offered them.
    pub const ALL: [Mode; 4] = [
        Mode::Enforce,
        Mode::Shadow,
        Mode::ForcedOpen,
        Mode::Disabled,
    ];

    /// The config-file spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Shadow => "shadow",
            Mode::ForcedOpen => "forced-open",
            Mode::Disabled => "disabled",
        }
    }
}
