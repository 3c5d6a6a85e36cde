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
pub(crate) mod tests;

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;

pub use error::KubeError;
pub use labels::{DEFAULT_SELECTOR, FAULT_ANNOTATION, NAME_LABEL, TESTBED_PART, check_label};

/// Longest a single API call (a list, get, patch or delete) may wait for its answer: kube sets no read timeout
/// (long-lived exec and watch streams), so a server that takes the connection and never answers would hold a
/// run, a sweep or a game-day request forever. The watch has kube's own idle timeout; an exec its own cap.
pub const API_TIMEOUT: Duration = Duration::from_secs(15);

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
        Cluster::answering(config, namespace).await
    }

    /// The cluster `config` points at, checked to answer (within [`API_TIMEOUT`]) a list of one pod of
    /// `namespace`; else [`KubeError::Unreachable`] naming the server.
    pub async fn answering(config: kube::Config, namespace: &str) -> Result<Cluster, KubeError> {
        labels::check_label("--kubernetes", namespace)?;
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
        let (pods, params) = (cluster.pods(), ListParams::default().limit(1));
        let message = match tokio::time::timeout(API_TIMEOUT, pods.list(&params)).await {
            Ok(Ok(_)) => return Ok(cluster),
            Ok(Err(error)) => format!("listing pods of namespace {namespace}: {error}"),
            Err(_) => format!(
                "listing pods of namespace {namespace}: no answer within {}",
                humantime::format_duration(API_TIMEOUT)
            ),
        };
        Err(KubeError::Unreachable {
            server: cluster.server.clone(),
            message,
        })
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

    /// One API call, `operation` on `pod`, answered within [`API_TIMEOUT`]; its error names the pod.
    async fn call<T>(
        &self,
        operation: &'static str,
        pod: &str,
        request: impl std::future::Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, KubeError> {
        match tokio::time::timeout(API_TIMEOUT, request).await {
            Ok(answer) => answer.map_err(|source| self.failed(operation, pod, source)),
            Err(_) => Err(KubeError::TimedOut {
                operation,
                namespace: self.namespace.clone(),
                pod: pod.to_owned(),
                after: humantime::format_duration(API_TIMEOUT).to_string(),
            }),
        }
    }
}
