//! The `[stop]` table as read and its check: stop a run when availability stays below a bound for a window.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use crate::spec::bounds::{DEFAULT_STOP_WINDOW, MAX_STOP_WINDOW};
use crate::spec::checker::Checker;
use crate::spec::error::SpecError;
use crate::spec::model::StopSpec;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStop {
    pub(super) availability_below: Option<Spanned<f64>>,
    pub(super) window: Option<Spanned<String>>,
}

pub(super) fn stop(check: &Checker<'_>, raw: &RawStop) -> Result<StopSpec, SpecError> {
    let availability_below = match &raw.availability_below {
        Some(v) => Some(check.fraction("stop.availability_below", v)?),
        None => None,
    };
    let window = match &raw.window {
        Some(window) => {
            let v = check.duration_at_most("stop.window", window, MAX_STOP_WINDOW)?;
            if v < Duration::from_secs(1) {
                return Err(check.error("stop.window", window.span(), "must be at least 1s"));
            }
            v
        }
        None => DEFAULT_STOP_WINDOW,
    };
    Ok(StopSpec {
        availability_below,
        window,
    })
}
