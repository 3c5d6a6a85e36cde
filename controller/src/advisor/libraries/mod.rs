//! Breaker configs in the vocabulary of the libraries teams use — Resilience4j (Spring Boot's
//! `resilience4j.circuitbreaker` YAML), Polly v8 (`CircuitBreakerStrategyOptions` as JSON), gobreaker (`Settings`
//! in Go), pybreaker (`CircuitBreaker(...)` in Python) and opossum (its options object) — read into Tolerant's
//! [`BreakerConfig`] with a note per field saying how the library's semantics map onto Tolerant's model and where
//! they differ, and written back from one. A field that cannot be modelled is an error naming it; one that can
//! only be approximated says so in its note; none is dropped silently.
//!
//! Each library's module parses its text into the library's own settings (defaults filled in), maps them onto a
//! config, and renders a config (with the settings it carried, such as a name or a call timeout) back as text;
//! `settings` lists the effective settings, so a round trip can be checked field by field.

mod gobreaker;
mod mapping;
mod model;
mod opossum;
mod polly;
mod pybreaker;
mod resilience4j;
mod text;

use breaker::BreakerConfig;

pub use model::{Exported, FieldNote, Imported, Library, LibraryError, NoteKind, UnknownLibrary};

impl Library {
    /// Read a config of this library (`instance`: which Resilience4j instance, when the file has several).
    pub fn import(self, text: &str, instance: Option<&str>) -> Result<Imported, LibraryError> {
        match self {
            Library::Resilience4j => resilience4j::import(text, instance),
            Library::Polly => polly::import(text),
            Library::Gobreaker => gobreaker::import(text),
            Library::Pybreaker => pybreaker::import(text),
            Library::Opossum => opossum::import(text),
        }
    }

    /// Whether this library can express `config`; the error names the config's field it cannot.
    pub fn expresses(self, config: &BreakerConfig) -> Result<(), LibraryError> {
        match self {
            Library::Resilience4j => resilience4j::expresses(config),
            Library::Polly => polly::expresses(config),
            Library::Gobreaker => gobreaker::expresses(config),
            Library::Pybreaker => pybreaker::expresses(config),
            Library::Opossum => opossum::expresses(config),
        }
    }

    /// Write `config` in this library's vocabulary, as the breaker named `name`, with the settings `carried`
    /// from an import (a call timeout, health flags); the error names the config's field the library cannot
    /// express.
    pub fn export(
        self,
        config: &BreakerConfig,
        name: &str,
        carried: &[(String, String)],
    ) -> Result<Exported, LibraryError> {
        self.expresses(config)?;
        match self {
            Library::Resilience4j => resilience4j::export(config, name, carried),
            Library::Polly => polly::export(config, name, carried),
            Library::Gobreaker => gobreaker::export(config, name, carried),
            Library::Pybreaker => pybreaker::export(config, name, carried),
            Library::Opossum => opossum::export(config, name, carried),
        }
    }
}

#[cfg(test)]
mod tests;
