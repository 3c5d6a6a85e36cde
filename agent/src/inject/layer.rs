//! [`FaultLayer`]: wraps a service in a [`FaultService`] bound to one agent.

use tower_layer::Layer;

use super::FaultService;
use crate::agent::Agent;

/// Tower layer applying an [`Agent`]'s faults to every request of the wrapped service.
#[derive(Debug, Clone)]
pub struct FaultLayer {
    agent: Agent,
}

impl FaultLayer {
    pub fn new(agent: Agent) -> Self {
        FaultLayer { agent }
    }
}

impl<S> Layer<S> for FaultLayer {
    type Service = FaultService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FaultService::new(self.agent.clone(), inner)
    }
}
