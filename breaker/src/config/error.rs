//! The one error of a config check, naming the field.

/// An invalid configuration; `Display` names the field, e.g. `half_open.probes: must be at least 1`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// Dotted path of the offending field (`config` for the document as a whole).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl ConfigError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}
