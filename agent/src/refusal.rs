//! What the agent refuses, and the caps it checks a fault against before it enters the table: a lease over
//! `max_lease` (or under [`MIN_LEASE`]), a delay whose whole jitter passes the hold cap (`max_hold`: a delay is
//! capped like a hang), a new id beyond [`crate::MAX_FAULTS`]. Pure: the settings and the fault passed in.

use std::time::Duration;

use crate::api::{FaultKind, InvalidFault, MIN_LEASE, format_duration};
use crate::config::AgentConfig;

/// Why a mutation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error(transparent)]
    InvalidSpec(#[from] InvalidFault),
    #[error("lease: {requested:?} is over the agent's cap of {max:?}")]
    LeaseOverCap { requested: Duration, max: Duration },
    #[error("no active fault with id `{id}`")]
    NotFound { id: String },
    #[error("id: the agent holds {max} faults already; delete one or halt first")]
    TooManyFaults { max: usize },
}

impl AgentError {
    /// The field the error is about, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            AgentError::InvalidSpec(error) => Some(&error.field),
            AgentError::LeaseOverCap { .. } => Some("lease"),
            AgentError::NotFound { .. } | AgentError::TooManyFaults { .. } => Some("id"),
        }
    }
}

/// The lease a fault gets: the one it asks for within the cap, or the agent's default lease.
pub(crate) fn checked_lease(
    config: &AgentConfig,
    requested: Option<Duration>,
) -> Result<Duration, AgentError> {
    let max = config.max_lease();
    match requested {
        None => Ok(config.default_lease()),
        Some(requested) if requested > max => Err(AgentError::LeaseOverCap { requested, max }),
        Some(requested) if requested < MIN_LEASE => {
            Err(InvalidFault::new("lease", "must be at least 1ms").into())
        }
        Some(requested) => Ok(requested),
    }
}

/// A delay (with its whole jitter) longer than the hold cap is refused: it is capped like a hang.
pub(crate) fn check_delay(config: &AgentConfig, kind: &FaultKind) -> Result<(), AgentError> {
    let FaultKind::Delay { delay, jitter } = kind else {
        return Ok(());
    };
    let max = config.max_hold();
    let over = |field: &str, what: Duration| {
        InvalidFault::new(
            field,
            format!(
                "{} is over the agent's hold cap of {}",
                format_duration(what),
                format_duration(max)
            ),
        )
    };
    if *delay > max {
        return Err(over("delay", *delay).into());
    }
    if delay.saturating_add(*jitter) > max {
        return Err(over("jitter", delay.saturating_add(*jitter)).into());
    }
    Ok(())
}
