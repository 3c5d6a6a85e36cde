//! Configuration of the stack: where services listen, breaker settings, call timeout, worker pools, token.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::service_name::ServiceName;

/// Default per-call timeout of every inter-service call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// Default number of requests a service handles at once.
pub const DEFAULT_POOL_CAPACITY: usize = 256;
/// Default number of requests that may wait for a worker before 503s start.
pub const DEFAULT_POOL_QUEUE: usize = 1024;
/// Most requests a service may handle at once (a far larger pool's semaphore would panic).
pub const MAX_POOL_CAPACITY: usize = 65_536;
/// Most requests that may wait for a worker.
pub const MAX_POOL_QUEUE: usize = 1 << 20;

/// A bounded worker pool: `capacity` requests run at once, `queue` more wait, the rest get 503 at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    pub capacity: usize,
    pub queue: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            capacity: DEFAULT_POOL_CAPACITY,
            queue: DEFAULT_POOL_QUEUE,
        }
    }
}

/// An invalid stack setting; `Display` names the field, e.g. `pool.capacity: must be 1..=65536`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct StackConfigError {
    /// The offending field (`ports.cart`, `call_timeout`, or a CLI flag such as `--call-timeout`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl StackConfigError {
    fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        StackConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Everything needed to start one service or all ten, as written, nothing checked yet. The stack takes only a
/// [`StackConfig`], made from this by [`RawStackConfig::build`] (or `StackConfig::try_from`).
#[derive(Debug, Clone)]
pub struct RawStackConfig {
    /// Address every service binds to (loopback by default).
    pub host: IpAddr,
    /// Port per service; a missing entry or 0 means an ephemeral port.
    pub ports: BTreeMap<ServiceName, u16>,
    /// Breaker configuration applied to every breaker of every service.
    pub breaker: breaker::BreakerConfig,
    /// Timeout of each inter-service call (a hang becomes a failure after this).
    pub call_timeout: Duration,
    /// Worker pool of each service.
    pub pool: PoolConfig,
    /// Bearer token for `/_admin/*` mutations; `None` refuses every mutation.
    pub token: Option<String>,
    /// The fault-injection agent embedded in Payment.
    pub agent: agent::AgentConfig,
    /// Seed for every random choice the services make (ads, recommendations).
    pub seed: u64,
    /// How long a client may take to send a request head before its connection is closed
    /// ([`serving::HEADER_READ_TIMEOUT`] unless a test shortens it).
    pub head_read_timeout: Duration,
}

impl Default for RawStackConfig {
    fn default() -> Self {
        RawStackConfig {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            ports: BTreeMap::new(),
            breaker: breaker::BreakerConfig::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            pool: PoolConfig::default(),
            token: None,
            agent: agent::AgentConfig::default(),
            seed: 0,
            head_read_timeout: serving::HEADER_READ_TIMEOUT,
        }
    }
}

impl RawStackConfig {
    /// This config with one bearer token for both kinds of mutation: `/_admin/*` and the embedded agent's fault
    /// API. An agent that refuses the token is an error naming `agent.token`.
    pub fn with_token(self, token: impl Into<String>) -> Result<RawStackConfig, StackConfigError> {
        let token = token.into();
        let agent = agent::RawAgentConfig {
            token: Some(token.clone()),
            ..self.agent.into_raw()
        }
        .build()
        .map_err(|error| StackConfigError::new(format!("agent.{}", error.field), error.message))?;
        Ok(RawStackConfig {
            token: Some(token),
            agent,
            ..self
        })
    }

    /// The checked config (`StackConfig::try_from(self)`); the error names the first offending field.
    pub fn build(self) -> Result<StackConfig, StackConfigError> {
        StackConfig::try_from(self)
    }
}

/// A checked stack config: every field within its bounds. Only made from a [`RawStackConfig`]; the default is the
/// default raw config, which is valid.
#[derive(Debug, Clone, Default)]
pub struct StackConfig(RawStackConfig);

impl TryFrom<RawStackConfig> for StackConfig {
    type Error = StackConfigError;

    /// Checks every field; the error names the one that is wrong.
    fn try_from(raw: RawStackConfig) -> Result<Self, StackConfigError> {
        check(&raw)?;
        Ok(StackConfig(raw))
    }
}

fn check(raw: &RawStackConfig) -> Result<(), StackConfigError> {
    if raw.call_timeout.is_zero() {
        return Err(StackConfigError::new(
            "call_timeout",
            "must be greater than zero",
        ));
    }
    serving::check_header_read_timeout(raw.head_read_timeout)
        .map_err(|error| StackConfigError::new("head_read_timeout", error.to_string()))?;
    if !(1..=MAX_POOL_CAPACITY).contains(&raw.pool.capacity) {
        return Err(StackConfigError::new(
            "pool.capacity",
            format!("must be 1..={MAX_POOL_CAPACITY}"),
        ));
    }
    if raw.pool.queue > MAX_POOL_QUEUE {
        return Err(StackConfigError::new(
            "pool.queue",
            format!("must be at most {MAX_POOL_QUEUE}"),
        ));
    }
    if let Some(token) = &raw.token {
        if token.trim().is_empty() {
            return Err(StackConfigError::new("token", "must not be empty when set"));
        }
    }
    let mut seen = BTreeMap::new();
    for (service, port) in &raw.ports {
        if *port == 0 {
            continue;
        }
        if let Some(other) = seen.insert(*port, *service) {
            return Err(StackConfigError::new(
                format!("ports.{service}"),
                format!("port {port} is already used by {other}"),
            ));
        }
    }
    Ok(())
}

impl StackConfig {
    /// The unchecked shape, to change a field and build again.
    pub fn into_raw(self) -> RawStackConfig {
        self.0
    }

    /// Address every service binds to.
    pub fn host(&self) -> IpAddr {
        self.0.host
    }

    /// The configured port of a service (0 = ephemeral).
    pub fn port(&self, service: ServiceName) -> u16 {
        self.0.ports.get(&service).copied().unwrap_or(0)
    }

    /// Breaker configuration of every breaker of every service.
    pub fn breaker(&self) -> &breaker::BreakerConfig {
        &self.0.breaker
    }

    /// Timeout of each inter-service call.
    pub fn call_timeout(&self) -> Duration {
        self.0.call_timeout
    }

    /// Worker pool of each service.
    pub fn pool(&self) -> PoolConfig {
        self.0.pool
    }

    /// Bearer token for `/_admin/*` mutations; `None` refuses every mutation.
    pub fn token(&self) -> Option<&str> {
        self.0.token.as_deref()
    }

    /// The fault-injection agent embedded in Payment.
    pub fn agent(&self) -> &agent::AgentConfig {
        &self.0.agent
    }

    /// Seed for every random choice the services make.
    pub fn seed(&self) -> u64 {
        self.0.seed
    }

    /// How long a client may take to send a request head.
    pub fn head_read_timeout(&self) -> Duration {
        self.0.head_read_timeout
    }
}

/// Parses a human duration such as "3s" or "250ms", naming `field` in the error.
pub fn parse_duration(field: &str, text: &str) -> Result<Duration, StackConfigError> {
    humantime::parse_duration(text.trim())
        .map_err(|err| StackConfigError::new(field, format!("{text:?} is not a duration: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid() {
        RawStackConfig::default().build().unwrap();
    }

    #[test]
    fn zero_capacity_names_the_field() {
        let raw = RawStackConfig {
            pool: PoolConfig {
                capacity: 0,
                queue: 1,
            },
            ..RawStackConfig::default()
        };
        let err = StackConfig::try_from(raw).unwrap_err();
        assert_eq!(err.field, "pool.capacity");
        assert_eq!(err.to_string(), "pool.capacity: must be 1..=65536");
    }

    /// A pool beyond its bounds is refused before any semaphore is made (a huge one would panic).
    #[test]
    fn a_pool_out_of_bounds_names_the_field() {
        for (capacity, queue, field) in [
            (MAX_POOL_CAPACITY + 1, 1, "pool.capacity"),
            (usize::MAX, 1, "pool.capacity"),
            (1, MAX_POOL_QUEUE + 1, "pool.queue"),
        ] {
            let raw = RawStackConfig {
                pool: PoolConfig { capacity, queue },
                ..RawStackConfig::default()
            };
            assert_eq!(raw.build().unwrap_err().field, field, "{capacity} {queue}");
        }
        let at_the_bounds = RawStackConfig {
            pool: PoolConfig {
                capacity: MAX_POOL_CAPACITY,
                queue: MAX_POOL_QUEUE,
            },
            ..RawStackConfig::default()
        };
        assert!(at_the_bounds.build().is_ok());
    }

    #[test]
    fn duplicate_ports_name_the_service() {
        let mut raw = RawStackConfig::default();
        raw.ports.insert(ServiceName::Cart, 9000);
        raw.ports.insert(ServiceName::Ad, 9000);
        let err = raw.build().unwrap_err().to_string();
        assert!(err.contains("ports.ad") && err.contains("cart"), "{err}");
    }

    #[test]
    fn a_zero_call_timeout_or_a_blank_token_is_refused_naming_the_field() {
        let zero_timeout = RawStackConfig {
            call_timeout: Duration::ZERO,
            ..RawStackConfig::default()
        };
        assert_eq!(zero_timeout.build().unwrap_err().field, "call_timeout");
        let blank_token = RawStackConfig {
            token: Some("  ".into()),
            ..RawStackConfig::default()
        };
        assert_eq!(blank_token.build().unwrap_err().field, "token");
    }

    /// One token locks both doors; a token the agent cannot carry in a header is refused naming it.
    #[test]
    fn with_token_sets_the_admin_and_the_agent_token() {
        let config = RawStackConfig::default()
            .with_token("secret")
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.token(), Some("secret"));
        assert_eq!(config.agent().token(), Some("secret"));
        let error = RawStackConfig::default()
            .with_token("two\nlines")
            .unwrap_err();
        assert_eq!(error.field, "agent.token", "{error}");
    }

    /// What a valid raw config says is what the checked one answers.
    #[test]
    fn a_built_config_reads_back_its_fields() {
        let mut raw = RawStackConfig {
            call_timeout: Duration::from_millis(750),
            token: Some("secret".into()),
            seed: 7,
            ..RawStackConfig::default()
        };
        raw.ports.insert(ServiceName::Cart, 9000);
        let config = raw.build().unwrap();
        assert_eq!(config.port(ServiceName::Cart), 9000);
        assert_eq!(config.port(ServiceName::Ad), 0);
        assert_eq!(config.call_timeout(), Duration::from_millis(750));
        assert_eq!(config.token(), Some("secret"));
        assert_eq!(config.seed(), 7);
    }

    #[test]
    fn durations_parse_and_errors_name_the_field() {
        assert_eq!(
            parse_duration("call_timeout", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        let err = parse_duration("call_timeout", "soon")
            .unwrap_err()
            .to_string();
        assert!(err.contains("call_timeout"), "{err}");
    }
}
