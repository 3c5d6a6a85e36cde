//! The building blocks of the manifests: metadata and labels, environment, probes, resources, security
//! contexts, pod templates and a Deployment around a pod spec.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, PodSecurityContext, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, SecretKeySelector, SecurityContext,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::options::{ManifestOptions, NOBODY};
use crate::kubernetes::labels::NAME_LABEL;
pub(super) fn meta(
    options: &ManifestOptions,
    name: &str,
    labels: BTreeMap<String, String>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(options.namespace.clone()),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

pub(super) fn app_labels(name: &str, part_of: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), name.to_owned()),
        ("app.kubernetes.io/part-of".to_owned(), part_of.to_owned()),
    ])
}

pub(super) fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

pub(super) fn env_from_secret(name: &str, secret: &str, key: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: secret.into(),
                key: key.into(),
                ..SecretKeySelector::default()
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }
}

pub(super) fn http_probe(path: &str, port: u16, period_seconds: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::Int(i32::from(port)),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period_seconds),
        timeout_seconds: Some(3),
        failure_threshold: Some(3),
        ..Probe::default()
    }
}

pub(super) fn resources(
    cpu_request: &str,
    memory_request: &str,
    cpu_limit: &str,
    memory_limit: &str,
) -> ResourceRequirements {
    let pair = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.into())),
            ("memory".to_owned(), Quantity(memory.into())),
        ])
    };
    ResourceRequirements {
        requests: Some(pair(cpu_request, memory_request)),
        limits: Some(pair(cpu_limit, memory_limit)),
        ..ResourceRequirements::default()
    }
}

/// Non-root, no privilege escalation; `add` capabilities on top of none.
pub(super) fn container_security(read_only_root: bool, add: &[&str]) -> SecurityContext {
    SecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NOBODY),
        run_as_group: Some(NOBODY),
        read_only_root_filesystem: Some(read_only_root),
        // A non-root exec of `tc` gets NET_ADMIN only from a file capability on it (cap_net_admin+ep), which
        // the kernel honours only where privilege escalation is allowed; see docs/kubernetes.md.
        allow_privilege_escalation: Some(!add.is_empty()),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            add: (!add.is_empty()).then(|| add.iter().map(|c| (*c).to_owned()).collect()),
        }),
        ..SecurityContext::default()
    }
}

pub(super) fn port(name: &str, port: u16) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: i32::from(port),
        ..ContainerPort::default()
    }
}

pub(super) fn pod_template(labels: BTreeMap<String, String>, spec: PodSpec) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            ..ObjectMeta::default()
        }),
        spec: Some(spec),
    }
}

pub(super) fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NOBODY),
        run_as_group: Some(NOBODY),
        fs_group: Some(NOBODY),
        ..PodSecurityContext::default()
    }
}

pub(super) fn deployment(
    options: &ManifestOptions,
    name: &str,
    part_of: &str,
    replicas: u32,
    spec: PodSpec,
) -> Deployment {
    let labels = app_labels(name, part_of);
    Deployment {
        metadata: meta(options, name, labels.clone()),
        spec: Some(DeploymentSpec {
            replicas: Some(i32::try_from(replicas).unwrap_or(1)),
            selector: LabelSelector {
                match_labels: Some(BTreeMap::from([(NAME_LABEL.to_owned(), name.to_owned())])),
                ..LabelSelector::default()
            },
            template: pod_template(labels, spec),
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}
