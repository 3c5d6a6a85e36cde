//! Each object the manifests hold: the account, its Role and binding, the token Secret, the data claim, the
//! controller's and the testbed's Deployments, and their Services.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSpec, Secret, Service, ServiceAccount, ServicePort,
    ServiceSpec, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::options::{
    AGENT_CONTROL_PORT, AGENT_PROXY_PORT, APP, DATA_CLAIM, LOAD_WORKER, ManifestOptions,
    SERVICE_PORT, TOKEN_SECRET, WORKERS_PORT,
};
use super::parts::{
    app_labels, container_security, deployment, env, env_from_secret, http_probe, meta,
    pod_security, port, resources,
};
use crate::kubernetes::labels::{NAME_LABEL, TESTBED_PART};
use crate::kubernetes::rbac::PERMISSIONS;
/// The Role: exactly [`PERMISSIONS`], one rule per resource.
pub fn role(options: &ManifestOptions) -> Role {
    let mut by_resource: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for permission in PERMISSIONS {
        by_resource
            .entry(permission.resource)
            .or_default()
            .push(permission.verb.to_owned());
    }
    Role {
        metadata: meta(options, APP, app_labels(APP, APP)),
        rules: Some(
            by_resource
                .into_iter()
                .map(|(resource, verbs)| PolicyRule {
                    api_groups: Some(vec![String::new()]),
                    resources: Some(vec![resource.to_owned()]),
                    verbs,
                    ..PolicyRule::default()
                })
                .collect(),
        ),
    }
}

pub(super) fn service_account(options: &ManifestOptions) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(options, APP, app_labels(APP, APP)),
        ..ServiceAccount::default()
    }
}

pub(super) fn role_binding(options: &ManifestOptions) -> RoleBinding {
    RoleBinding {
        metadata: meta(options, APP, app_labels(APP, APP)),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: APP.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: APP.into(),
            namespace: Some(options.namespace.clone()),
            ..Subject::default()
        }]),
    }
}

pub(super) fn token_secret(options: &ManifestOptions) -> Secret {
    Secret {
        metadata: meta(options, TOKEN_SECRET, app_labels(APP, APP)),
        string_data: Some(BTreeMap::from([(
            "token".to_owned(),
            options.token.clone(),
        )])),
        type_: Some("Opaque".into()),
        ..Secret::default()
    }
}

pub(super) fn data_claim(options: &ManifestOptions) -> PersistentVolumeClaim {
    PersistentVolumeClaim {
        metadata: meta(options, DATA_CLAIM, app_labels(APP, APP)),
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([(
                    "storage".to_owned(),
                    Quantity(format!("{}Gi", options.storage_gib)),
                )])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    }
}

pub(super) fn controller_deployment(options: &ManifestOptions) -> Deployment {
    let mut env_vars = vec![
        env("TOLERANT_BIND", &format!("0.0.0.0:{SERVICE_PORT}")),
        env_from_secret("TOLERANT_TOKEN", TOKEN_SECRET, "token"),
        env("RUST_LOG", "info"),
    ];
    env_vars.push(match &options.database_secret {
        Some(secret) => env_from_secret("TOLERANT_DB", secret, "url"),
        None => env("TOLERANT_DB", "/data/tolerant.db"),
    });
    if options.testbed {
        env_vars.push(env("TOLERANT_KUBERNETES", &options.namespace));
    }
    let mut mounts = vec![VolumeMount {
        name: "tmp".into(),
        mount_path: "/tmp".into(),
        ..VolumeMount::default()
    }];
    let mut volumes = vec![Volume {
        name: "tmp".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Volume::default()
    }];
    if options.database_secret.is_none() {
        mounts.push(VolumeMount {
            name: "data".into(),
            mount_path: "/data".into(),
            ..VolumeMount::default()
        });
        volumes.push(Volume {
            name: "data".into(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: DATA_CLAIM.into(),
                ..PersistentVolumeClaimVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
    let container = Container {
        name: "controller".into(),
        image: Some(options.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        env: Some(env_vars),
        ports: Some(if options.load_workers > 0 {
            vec![port("http", SERVICE_PORT), port("workers", WORKERS_PORT)]
        } else {
            vec![port("http", SERVICE_PORT)]
        }),
        readiness_probe: Some(http_probe("/_healthz", SERVICE_PORT, 5)),
        liveness_probe: Some(http_probe("/_healthz", SERVICE_PORT, 10)),
        resources: Some(resources("100m", "128Mi", "1", "512Mi")),
        security_context: Some(container_security(true, &[])),
        volume_mounts: Some(mounts),
        ..Container::default()
    };
    let spec = PodSpec {
        service_account_name: Some(APP.into()),
        security_context: Some(pod_security()),
        containers: vec![container],
        volumes: Some(volumes),
        ..PodSpec::default()
    };
    // One controller at a time: two on one SQLite file would fight over it.
    let mut deployment = deployment(options, APP, APP, 1, spec);
    if let Some(spec) = deployment.spec.as_mut() {
        spec.strategy = Some(k8s_openapi::api::apps::v1::DeploymentStrategy {
            type_: Some("Recreate".into()),
            ..Default::default()
        });
    }
    deployment
}

/// The URL load workers reach the controller at: its Service's `workers` port.
pub fn workers_url(options: &ManifestOptions) -> String {
    format!(
        "ws://{APP}.{}.svc:{WORKERS_PORT}/workers",
        options.namespace
    )
}

/// `--load-workers` load workers: each a pod of one `tolerant load-worker` (its name the pod's), the token from
/// the Secret (`TOLERANT_TOKEN`, which `--token` reads), retrying the controller for up to an hour, probed at
/// `--health`. No API access: the default account, its token not mounted.
pub(super) fn load_worker_deployment(options: &ManifestOptions) -> Deployment {
    let container = Container {
        name: "load-worker".into(),
        image: Some(options.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        args: Some(
            [
                "load-worker",
                "--controller",
                &workers_url(options),
                "--capacity",
                &options.load_worker_capacity.to_string(),
                "--wait",
                "1h",
                "--health",
                &format!("0.0.0.0:{SERVICE_PORT}"),
            ]
            .map(str::to_owned)
            .to_vec(),
        ),
        env: Some(vec![
            env_from_secret("TOLERANT_TOKEN", TOKEN_SECRET, "token"),
            env("RUST_LOG", "info"),
        ]),
        ports: Some(vec![port("health", SERVICE_PORT)]),
        readiness_probe: Some(http_probe("/_healthz", SERVICE_PORT, 5)),
        liveness_probe: Some(http_probe("/_healthz", SERVICE_PORT, 10)),
        resources: Some(resources("250m", "128Mi", "2", "1Gi")),
        security_context: Some(container_security(true, &[])),
        ..Container::default()
    };
    let spec = PodSpec {
        security_context: Some(pod_security()),
        containers: vec![container],
        automount_service_account_token: Some(false),
        ..PodSpec::default()
    };
    deployment(options, LOAD_WORKER, APP, options.load_workers, spec)
}

/// `TOLERANT_PEERS` of the testbed: every service by its Service's name, the agent's service at the sidecar's
/// proxy port.
pub(super) fn peers(options: &ManifestOptions) -> String {
    boutique::ServiceName::ALL
        .iter()
        .map(|service| {
            let port = if *service == options.agent_in {
                AGENT_PROXY_PORT
            } else {
                SERVICE_PORT
            };
            format!("{service}=http://{service}:{port}")
        })
        .collect::<Vec<_>>()
        .join(",")
}

pub(super) fn testbed_deployment(
    options: &ManifestOptions,
    service: &boutique::ServiceName,
) -> Deployment {
    let name = service.as_str();
    let token = env_from_secret("TOLERANT_TOKEN", TOKEN_SECRET, "token");
    let mut containers = vec![Container {
        name: name.into(),
        image: Some(options.image.clone()),
        image_pull_policy: Some("IfNotPresent".into()),
        args: Some(
            [
                "boutique",
                name,
                "--host",
                "0.0.0.0",
                "--port",
                &format!("{name}={SERVICE_PORT}"),
            ]
            .map(str::to_owned)
            .to_vec(),
        ),
        env: Some(vec![
            token.clone(),
            env("TOLERANT_PEERS", &peers(options)),
            env("RUST_LOG", "info"),
        ]),
        ports: Some(vec![port("http", SERVICE_PORT)]),
        readiness_probe: Some(http_probe("/_healthz", SERVICE_PORT, 2)),
        liveness_probe: Some(http_probe("/_healthz", SERVICE_PORT, 10)),
        resources: Some(resources("50m", "64Mi", "500m", "256Mi")),
        // NET_ADMIN: the network faults run `tc` in the container through exec.
        security_context: Some(container_security(false, &["NET_ADMIN"])),
        ..Container::default()
    }];
    if *service == options.agent_in {
        containers.push(Container {
            name: "agent".into(),
            image: Some(options.image.clone()),
            image_pull_policy: Some("IfNotPresent".into()),
            args: Some(
                [
                    "agent",
                    "--listen",
                    &format!("0.0.0.0:{AGENT_PROXY_PORT}"),
                    "--upstream",
                    &format!("http://127.0.0.1:{SERVICE_PORT}"),
                    "--control",
                    &format!("0.0.0.0:{AGENT_CONTROL_PORT}"),
                ]
                .map(str::to_owned)
                .to_vec(),
            ),
            env: Some(vec![token, env("RUST_LOG", "info")]),
            ports: Some(vec![
                port("proxy", AGENT_PROXY_PORT),
                port("control", AGENT_CONTROL_PORT),
            ]),
            readiness_probe: Some(http_probe("/metrics", AGENT_CONTROL_PORT, 2)),
            liveness_probe: Some(http_probe("/metrics", AGENT_CONTROL_PORT, 10)),
            resources: Some(resources("50m", "32Mi", "500m", "128Mi")),
            security_context: Some(container_security(true, &[])),
            ..Container::default()
        });
    }
    let replicas = if *service == boutique::ServiceName::Checkout {
        options.checkout_replicas
    } else {
        1
    };
    let spec = PodSpec {
        security_context: Some(pod_security()),
        containers,
        // No API access from the services.
        automount_service_account_token: Some(false),
        ..PodSpec::default()
    };
    deployment(options, name, TESTBED_PART, replicas, spec)
}

/// The Service of `name`: the dashboard's (ClusterIP), or a testbed service's (headless: every ready
/// replica's address in DNS, so callers see each replica as compose gives them).
pub(super) fn service(options: &ManifestOptions, name: &str, headless: bool) -> Service {
    let part_of = if headless { TESTBED_PART } else { APP };
    let mut ports = vec![ServicePort {
        name: Some("http".into()),
        port: i32::from(SERVICE_PORT),
        target_port: Some(IntOrString::Int(i32::from(SERVICE_PORT))),
        ..ServicePort::default()
    }];
    if !headless && options.load_workers > 0 {
        ports.push(ServicePort {
            name: Some("workers".into()),
            port: i32::from(WORKERS_PORT),
            target_port: Some(IntOrString::Int(i32::from(WORKERS_PORT))),
            ..ServicePort::default()
        });
    }
    if headless && name == options.agent_in.as_str() {
        ports.push(ServicePort {
            name: Some("agent-proxy".into()),
            port: i32::from(AGENT_PROXY_PORT),
            target_port: Some(IntOrString::Int(i32::from(AGENT_PROXY_PORT))),
            ..ServicePort::default()
        });
        ports.push(ServicePort {
            name: Some("agent-control".into()),
            port: i32::from(AGENT_CONTROL_PORT),
            target_port: Some(IntOrString::Int(i32::from(AGENT_CONTROL_PORT))),
            ..ServicePort::default()
        });
    }
    Service {
        metadata: meta(options, name, app_labels(name, part_of)),
        spec: Some(ServiceSpec {
            type_: Some("ClusterIP".into()),
            cluster_ip: headless.then(|| "None".to_owned()),
            selector: Some(BTreeMap::from([(NAME_LABEL.to_owned(), name.to_owned())])),
            ports: Some(ports),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}
