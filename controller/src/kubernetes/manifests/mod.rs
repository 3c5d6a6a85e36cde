//! The manifests `tolerant kubernetes manifests` prints (the convention of `linkerd install | kubectl apply -f
//! -`): one tested source of the YAML, built from k8s-openapi's types, flags for what differs.
//!
//! Always: the controller with the dashboard as a Deployment and a ClusterIP Service, its database on a
//! PersistentVolumeClaim (or a PostgreSQL URL from a Secret), the token in a Secret, a ServiceAccount bound to a
//! namespaced Role holding only [`super::rbac::PERMISSIONS`]. Every container runs as 65534 with
//! `runAsNonRoot`, has readiness and liveness probes, resource requests and limits; the controller's root
//! filesystem is read-only (its database on the volume, `/tmp` an `emptyDir`). With `--testbed`: the ten
//! boutique services as Deployments with headless Services (each replica's address in DNS, as compose gives
//! them), the agent as a sidecar in one service's pod (Payment's unless `--agent-in`), and the services'
//! `NET_ADMIN` capability for the network faults (`tc` run through exec). With `--load-workers N`: N load workers
//! as the Deployment [`LOAD_WORKER`] (no API access, no token of the cluster mounted) reaching the controller's
//! `workers` port ([`WORKERS_PORT`], on its Service) that a spec's `[load] workers_listen` must name.

mod objects;
mod options;
mod parts;
#[cfg(test)]
mod tests;

use crate::kubernetes::error::{KubeError, invalid};

pub use objects::role;
pub use objects::workers_url;
use objects::{
    controller_deployment, data_claim, load_worker_deployment, role_binding, service_account,
    testbed_deployment, token_secret,
};
pub use options::{
    AGENT_CONTROL_PORT, AGENT_PROXY_PORT, APP, CHECKOUT_REPLICAS, DATA_CLAIM,
    DEFAULT_LOAD_WORKER_CAPACITY, LOAD_WORKER, LOAD_WORKER_CAPACITY, LOAD_WORKERS, ManifestOptions,
    SERVICE_PORT, STORAGE_GIB, TOKEN_SECRET, WORKERS_PORT,
};

/// Every manifest, as one multi-document YAML text.
pub fn render(options: &ManifestOptions) -> Result<String, KubeError> {
    let documents = manifests(options)?;
    serde_saphyr::to_string_multiple(&documents).map_err(|error| KubeError::Invalid {
        field: "manifests".into(),
        message: error.to_string(),
    })
}

/// Every manifest as JSON values, in the order `kubectl apply` should take them.
pub fn manifests(options: &ManifestOptions) -> Result<Vec<serde_json::Value>, KubeError> {
    options.check()?;
    let mut documents = Vec::new();
    let mut push = |value: Result<serde_json::Value, serde_json::Error>| -> Result<(), KubeError> {
        documents.push(value.map_err(|error| invalid("manifests", error.to_string()))?);
        Ok(())
    };
    push(serde_json::to_value(service_account(options)))?;
    push(serde_json::to_value(role(options)))?;
    push(serde_json::to_value(role_binding(options)))?;
    push(serde_json::to_value(token_secret(options)))?;
    if options.database_secret.is_none() {
        push(serde_json::to_value(data_claim(options)))?;
    }
    push(serde_json::to_value(controller_deployment(options)))?;
    push(serde_json::to_value(objects::service(options, APP, false)))?;
    if options.load_workers > 0 {
        push(serde_json::to_value(load_worker_deployment(options)))?;
    }
    if options.testbed {
        for service in boutique::ServiceName::ALL {
            push(serde_json::to_value(testbed_deployment(options, &service)))?;
            push(serde_json::to_value(objects::service(
                options,
                service.as_str(),
                true,
            )))?;
        }
    }
    Ok(documents)
}
