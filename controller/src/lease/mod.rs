//! What a run holds under a lease and gives back when it ends: the agent's fault ([`agent_fault`], or on a
//! schedule inside the run, [`scheduled_fault`]), the breaker config pushed to the services ([`breakers`]), a
//! container fault on the compose or swarm stack ([`containers`]) and a pod fault on Kubernetes ([`pods`], its
//! lease an annotation on the pod). Each lease is renewed every third of its length by the
//! one loop in [`renewal`]; every call on it is an entry of the run's event log. A holder dropped without being
//! ended (a panic, the run's future dropped) stops renewing at once and sends its undo as its last act; a
//! controller that is killed sends nothing, and the lease runs out by itself.

pub mod agent_fault;
pub mod breakers;
pub mod containers;
pub mod pods;
pub mod renewal;
pub mod scheduled_fault;

pub use agent_fault::AppliedFault;
pub use breakers::HeldBreakers;
pub use containers::{ContainerFaultError, ContainerRun, ContainerStack, container_action};
pub use pods::{PodFaultError, PodRun, PodStack};
pub use scheduled_fault::ScheduledFault;

use crate::clock::now_ms;
use crate::store::{RunEvent, RunEventRecord};

/// `event` about `fault_id` (empty: about no fault), as of now.
pub fn recorded(fault_id: &str, event: RunEvent) -> RunEventRecord {
    RunEventRecord {
        at_ms: now_ms(),
        fault_id: fault_id.to_owned(),
        event,
    }
}
