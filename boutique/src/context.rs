//! What every service shares: its name, breaker registry, worker pool, HTTP client, peers and counters.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::client::{CallStats, Dependency, HttpClient};
use crate::error::StackError;
use crate::metrics::RequestStats;
use crate::pool::WorkerPool;
use crate::service_name::ServiceName;

/// Shared state of one running service, handed to its router and to the admin endpoints.
#[derive(Debug)]
pub struct ServiceContext {
    pub service: ServiceName,
    pub registry: breaker::Registry,
    pub pool: WorkerPool,
    pub token: Option<Arc<str>>,
    pub http: HttpClient,
    pub call_timeout: Duration,
    /// Base URLs of the services this one may call.
    pub peers: BTreeMap<ServiceName, String>,
    pub requests: Arc<RequestStats>,
    /// Outcome counters per dependency, by breaker name.
    pub calls: Mutex<Vec<(String, Arc<CallStats>)>>,
    /// Cancelled when the service shuts down (ends websocket streams).
    pub shutdown: CancellationToken,
}

impl ServiceContext {
    /// The breaker-wrapped client for a dependency named in the call graph.
    pub fn dependency(&self, target: ServiceName) -> Result<Dependency, StackError> {
        let base_url = self
            .peers
            .get(&target)
            .ok_or(StackError::MissingPeer {
                service: self.service,
                dependency: target,
            })?
            .trim_end_matches('/')
            .to_owned();
        let name = self.service.breaker_name(target);
        let breaker = self.registry.get(&name);
        let stats = Arc::new(CallStats::default());
        self.calls.lock().push((name, stats.clone()));
        Ok(Dependency::new(
            target,
            base_url,
            breaker,
            self.http.clone(),
            self.call_timeout,
            stats,
        ))
    }
}
