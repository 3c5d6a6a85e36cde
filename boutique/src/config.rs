//! Configuration of the stack: where services listen, breaker settings, call timeout, worker pools, token.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use crate::error::StackError;
use crate::service_name::ServiceName;

/// Default per-call timeout of every inter-service call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(3);
/// Default number of requests a service handles at once.
pub const DEFAULT_POOL_CAPACITY: usize = 256;
/// Default number of requests that may wait for a worker before 503s start.
pub const DEFAULT_POOL_QUEUE: usize = 1024;

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

/// Everything needed to start one service or all ten.
#[derive(Debug, Clone)]
pub struct StackConfig {
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
    /// ([`agent::serve::HEADER_READ_TIMEOUT`] unless a test shortens it).
    pub head_read_timeout: Duration,
}

impl Default for StackConfig {
    fn default() -> Self {
        StackConfig {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            ports: BTreeMap::new(),
            breaker: breaker::BreakerConfig::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            pool: PoolConfig::default(),
            token: None,
            agent: agent::AgentConfig::default(),
            seed: 0,
            head_read_timeout: agent::serve::HEADER_READ_TIMEOUT,
        }
    }
}

impl StackConfig {
    /// Checks every field; the error names the one that is wrong.
    pub fn validate(&self) -> Result<(), StackError> {
        if self.call_timeout.is_zero() {
            return Err(StackError::config(
                "call_timeout",
                "must be greater than zero",
            ));
        }
        agent::serve::check_header_read_timeout(self.head_read_timeout)
            .map_err(|error| StackError::config("head_read_timeout", error.to_string()))?;
        if self.pool.capacity == 0 {
            return Err(StackError::config("pool.capacity", "must be at least 1"));
        }
        if let Some(token) = &self.token {
            if token.trim().is_empty() {
                return Err(StackError::config("token", "must not be empty when set"));
            }
        }
        let mut seen = BTreeMap::new();
        for (service, port) in &self.ports {
            if *port == 0 {
                continue;
            }
            if let Some(other) = seen.insert(*port, *service) {
                return Err(StackError::config(
                    format!("ports.{service}"),
                    format!("port {port} is already used by {other}"),
                ));
            }
        }
        Ok(())
    }

    /// The configured port of a service (0 = ephemeral).
    pub fn port(&self, service: ServiceName) -> u16 {
        self.ports.get(&service).copied().unwrap_or(0)
    }
}

/// Parses a human duration such as "3s" or "250ms", naming `field` in the error.
pub fn parse_duration(field: &str, text: &str) -> Result<Duration, StackError> {
    humantime::parse_duration(text.trim())
        .map_err(|err| StackError::config(field, format!("{text:?} is not a duration: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_is_valid() {
        StackConfig::default().validate().unwrap();
    }

    #[test]
    fn zero_capacity_names_the_field() {
        let config = StackConfig {
            pool: PoolConfig {
                capacity: 0,
                queue: 1,
            },
            ..StackConfig::default()
        };
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("pool.capacity"), "{err}");
    }

    #[test]
    fn duplicate_ports_name_the_service() {
        let mut config = StackConfig::default();
        config.ports.insert(ServiceName::Cart, 9000);
        config.ports.insert(ServiceName::Ad, 9000);
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("ports.ad") && err.contains("cart"), "{err}");
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
