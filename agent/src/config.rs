//! The agent's settings. An [`AgentConfig`] can only be built valid: it is made from the unchecked
//! [`RawAgentConfig`] by `TryFrom` (or [`RawAgentConfig::build`]), and every refusal names the field
//! (`max_hold: must be at least 1ms`), so a caller cannot forget to check a setting before the agent starts.

use std::time::Duration;

use crate::api::MIN_LEASE;

/// Default lease of a fault put without one.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// Default cap on a requested lease.
pub const DEFAULT_MAX_LEASE: Duration = Duration::from_secs(10 * 60);
/// Default cap on how long a `hang` fault holds a request.
pub const DEFAULT_MAX_HOLD: Duration = Duration::from_secs(60);
/// Longest `max_lease` and `max_hold` an agent accepts: a day.
pub const MAX_AGENT_DURATION: Duration = Duration::from_secs(24 * 3600);
/// Longest bearer token, in bytes.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// Settings of one agent as written, nothing checked yet. The agent takes only an [`AgentConfig`], made from
/// this by [`RawAgentConfig::build`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawAgentConfig {
    /// Bearer token every mutation must carry; `None` refuses every mutation.
    pub token: Option<String>,
    /// Lease of a fault put without a `lease` field (clamped to `max_lease`).
    pub default_lease: Duration,
    /// Longest lease a put or renew may ask for; longer ones are refused naming `lease`.
    pub max_lease: Duration,
    /// How long a `hang` fault holds a request before the connection is closed; also the longest `delay`
    /// (delay + jitter) a fault may ask for.
    pub max_hold: Duration,
    /// Seed of the per-request random draws.
    pub seed: u64,
}

impl Default for RawAgentConfig {
    fn default() -> Self {
        RawAgentConfig {
            token: None,
            default_lease: DEFAULT_LEASE,
            max_lease: DEFAULT_MAX_LEASE,
            max_hold: DEFAULT_MAX_HOLD,
            seed: 0,
        }
    }
}

impl RawAgentConfig {
    /// The checked settings (`AgentConfig::try_from(self)`); the error names the first offending field.
    pub fn build(self) -> Result<AgentConfig, AgentConfigError> {
        AgentConfig::try_from(self)
    }
}

/// A setting the agent cannot run with; `Display` names the field, e.g. `max_hold: must be at least 1ms`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct AgentConfigError {
    /// The offending setting (`token`, `default_lease`, `max_lease`, `max_hold`).
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

/// Checked settings of one agent: a token that can travel in a header, leases and the hold cap within
/// [`MIN_LEASE`]..=[`MAX_AGENT_DURATION`], the default lease no longer than the cap.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentConfig(RawAgentConfig);

impl TryFrom<RawAgentConfig> for AgentConfig {
    type Error = AgentConfigError;

    /// Checks every setting; a default lease over `max_lease` is clamped to it (a put without a lease gets the
    /// longest one allowed).
    fn try_from(mut raw: RawAgentConfig) -> Result<Self, AgentConfigError> {
        if let Some(token) = &raw.token {
            check_token(token)?;
        }
        check_duration("default_lease", raw.default_lease, Duration::MAX)?;
        check_duration("max_lease", raw.max_lease, MAX_AGENT_DURATION)?;
        check_duration("max_hold", raw.max_hold, MAX_AGENT_DURATION)?;
        raw.default_lease = raw.default_lease.min(raw.max_lease);
        Ok(AgentConfig(raw))
    }
}

impl AgentConfig {
    /// Bearer token every mutation must carry; `None` refuses every mutation.
    pub fn token(&self) -> Option<&str> {
        self.0.token.as_deref()
    }

    /// Lease of a fault put without a `lease` field (at most [`AgentConfig::max_lease`]).
    pub fn default_lease(&self) -> Duration {
        self.0.default_lease
    }

    /// Longest lease a put or renew may ask for.
    pub fn max_lease(&self) -> Duration {
        self.0.max_lease
    }

    /// How long a `hang` fault holds a request; also the longest `delay` (delay + jitter) a fault may ask for.
    pub fn max_hold(&self) -> Duration {
        self.0.max_hold
    }

    /// Seed of the per-request random draws.
    pub fn seed(&self) -> u64 {
        self.0.seed
    }

    /// The settings' values, to change and check again with [`RawAgentConfig::build`].
    pub fn into_raw(self) -> RawAgentConfig {
        self.0
    }
}

fn check_token(token: &str) -> Result<(), AgentConfigError> {
    let refuse = |message: String| {
        Err(AgentConfigError {
            field: "token",
            message,
        })
    };
    if token.is_empty() {
        return refuse("must not be empty".to_owned());
    }
    if token.len() > MAX_TOKEN_BYTES {
        return refuse(format!("must be at most {MAX_TOKEN_BYTES} bytes"));
    }
    if token.bytes().any(|byte| byte.is_ascii_control()) {
        return refuse("must not hold control characters (it travels in a header)".to_owned());
    }
    Ok(())
}

fn check_duration(
    field: &'static str,
    value: Duration,
    max: Duration,
) -> Result<(), AgentConfigError> {
    let message = if value < MIN_LEASE {
        "must be at least 1ms".to_owned()
    } else if value > max {
        format!("must be at most {}", crate::api::format_duration(max))
    } else {
        return Ok(());
    };
    Err(AgentConfigError { field, message })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(raw: RawAgentConfig) -> AgentConfigError {
        match raw.build() {
            Ok(config) => panic!("expected an error, built {config:?}"),
            Err(error) => error,
        }
    }

    #[test]
    fn the_default_is_valid_and_keeps_its_values() {
        let config = RawAgentConfig::default().build().expect("valid");
        assert_eq!(config, AgentConfig::default());
        assert_eq!(
            (
                config.default_lease(),
                config.max_lease(),
                config.max_hold()
            ),
            (DEFAULT_LEASE, DEFAULT_MAX_LEASE, DEFAULT_MAX_HOLD)
        );
        assert_eq!(config.token(), None);
    }

    #[test]
    fn every_refusal_names_its_field() {
        let base = RawAgentConfig::default;
        let cases = [
            (
                RawAgentConfig {
                    token: Some(String::new()),
                    ..base()
                },
                "token",
            ),
            (
                RawAgentConfig {
                    token: Some("a\nb".into()),
                    ..base()
                },
                "token",
            ),
            (
                RawAgentConfig {
                    token: Some("t".repeat(MAX_TOKEN_BYTES + 1)),
                    ..base()
                },
                "token",
            ),
            (
                RawAgentConfig {
                    default_lease: Duration::ZERO,
                    ..base()
                },
                "default_lease",
            ),
            (
                RawAgentConfig {
                    max_lease: Duration::ZERO,
                    ..base()
                },
                "max_lease",
            ),
            (
                RawAgentConfig {
                    max_lease: MAX_AGENT_DURATION + Duration::from_secs(1),
                    ..base()
                },
                "max_lease",
            ),
            (
                RawAgentConfig {
                    max_hold: Duration::ZERO,
                    ..base()
                },
                "max_hold",
            ),
            (
                RawAgentConfig {
                    max_hold: Duration::MAX,
                    ..base()
                },
                "max_hold",
            ),
        ];
        for (raw, field) in cases {
            let error = error_of(raw);
            assert_eq!(error.field, field, "{error}");
            assert!(
                error.to_string().starts_with(&format!("{field}: ")),
                "{error}"
            );
        }
    }

    #[test]
    fn a_default_lease_over_the_cap_is_clamped_to_it() {
        let config = RawAgentConfig {
            default_lease: Duration::from_secs(120),
            max_lease: Duration::from_secs(60),
            ..RawAgentConfig::default()
        }
        .build()
        .expect("valid");
        assert_eq!(config.default_lease(), Duration::from_secs(60));
    }
}
