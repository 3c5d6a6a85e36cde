//! What a call to the cluster, or a checked flag, can fail with.

#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error(
        "Kubernetes: no cluster configuration found; tried the kubeconfig (KUBECONFIG, else ~/.kube/config: \
         {kubeconfig}) and the in-cluster service account (KUBERNETES_SERVICE_HOST and \
         /var/run/secrets/kubernetes.io/serviceaccount: {in_cluster})"
    )]
    NoConfig {
        kubeconfig: String,
        in_cluster: String,
    },
    #[error("Kubernetes API server {server}: not reachable ({message})")]
    Unreachable { server: String, message: String },
    #[error("Kubernetes API: {operation} pod {pod} in namespace {namespace}: {source}")]
    Api {
        operation: &'static str,
        namespace: String,
        pod: String,
        /// Boxed: kube's error is large, and every call returns this.
        #[source]
        source: Box<kube::Error>,
    },
    /// A call the API server took no answer to within [`super::API_TIMEOUT`].
    #[error(
        "Kubernetes API: {operation} pod {pod} in namespace {namespace}: no answer within {after}"
    )]
    TimedOut {
        operation: &'static str,
        namespace: String,
        pod: String,
        after: String,
    },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// The pod (its image, its capabilities) cannot take this fault.
    #[error("pod {pod}: {message}")]
    Unsupported { pod: String, message: String },
}

pub(super) fn invalid(field: &str, message: String) -> KubeError {
    KubeError::Invalid {
        field: field.to_owned(),
        message,
    }
}
