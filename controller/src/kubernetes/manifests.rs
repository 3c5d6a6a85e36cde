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

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimVolumeSource, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, Secret, SecretKeySelector, SecurityContext, Service, ServiceAccount,
    ServicePort, ServiceSpec, Volume, VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::rbac::PERMISSIONS;
use super::{KubeError, NAME_LABEL, TESTBED_PART};

/// What the manifests are named and labelled after.
pub const APP: &str = "tolerant";
/// The Secret holding the token (key `token`).
pub const TOKEN_SECRET: &str = "tolerant-token";
/// The claim holding the SQLite database.
pub const DATA_CLAIM: &str = "tolerant-data";
/// The port every service and the dashboard listen on.
pub const SERVICE_PORT: u16 = 8080;
/// The agent sidecar's proxy port (callers of its service reach it here) and its control API's.
pub const AGENT_PROXY_PORT: u16 = 8081;
pub const AGENT_CONTROL_PORT: u16 = 9090;
/// The port the controller waits for load workers at: a spec's `[load] workers_listen = "0.0.0.0:7070"`.
pub const WORKERS_PORT: u16 = 7070;
/// The load workers' Deployment.
pub const LOAD_WORKER: &str = "tolerant-load-worker";
/// Bounds of `--load-workers` (0: none).
pub const LOAD_WORKERS: std::ops::RangeInclusive<u32> = 0..=1000;
/// `--load-worker-capacity` unless given.
pub const DEFAULT_LOAD_WORKER_CAPACITY: u32 = 2_000;
/// Bounds of `--load-worker-capacity` (the worker's own bound on `--capacity`).
pub const LOAD_WORKER_CAPACITY: std::ops::RangeInclusive<u32> =
    1..=crate::workers::wire::MAX_CAPACITY;
/// The unprivileged user and group of every container (the image's `nobody`).
const NOBODY: i64 = 65534;
/// Bounds of `--storage-gib`.
pub const STORAGE_GIB: std::ops::RangeInclusive<u32> = 1..=1024;
/// Bounds of `--checkout-replicas`.
pub const CHECKOUT_REPLICAS: std::ops::RangeInclusive<u32> = 1..=20;
/// Longest `--image`.
const MAX_IMAGE_BYTES: usize = 255;

/// What differs between installs; checked by [`ManifestOptions::check`] before anything is built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestOptions {
    /// The namespace everything goes in (a DNS-1123 label).
    pub namespace: String,
    /// The image every container runs (the one `scripts/images` builds).
    pub image: String,
    /// The ten boutique services and the agent too.
    pub testbed: bool,
    /// The service whose pod carries the agent sidecar (with `testbed`).
    pub agent_in: boutique::ServiceName,
    /// Checkout's replicas (with `testbed`).
    pub checkout_replicas: u32,
    /// The database claim's size.
    pub storage_gib: u32,
    /// A Secret (key `url`) holding a `postgres://` URL: no claim then.
    pub database_secret: Option<String>,
    /// The token every mutation needs.
    pub token: String,
    /// Load workers to run (0: none).
    pub load_workers: u32,
    /// Users each load worker holds (its `--capacity`).
    pub load_worker_capacity: u32,
}

impl ManifestOptions {
    /// Defaults for `namespace` with `token`.
    pub fn new(namespace: impl Into<String>, token: impl Into<String>) -> Self {
        ManifestOptions {
            namespace: namespace.into(),
            image: "tolerant:latest".into(),
            testbed: false,
            agent_in: boutique::ServiceName::Payment,
            checkout_replicas: 1,
            storage_gib: 1,
            database_secret: None,
            token: token.into(),
            load_workers: 0,
            load_worker_capacity: DEFAULT_LOAD_WORKER_CAPACITY,
        }
    }

    /// Every field within its bounds; the error names the flag.
    pub fn check(&self) -> Result<(), KubeError> {
        check_label("--namespace", &self.namespace)?;
        if self.image.is_empty()
            || self.image.len() > MAX_IMAGE_BYTES
            || self
                .image
                .chars()
                .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(invalid(
                "--image",
                format!(
                    "`{}` is not an image reference of 1 to {MAX_IMAGE_BYTES} bytes without spaces",
                    self.image
                ),
            ));
        }
        if !STORAGE_GIB.contains(&self.storage_gib) {
            return Err(invalid(
                "--storage-gib",
                format!(
                    "{} is outside {}..={}",
                    self.storage_gib,
                    STORAGE_GIB.start(),
                    STORAGE_GIB.end()
                ),
            ));
        }
        if !CHECKOUT_REPLICAS.contains(&self.checkout_replicas) {
            return Err(invalid(
                "--checkout-replicas",
                format!(
                    "{} is outside {}..={}",
                    self.checkout_replicas,
                    CHECKOUT_REPLICAS.start(),
                    CHECKOUT_REPLICAS.end()
                ),
            ));
        }
        for (flag, value, bounds) in [
            ("--load-workers", self.load_workers, &LOAD_WORKERS),
            (
                "--load-worker-capacity",
                self.load_worker_capacity,
                &LOAD_WORKER_CAPACITY,
            ),
        ] {
            if !bounds.contains(&value) {
                return Err(invalid(
                    flag,
                    format!("{value} is outside {}..={}", bounds.start(), bounds.end()),
                ));
            }
        }
        if let Some(secret) = &self.database_secret {
            check_label("--database-secret", secret)?;
        }
        if self.token.len() < 16
            || self.token.len() > 128
            || !self.token.chars().all(|c| c.is_ascii_graphic())
        {
            return Err(invalid(
                "--token",
                "16 to 128 printable ASCII characters".into(),
            ));
        }
        Ok(())
    }
}

fn invalid(field: &str, message: String) -> KubeError {
    KubeError::Invalid {
        field: field.to_owned(),
        message,
    }
}

/// A DNS-1123 label: 1 to 63 of `a-z 0-9 -`, starting and ending alphanumeric.
pub fn check_label(field: &str, value: &str) -> Result<(), KubeError> {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let ok = !value.is_empty()
        && value.len() <= 63
        && value.chars().all(|c| alphanumeric(c) || c == '-')
        && value.starts_with(alphanumeric)
        && value.ends_with(alphanumeric);
    if ok {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "`{value}` is not a DNS-1123 label (1 to 63 of a-z, 0-9 and `-`, alphanumeric at both ends)"
            ),
        ))
    }
}

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
    push(serde_json::to_value(service(options, APP, false)))?;
    if options.load_workers > 0 {
        push(serde_json::to_value(load_worker_deployment(options)))?;
    }
    if options.testbed {
        for service in boutique::ServiceName::ALL {
            push(serde_json::to_value(testbed_deployment(options, &service)))?;
            push(serde_json::to_value(self::service(
                options,
                service.as_str(),
                true,
            )))?;
        }
    }
    Ok(documents)
}

fn meta(options: &ManifestOptions, name: &str, labels: BTreeMap<String, String>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(options.namespace.clone()),
        labels: Some(labels),
        ..ObjectMeta::default()
    }
}

fn app_labels(name: &str, part_of: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), name.to_owned()),
        ("app.kubernetes.io/part-of".to_owned(), part_of.to_owned()),
    ])
}

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

fn service_account(options: &ManifestOptions) -> ServiceAccount {
    ServiceAccount {
        metadata: meta(options, APP, app_labels(APP, APP)),
        ..ServiceAccount::default()
    }
}

fn role_binding(options: &ManifestOptions) -> RoleBinding {
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

fn token_secret(options: &ManifestOptions) -> Secret {
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

fn data_claim(options: &ManifestOptions) -> PersistentVolumeClaim {
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

fn env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        ..EnvVar::default()
    }
}

fn env_from_secret(name: &str, secret: &str, key: &str) -> EnvVar {
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

fn http_probe(path: &str, port: u16, period_seconds: i32) -> Probe {
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

fn resources(
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
fn container_security(read_only_root: bool, add: &[&str]) -> SecurityContext {
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

fn port(name: &str, port: u16) -> ContainerPort {
    ContainerPort {
        name: Some(name.into()),
        container_port: i32::from(port),
        ..ContainerPort::default()
    }
}

fn pod_template(labels: BTreeMap<String, String>, spec: PodSpec) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            ..ObjectMeta::default()
        }),
        spec: Some(spec),
    }
}

fn pod_security() -> PodSecurityContext {
    PodSecurityContext {
        run_as_non_root: Some(true),
        run_as_user: Some(NOBODY),
        run_as_group: Some(NOBODY),
        fs_group: Some(NOBODY),
        ..PodSecurityContext::default()
    }
}

fn deployment(
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

fn controller_deployment(options: &ManifestOptions) -> Deployment {
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
fn load_worker_deployment(options: &ManifestOptions) -> Deployment {
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
fn peers(options: &ManifestOptions) -> String {
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

fn testbed_deployment(options: &ManifestOptions, service: &boutique::ServiceName) -> Deployment {
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
fn service(options: &ManifestOptions, name: &str, headless: bool) -> Service {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(testbed: bool) -> ManifestOptions {
        ManifestOptions {
            testbed,
            ..ManifestOptions::new("chaos", "0123456789abcdef0123")
        }
    }

    fn kinds(documents: &[serde_json::Value]) -> Vec<String> {
        documents
            .iter()
            .map(|d| {
                format!(
                    "{}/{}",
                    d["kind"].as_str().unwrap(),
                    d["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }

    #[test]
    fn the_plain_install_is_the_controller_its_account_and_its_storage() {
        let documents = manifests(&options(false)).unwrap();
        assert_eq!(
            kinds(&documents),
            [
                "ServiceAccount/tolerant",
                "Role/tolerant",
                "RoleBinding/tolerant",
                "Secret/tolerant-token",
                "PersistentVolumeClaim/tolerant-data",
                "Deployment/tolerant",
                "Service/tolerant"
            ]
        );
        for document in &documents {
            assert_eq!(document["metadata"]["namespace"], "chaos", "{document}");
        }
        let controller = &documents[5]["spec"]["template"]["spec"];
        assert_eq!(controller["serviceAccountName"], "tolerant");
        let container = &controller["containers"][0];
        assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
        assert_eq!(container["securityContext"]["runAsNonRoot"], true);
        assert!(
            container["env"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["name"] != "TOLERANT_KUBERNETES")
        );
        assert_eq!(documents[6]["spec"]["type"], "ClusterIP");
    }

    #[test]
    fn the_testbed_adds_ten_services_with_the_agent_beside_the_one_named() {
        let mut with_agent = options(true);
        with_agent.agent_in = boutique::ServiceName::Checkout;
        with_agent.checkout_replicas = 3;
        let documents = manifests(&with_agent).unwrap();
        assert_eq!(documents.len(), 7 + 20);
        let deployment = |name: &str| {
            documents
                .iter()
                .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == name)
                .unwrap()
                .clone()
        };
        let checkout = deployment("checkout");
        assert_eq!(checkout["spec"]["replicas"], 3);
        let containers = checkout["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(
            containers
                .iter()
                .map(|c| c["name"].as_str().unwrap())
                .collect::<Vec<_>>(),
            ["checkout", "agent"]
        );
        assert_eq!(
            deployment("payment")["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let peers = containers[0]["env"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "TOLERANT_PEERS")
            .unwrap()["value"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            peers.contains("checkout=http://checkout:8081")
                && peers.contains("payment=http://payment:8080"),
            "{peers}"
        );
        // Every container of every pod: non-root, probes, requests and limits.
        for document in documents.iter().filter(|d| d["kind"] == "Deployment") {
            for container in document["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
            {
                assert_eq!(
                    container["securityContext"]["runAsNonRoot"], true,
                    "{container}"
                );
                assert!(
                    container["readinessProbe"].is_object()
                        && container["livenessProbe"].is_object(),
                    "{container}"
                );
                assert!(
                    container["resources"]["requests"].is_object()
                        && container["resources"]["limits"].is_object()
                );
            }
        }
        let controller_env =
            deployment("tolerant")["spec"]["template"]["spec"]["containers"][0]["env"].clone();
        assert!(
            controller_env
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["name"] == "TOLERANT_KUBERNETES" && e["value"] == "chaos")
        );
    }

    #[test]
    fn an_external_database_replaces_the_claim() {
        let mut external = options(false);
        external.database_secret = Some("tolerant-postgres".into());
        let documents = manifests(&external).unwrap();
        assert!(
            documents
                .iter()
                .all(|d| d["kind"] != "PersistentVolumeClaim")
        );
        let text = render(&external).unwrap();
        assert!(
            text.contains("tolerant-postgres") && !text.contains("claimName"),
            "{text}"
        );
    }

    #[test]
    fn every_flag_out_of_bounds_is_refused_naming_it() {
        let refused = |change: &dyn Fn(&mut ManifestOptions)| {
            let mut bad = options(true);
            change(&mut bad);
            manifests(&bad).unwrap_err().to_string()
        };
        assert!(refused(&|o| o.namespace = "Chaos".into()).starts_with("--namespace"));
        assert!(refused(&|o| o.namespace = "a".repeat(64)).starts_with("--namespace"));
        assert!(refused(&|o| o.image = "tolerant latest".into()).starts_with("--image"));
        assert!(refused(&|o| o.storage_gib = 0).starts_with("--storage-gib"));
        assert!(refused(&|o| o.storage_gib = 1025).starts_with("--storage-gib"));
        assert!(refused(&|o| o.checkout_replicas = 21).starts_with("--checkout-replicas"));
        assert!(
            refused(&|o| o.database_secret = Some("-x".into())).starts_with("--database-secret")
        );
        assert!(refused(&|o| o.token = "short".into()).starts_with("--token"));
        assert!(refused(&|o| o.load_workers = 1001).starts_with("--load-workers"));
        assert!(refused(&|o| o.load_worker_capacity = 0).starts_with("--load-worker-capacity"));
        assert!(
            refused(&|o| o.load_worker_capacity = 100_001).starts_with("--load-worker-capacity")
        );
    }

    #[test]
    fn load_workers_are_a_deployment_without_api_access_reaching_the_controllers_workers_port() {
        let mut with_workers = options(false);
        with_workers.load_workers = 4;
        with_workers.load_worker_capacity = 5_000;
        let documents = manifests(&with_workers).unwrap();
        assert_eq!(
            kinds(&documents).last().map(String::as_str),
            Some("Deployment/tolerant-load-worker")
        );
        let workers = documents.last().unwrap();
        assert_eq!(workers["spec"]["replicas"], 4);
        let pod = &workers["spec"]["template"]["spec"];
        assert_eq!(pod["automountServiceAccountToken"], false);
        assert!(pod["serviceAccountName"].is_null(), "{pod}");
        let container = &pod["containers"][0];
        let args: Vec<&str> = (container["args"].as_array().unwrap().iter())
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(
            args,
            [
                "load-worker",
                "--controller",
                "ws://tolerant.chaos.svc:7070/workers",
                "--capacity",
                "5000",
                "--wait",
                "1h",
                "--health",
                "0.0.0.0:8080"
            ]
        );
        let token = (container["env"].as_array().unwrap().iter())
            .find(|e| e["name"] == "TOLERANT_TOKEN")
            .unwrap();
        assert_eq!(token["valueFrom"]["secretKeyRef"]["name"], "tolerant-token");
        let security = &container["securityContext"];
        assert_eq!(
            (
                &security["runAsNonRoot"],
                &security["readOnlyRootFilesystem"]
            ),
            (&true.into(), &true.into())
        );
        assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/_healthz");
        assert_eq!(container["livenessProbe"]["httpGet"]["port"], 8080);
        assert!(container["resources"]["limits"]["memory"].is_string());
        // The controller's Service and container name the port the spec's `workers_listen` must use.
        let service = documents
            .iter()
            .find(|d| d["kind"] == "Service" && d["metadata"]["name"] == "tolerant")
            .unwrap();
        assert!(
            (service["spec"]["ports"].as_array().unwrap().iter())
                .any(|p| p["name"] == "workers" && p["port"] == 7070 && p["targetPort"] == 7070),
            "{service}"
        );
        let controller = documents
            .iter()
            .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "tolerant")
            .unwrap();
        assert!(
            (controller["spec"]["template"]["spec"]["containers"][0]["ports"]
                .as_array()
                .unwrap()
                .iter())
            .any(|p| p["name"] == "workers" && p["containerPort"] == 7070)
        );
        // Without --load-workers: no worker, no workers port.
        let plain = render(&options(false)).unwrap();
        assert!(
            !plain.contains("load-worker") && !plain.contains("7070"),
            "{plain}"
        );
    }

    #[test]
    fn the_yaml_reads_back_as_the_documents() {
        let text = render(&options(true)).unwrap();
        let read: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text).unwrap();
        assert_eq!(read, manifests(&options(true)).unwrap());
    }
}
