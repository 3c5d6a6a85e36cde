//! The team's current config (Tolerant's breaker TOML or a library's file) and where it lands on the front.

use breaker::BreakerConfig;
use serde::Serialize;

use crate::advisor::libraries::{self, FieldNote, Library, NoteKind};
use crate::advisor::search::Evaluation;

/// The team's current config, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurrentConfig {
    pub config: BreakerConfig,
    /// `tolerant` or the library it was imported from.
    pub source: String,
    /// Field by field, how the library's settings map onto Tolerant's model.
    pub notes: Vec<FieldNote>,
}

/// A current config that cannot be read: Tolerant's TOML, or a library's file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CurrentError {
    #[error("Tolerant's breaker TOML: {0}")]
    Config(#[from] breaker::ConfigError),
    #[error("{0}: {1}")]
    Library(Library, libraries::LibraryError),
}

impl CurrentConfig {
    /// The current config in `text`: `library`'s format, or Tolerant's breaker TOML when `None`.
    pub fn read(
        text: &str,
        library: Option<Library>,
        instance: Option<&str>,
    ) -> Result<CurrentConfig, CurrentError> {
        match library {
            None => Ok(CurrentConfig {
                config: BreakerConfig::from_toml_str(text)?,
                source: "tolerant".into(),
                notes: vec![FieldNote::new(
                    "config",
                    NoteKind::Same,
                    "Tolerant's own vocabulary",
                )],
            }),
            Some(library) => {
                let imported = library
                    .import(text, instance)
                    .map_err(|error| CurrentError::Library(library, error))?;
                Ok(CurrentConfig {
                    config: imported.config,
                    source: library.as_str().into(),
                    notes: imported.notes,
                })
            }
        }
    }
}

/// The current config placed on the front.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurrentPlacement {
    pub evaluation: Evaluation,
    pub source: String,
    pub notes: Vec<FieldNote>,
    /// Whether it is on the front itself.
    pub on_front: bool,
    /// Front points that dominate it (lower rejection cost and at least as many caller-seconds saved).
    pub dominated_by: Vec<String>,
    /// Its rank by total cost among every candidate and it (1 = cheapest).
    pub rank: usize,
}
