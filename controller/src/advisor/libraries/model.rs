//! What every library's module speaks: which library, what an import and an export give, a note per field, the
//! error naming a field.

use std::fmt;
use std::str::FromStr;

use breaker::BreakerConfig;
use serde::Serialize;

/// A library whose breaker configs Tolerant reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Library {
    Resilience4j,
    Polly,
    Gobreaker,
    Pybreaker,
    Opossum,
}

/// How a library's field maps onto Tolerant's model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// The same semantics.
    Same,
    /// Modelled, with a stated difference.
    Approximation,
    /// Not about when the breaker trips or recovers (names, health indicators, listeners): kept for export.
    Kept,
}

impl NoteKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NoteKind::Same => "same",
            NoteKind::Approximation => "approximation",
            NoteKind::Kept => "kept",
        }
    }
}

/// One field of a library's config and how it maps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldNote {
    pub field: String,
    pub kind: NoteKind,
    pub note: String,
}

impl FieldNote {
    pub fn new(field: impl Into<String>, kind: NoteKind, note: impl Into<String>) -> Self {
        FieldNote {
            field: field.into(),
            kind,
            note: note.into(),
        }
    }
}

/// A library config that cannot be read or written; `Display` names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct LibraryError {
    pub field: String,
    pub message: String,
}

impl LibraryError {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        LibraryError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A library config read into Tolerant's model.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub library: Library,
    pub config: BreakerConfig,
    /// Field by field, how it maps.
    pub notes: Vec<FieldNote>,
    /// The library's effective settings (defaults filled in), by field, as text: what a round trip compares.
    pub settings: Vec<(String, String)>,
    /// Settings the config does not hold but an export writes back (a name, a call timeout, health flags).
    pub carried: Vec<(String, String)>,
}

/// A config written in a library's vocabulary.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub text: String,
    /// How the config's fields map onto the library's.
    pub notes: Vec<FieldNote>,
}

impl Library {
    pub const ALL: [Library; 5] = [
        Library::Resilience4j,
        Library::Polly,
        Library::Gobreaker,
        Library::Pybreaker,
        Library::Opossum,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Library::Resilience4j => "resilience4j",
            Library::Polly => "polly",
            Library::Gobreaker => "gobreaker",
            Library::Pybreaker => "pybreaker",
            Library::Opossum => "opossum",
        }
    }

    /// The file extension an export is written with.
    pub fn extension(self) -> &'static str {
        match self {
            Library::Resilience4j => "yml",
            Library::Polly => "json",
            Library::Gobreaker => "go",
            Library::Pybreaker => "py",
            Library::Opossum => "js",
        }
    }

    /// The library a config file is written for, from its extension and, failing that, its text.
    pub fn recognise(file_name: &str, text: &str) -> Option<Library> {
        let lower = file_name.to_ascii_lowercase();
        let by_extension = [
            (".yml", Library::Resilience4j),
            (".yaml", Library::Resilience4j),
            (".go", Library::Gobreaker),
            (".py", Library::Pybreaker),
            (".js", Library::Opossum),
            (".mjs", Library::Opossum),
            (".ts", Library::Opossum),
        ];
        if let Some((_, library)) = by_extension.iter().find(|(ext, _)| lower.ends_with(ext)) {
            return Some(*library);
        }
        if text.contains("resilience4j") {
            Some(Library::Resilience4j)
        } else if text.contains("gobreaker") {
            Some(Library::Gobreaker)
        } else if text.contains("pybreaker") || text.contains("fail_max") {
            Some(Library::Pybreaker)
        } else if text.contains("errorThresholdPercentage") || text.contains("resetTimeout") {
            Some(Library::Opossum)
        } else if text.contains("FailureRatio") || text.contains("BreakDuration") {
            Some(Library::Polly)
        } else {
            None
        }
    }
}

impl fmt::Display for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A library name that is not one of [`Library::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not one of resilience4j, polly, gobreaker, pybreaker, opossum")]
pub struct UnknownLibrary(pub String);

impl FromStr for Library {
    type Err = UnknownLibrary;
    fn from_str(text: &str) -> Result<Self, UnknownLibrary> {
        Library::ALL
            .into_iter()
            .find(|l| l.as_str() == text.trim().to_ascii_lowercase())
            .ok_or_else(|| UnknownLibrary(text.to_owned()))
    }
}
