//! Kubernetes through kube-rs: the manifests the binary prints ([`manifests`]) with a Role of exactly the
//! permissions the calls below need ([`rbac`]), the testbed's pods found by label and watched as they come and go
//! ([`discovery`]), and pod faults — delete a pod, kill its container's process, network delay and loss with
//! `tc` — each recorded as an annotation on the pod (who, until) before it is applied, renewed while its run
//! lasts, undone at its end and swept by any controller that finds an expired one ([`fault`]).
//!
//! Only this module talks to an API server, and nothing else of Tolerant needs one. Where the cluster is: a
//! kubeconfig (`KUBECONFIG`, else `~/.kube/config`) from outside, else the service account's in-cluster config;
//! neither found, or a server that does not answer, is a [`KubeError`] naming what was tried.

mod answer_cap;
pub mod discovery;
mod error;
pub mod fault;
mod labels;
pub mod manifests;
pub mod rbac;
#[cfg(test)]
mod tests;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

pub use error::KubeError;
pub use labels::{DEFAULT_SELECTOR, FAULT_ANNOTATION, NAME_LABEL, TESTBED_PART, check_label};

/// One namespace of one cluster. Cheap to clone.
#[derive(Clone)]
pub struct Cluster {
    client: kube::Client,
    namespace: String,
    /// The API server's URL, for errors.
    server: String,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl Cluster {
    /// Finds the cluster (kubeconfig, else in-cluster), and checks that it answers by listing one pod of
    /// `namespace` (a call the Role allows).
    pub async fn connect(namespace: &str) -> Result<Cluster, KubeError> {
        labels::check_label("--kubernetes", namespace)?;
        let config =
            match kube::Config::from_kubeconfig(&kube::config::KubeConfigOptions::default()).await {
                Ok(config) => config,
                Err(kubeconfig) => {
                    kube::Config::incluster().map_err(|in_cluster| KubeError::NoConfig {
                        kubeconfig: kubeconfig.to_string(),
                        in_cluster: in_cluster.to_string(),
                    })?
                }
            };
        let server = config.cluster_url.to_string();
        let builder = kube::client::ClientBuilder::try_from(config).map_err(|error| {
            KubeError::Unreachable {
                server: server.clone(),
                message: error.to_string(),
            }
        })?;
        let client = answer_cap::capped(builder, answer_cap::MAX_KUBE_ANSWER_BYTES);
        let cluster = Cluster {
            client,
            namespace: namespace.to_owned(),
            server,
        };
        cluster
            .pods()
            .list(&ListParams::default().limit(1))
            .await
            .map_err(|error| KubeError::Unreachable {
                server: cluster.server.clone(),
                message: format!("listing pods of namespace {namespace}: {error}"),
            })?;
        Ok(cluster)
    }

    /// A cluster behind `client` (a test's mock service).
    pub fn from_client(client: kube::Client, namespace: &str) -> Cluster {
        Cluster {
            client,
            namespace: namespace.to_owned(),
            server: "mock".into(),
        }
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// An API error of `operation` on `pod`, naming the pod and the namespace.
    fn failed(&self, operation: &'static str, pod: &str, source: kube::Error) -> KubeError {
        KubeError::Api {
            operation,
            namespace: self.namespace.clone(),
            pod: pod.to_owned(),
            source: Box::new(source),
        }
    }
}
