//! The testbed a run talks to — where its frontend, services and agent are — its control client ([`admin`]:
//! resets, breaker configs and modes, faults on the agent, and the reads the observer samples), and the embedded
//! one: the ten boutique services started in this process for a spec.

pub mod admin;

use std::net::SocketAddr;

pub use admin::{
    ADMIN_CALL_TIMEOUT, AdminClient, AdminError, CappedReadError, Credential, MAX_ANSWER_BYTES,
    read_capped,
};

use crate::spec::ExperimentSpec;
use crate::target::ServiceId;

/// Where the testbed lives and how to talk to it.
#[derive(Debug, Clone)]
pub struct Testbed {
    /// The frontend the virtual users load.
    pub frontend: SocketAddr,
    /// Every service's base URL (`http://…`), by name: reset, breaker config, transition streams. The names are
    /// [`ServiceId`]s, not [`boutique::ServiceName`]s: a spec's `[targets]` may name services that are not the
    /// boutique's, and a compose replica is followed under its label (`checkout#2`).
    pub services: Vec<(ServiceId, String)>,
    /// Base URL of the fault agent's control API.
    pub agent: String,
    /// Bearer token for admin and agent mutations.
    pub token: String,
}

impl Testbed {
    /// The testbed of an embedded stack started by this process.
    pub fn of_stack(stack: &boutique::RunningStack, token: impl Into<String>) -> Self {
        use boutique::ServiceName;
        Testbed {
            frontend: stack.addrs()[&ServiceName::Frontend],
            services: ServiceName::ALL
                .iter()
                .map(|service| (ServiceId::from(*service), stack.url(*service)))
                .collect(),
            agent: stack.url(ServiceName::Payment),
            token: token.into(),
        }
    }
}

/// The service whose agent the embedded stack exposes (`/_agent/...` on Payment).
pub const EMBEDDED_AGENT_SERVICE: &str = boutique::ServiceName::Payment.as_str();

/// Why the embedded stack did not start.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedStackError {
    /// The spec asks what the embedded stack cannot do, or a service did not start.
    #[error("testbed: {0}")]
    Testbed(String),
    /// The spec's breaker config for its first mode is out of bounds (a parsed spec never is).
    #[error("breaker.{0}")]
    BreakerConfig(#[from] breaker::ConfigError),
}

/// Starts the ten boutique services in this process for a spec: the token is fresh and random,
/// the breakers start with the spec's config in its first mode.
pub async fn start_embedded_stack(
    spec: &ExperimentSpec,
) -> Result<(boutique::RunningStack, Testbed), EmbeddedStackError> {
    let injects = spec.conditions().iter().any(|c| c.fault_rate > 0.0);
    if injects && spec.fault.target != EMBEDDED_AGENT_SERVICE {
        return Err(EmbeddedStackError::Testbed(format!(
            "fault.target: the embedded stack runs its agent in {EMBEDDED_AGENT_SERVICE} only, not in {}",
            spec.fault.target
        )));
    }
    let token = random_token();
    let config = boutique::RawStackConfig {
        breaker: spec.breaker_config(spec.breaker.modes[0])?,
        token: Some(token.clone()),
        agent: agent::RawAgentConfig {
            token: Some(token.clone()),
            seed: spec.seed,
            ..agent::RawAgentConfig::default()
        }
        .build()
        .map_err(|error| EmbeddedStackError::Testbed(error.to_string()))?,
        seed: spec.seed,
        ..boutique::RawStackConfig::default()
    }
    .build()
    .map_err(|error| EmbeddedStackError::Testbed(error.to_string()))?;
    let stack = boutique::RunningStack::start(config)
        .await
        .map_err(|e| EmbeddedStackError::Testbed(e.to_string()))?;
    let testbed = Testbed::of_stack(&stack, token);
    Ok((stack, testbed))
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}
