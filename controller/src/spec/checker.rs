//! The field checker every spec section uses: an error names the dotted field and points at its line.

use std::ops::Range;
use std::time::Duration;

use toml::Spanned;

use super::bounds::MAX_WRITTEN_DURATION;
use super::error::SpecError;
use crate::target::ServiceId;

/// Collects field errors in source order; the first one is returned.
pub(crate) struct Checker<'a> {
    source: &'a str,
}

impl<'a> Checker<'a> {
    pub(crate) fn new(source: &'a str) -> Self {
        Checker { source }
    }

    pub(crate) fn error(
        &self,
        field: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> SpecError {
        SpecError::field_at(self.source, field, span, message)
    }

    /// A service's name as written (surrounding blanks trimmed), checked by [`ServiceId`]. A replica's label
    /// (`checkout#2`) is refused: replicas are found by `--compose`, `--swarm` or `--kubernetes`, a spec names
    /// their service.
    pub(crate) fn service_id(
        &self,
        field: &str,
        value: &Spanned<String>,
    ) -> Result<ServiceId, SpecError> {
        let id = self.replica_id(field, value)?;
        if id.is_replica() {
            return Err(self.error(
                field,
                value.span(),
                format!(
                    "`{id}` is a replica's label; name the service (`{}`), its replicas are found by \
                     --compose, --swarm or --kubernetes",
                    id.service()
                ),
            ));
        }
        Ok(id)
    }

    /// A service's name or one replica's label (`checkout#2`: a container fault on that replica only).
    pub(crate) fn replica_id(
        &self,
        field: &str,
        value: &Spanned<String>,
    ) -> Result<ServiceId, SpecError> {
        ServiceId::new(value.get_ref().trim())
            .map_err(|error| self.error(field, value.span(), error.to_string()))
    }

    /// A name as written (blanks trimmed): 1 to 64 letters, digits, `-` or `_`.
    pub(crate) fn name(&self, field: &str, value: &Spanned<String>) -> Result<String, SpecError> {
        let text = value.get_ref().trim();
        let valid = !text.is_empty()
            && text.len() <= 64
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(self.error(
                field,
                value.span(),
                "must be 1 to 64 letters, digits, - or _",
            ));
        }
        Ok(text.to_owned())
    }

    /// A duration as written, at most `max`.
    pub(crate) fn duration_at_most(
        &self,
        field: &str,
        value: &Spanned<String>,
        max: Duration,
    ) -> Result<Duration, SpecError> {
        let duration = humantime::parse_duration(value.get_ref().trim()).map_err(|error| {
            self.error(
                field,
                value.span(),
                format!(
                    "`{}` is not a duration ({error}); write e.g. \"30s\", \"250ms\", \"5m\"",
                    value.get_ref()
                ),
            )
        })?;
        if duration > max {
            return Err(self.error(
                field,
                value.span(),
                format!(
                    "{} is longer than the maximum {}",
                    value.get_ref().trim(),
                    humantime::format_duration(max)
                ),
            ));
        }
        Ok(duration)
    }

    /// A duration as written, at most [`MAX_WRITTEN_DURATION`].
    pub(crate) fn duration(
        &self,
        field: &str,
        value: &Spanned<String>,
    ) -> Result<Duration, SpecError> {
        self.duration_at_most(field, value, MAX_WRITTEN_DURATION)
    }

    /// A finite number within `range` (inclusive).
    pub(crate) fn number_in(
        &self,
        field: &str,
        value: &Spanned<f64>,
        (min, max): (f64, f64),
        unit: &str,
    ) -> Result<f64, SpecError> {
        let v = *value.get_ref();
        if !(v.is_finite() && (min..=max).contains(&v)) {
            return Err(self.error(
                field,
                value.span(),
                format!("{v} is not a number of {unit} between {min} and {max}"),
            ));
        }
        Ok(v)
    }

    pub(crate) fn fraction(&self, field: &str, value: &Spanned<f64>) -> Result<f64, SpecError> {
        let v = *value.get_ref();
        if !(0.0..=1.0).contains(&v) {
            return Err(self.error(
                field,
                value.span(),
                format!("{v} is not a fraction between 0 and 1"),
            ));
        }
        Ok(v)
    }
}
