//! `SpecError`: what is wrong with an experiment spec, naming the field and the line.

use std::fmt;
use std::ops::Range;

/// Where in the spec text a problem sits (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// The location of byte offset `offset` in `source`.
    pub fn of_offset(source: &str, offset: usize) -> Self {
        let offset = offset.min(source.len());
        let before = &source[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rfind('\n')
            .map_or(offset, |newline| offset - newline - 1)
            + 1;
        Location { line, column }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// An experiment spec that cannot run. Nothing is stored and nothing runs when one is returned.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// A field with a wrong, unknown, missing or impossible value.
    #[error("{field} ({location}): {message}")]
    Field {
        /// Dotted path of the field, e.g. `load.users` or `fault.rates[2]`.
        field: String,
        location: Location,
        message: String,
    },
    /// The text is not TOML at all (no field to blame).
    #[error("not valid TOML ({location}): {message}")]
    Syntax { location: Location, message: String },
    /// The spec file could not be read.
    #[error("cannot read spec {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl SpecError {
    /// The dotted field path this error blames, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            SpecError::Field { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The line (1-based) of the problem, if known.
    pub fn line(&self) -> Option<usize> {
        match self {
            SpecError::Field { location, .. } | SpecError::Syntax { location, .. } => {
                Some(location.line)
            }
            SpecError::Read { .. } => None,
        }
    }

    pub(crate) fn field_at(
        source: &str,
        field: impl Into<String>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        SpecError::Field {
            field: field.into(),
            location: Location::of_offset(source, span.start),
            message: message.into(),
        }
    }

    /// Turns a `toml` deserialisation error into a `SpecError` that names the field: the key path is
    /// recovered from the error's span (the key itself for unknown fields, the value otherwise) and the
    /// table headers above it.
    pub(crate) fn from_toml(source: &str, error: &toml::de::Error) -> Self {
        let message = error.message().trim().to_owned();
        let Some(span) = error.span() else {
            return SpecError::Syntax {
                location: Location { line: 1, column: 1 },
                message,
            };
        };
        let location = Location::of_offset(source, span.start);
        match field_path_at(source, span.clone(), &message) {
            Some(field) => SpecError::Field {
                field,
                location,
                message,
            },
            None => SpecError::Syntax { location, message },
        }
    }
}

/// Best-effort dotted path of the key a span points at (or whose value it covers).
fn field_path_at(source: &str, span: Range<usize>, message: &str) -> Option<String> {
    let start = span.start.min(source.len());
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    let line = source[line_start..line_end].trim();

    // A missing field is reported against the table that lacks it.
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());

    let table = enclosing_table(source, line_start);
    let key = if line.starts_with('[') {
        // The span is a table header (or the whole table): the header names the field.
        None
    } else {
        line.split('=')
            .next()
            .map(|key| key.trim().trim_matches('"').to_owned())
            .filter(|key| !key.is_empty())
    };
    let header = line.starts_with('[').then(|| {
        line.trim_matches(|c| c == '[' || c == ']')
            .trim()
            .to_owned()
    });

    // An unknown field's span is the key itself.
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|rest| rest.split('`').next());

    let mut parts: Vec<String> = Vec::new();
    match (&header, &key) {
        (Some(header), _) => parts.push(header.clone()),
        (None, Some(key)) => {
            if let Some(table) = table {
                parts.push(table);
            }
            match unknown {
                Some(unknown) if key != unknown && !key.ends_with(unknown) => {
                    // An inline table: `key = { unknown = … }`.
                    parts.push(key.clone());
                    parts.push(unknown.to_owned());
                }
                _ => parts.push(key.clone()),
            }
        }
        (None, None) => {
            if let Some(table) = table {
                parts.push(table);
            }
        }
    }
    if let Some(missing) = missing {
        parts.push(missing.to_owned());
    }
    // A bare `[` or `[]` names no table: no field to blame.
    parts.retain(|part| !part.is_empty());
    if parts.is_empty() {
        return missing.map(str::to_owned);
    }
    Some(parts.join("."))
}

/// The `[table]` header in force at byte `offset`, if any.
fn enclosing_table(source: &str, offset: usize) -> Option<String> {
    source[..offset]
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| line.starts_with('['))
        .map(|line| {
            line.trim_matches(|c| c == '[' || c == ']')
                .trim()
                .to_owned()
        })
}
