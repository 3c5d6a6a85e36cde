//! What differs between installs of the manifests, its bounds, and the names and ports they share.

use crate::kubernetes::error::{KubeError, invalid};
use crate::kubernetes::labels::check_label;

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
pub(super) const NOBODY: i64 = 65534;

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
