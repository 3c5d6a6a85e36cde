//! The whole embedded tool in one call: the ten boutique services (agent in Payment), the experiment
//! store, the controller's runner behind [`EmbeddedOperations`], the hub with its live feeds, and the dashboard
//! on loopback. `tolerant` with no arguments and the browser test both start it this way. Given an external
//! testbed (the services running elsewhere, e.g. as containers) it starts no services and drives those.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use controller::clock::now_ms;
use controller::docker::{ContainerLeases, Deployment, Engine};
use controller::lease::ContainerStack;
use controller::store::Store;
use controller::target::ServiceId;
use controller::testbed::Testbed;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::router;
use crate::auth::Auth;
use crate::hub::{Hub, HubConfig};
use crate::operations::Operations;
use crate::operations::embedded::{EmbeddedOperations, Orchestrator};
use crate::state::AppState;

/// Loopback, port 8080.
pub const DEFAULT_BIND: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 8080);

/// How long open connections (websockets) get to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct DashboardConfig {
    /// Where the dashboard listens (`127.0.0.1:8080` unless told otherwise; port 0 = ephemeral).
    pub bind: SocketAddr,
    /// Experiment database: a SQLite file path or a `postgres://` URL.
    pub database: String,
    /// The token for every mutation (random when `None`).
    pub token: Option<String>,
    pub hub: HubConfig,
    /// Services running elsewhere (their token is [`DashboardConfig::token`]); `None` = start the embedded
    /// stack in this process.
    pub external: Option<ExternalTestbed>,
    /// How long a client may take to send a request head, on the dashboard and the embedded services
    /// ([`serving::HEADER_READ_TIMEOUT`] unless a test shortens it).
    pub head_read_timeout: Duration,
    /// The compose project the external testbed runs as, on a reachable engine: container faults on the
    /// game-day page and in runs, per-container stats. `None`: no engine is used.
    pub compose: Option<ComposeProject>,
    /// The orchestrator the external testbed runs on (Swarm, Kubernetes): its pod faults and replica changes.
    pub orchestrator: Orchestrator,
    /// How long a game-day breaker-mode switch holds without the dashboard renewing it (a service goes back to
    /// its startup config that long after the dashboard dies); within the services' lease bounds.
    pub mode_lease: Duration,
}

/// A compose project (or a swarm stack) on a Docker Engine the dashboard reaches.
#[derive(Debug, Clone)]
pub struct ComposeProject {
    pub engine: Engine,
    /// Which containers: the project's (`com.docker.compose.project` on them) or the stack's tasks.
    pub deployment: Deployment,
}

/// How often the dashboard sweeps for container faults whose lease has run out.
const LEASE_SWEEP_PERIOD: Duration = Duration::from_secs(1);

/// Where the services of a testbed started elsewhere answer (the token comes from the dashboard's config).
#[derive(Debug, Clone)]
pub struct ExternalTestbed {
    /// The frontend the virtual users load.
    pub frontend: SocketAddr,
    /// Every service's base URL by name.
    pub services: Vec<(ServiceId, String)>,
    /// Base URL of the fault agent's control API.
    pub agent: String,
}

impl Default for DashboardConfig {
    fn default() -> Self {
        DashboardConfig {
            bind: DEFAULT_BIND,
            database: controller::store::DEFAULT_DATABASE.to_owned(),
            token: None,
            hub: HubConfig::default(),
            external: None,
            head_read_timeout: serving::HEADER_READ_TIMEOUT,
            compose: None,
            orchestrator: Orchestrator::default(),
            mode_lease: crate::operations::embedded::GAME_DAY_MODE_LEASE,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DashboardError {
    #[error("testbed: {0}")]
    Testbed(String),
    #[error("database: {0}")]
    Store(#[from] controller::store::StoreError),
    #[error("controller: {0}")]
    Operations(#[from] crate::operations::OperationError),
    #[error("head_read_timeout: {0}")]
    HeadReadTimeout(#[from] serving::HeadReadTimeoutOutOfRange),
    #[error(
        "mode_lease: {} is outside {}..={} (the services' lease bounds)",
        agent::api::format_duration(*.0),
        agent::api::format_duration(boutique::breaker_lease::MIN_BREAKER_LEASE),
        agent::api::format_duration(boutique::breaker_lease::MAX_BREAKER_LEASE)
    )]
    ModeLease(Duration),
    #[error("listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Everything running; [`RunningDashboard::shutdown`] stops it with faults cleared.
pub struct RunningDashboard {
    addr: SocketAddr,
    token: String,
    /// The boutique frontend the dashboard drives (embedded or external).
    shop_url: String,
    /// The embedded services (`None` when the testbed runs elsewhere).
    stack: Option<boutique::RunningStack>,
    store: Store,
    operations: EmbeddedOperations,
    feeds: Vec<JoinHandle<()>>,
    flusher: JoinHandle<()>,
    server: JoinHandle<()>,
    stop_server: oneshot::Sender<()>,
}

impl std::fmt::Debug for RunningDashboard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunningDashboard")
            .field("addr", &self.addr)
            .finish()
    }
}

impl RunningDashboard {
    pub async fn start(config: DashboardConfig) -> Result<RunningDashboard, DashboardError> {
        serving::check_header_read_timeout(config.head_read_timeout)
            .map_err(DashboardError::HeadReadTimeout)?;
        let lease_bounds =
            boutique::breaker_lease::MIN_BREAKER_LEASE..=boutique::breaker_lease::MAX_BREAKER_LEASE;
        if !lease_bounds.contains(&config.mode_lease) {
            return Err(DashboardError::ModeLease(config.mode_lease));
        }
        let token = config.token.unwrap_or_else(Auth::random_token);
        let (stack, testbed) = match config.external {
            Some(external) => (
                None,
                Testbed {
                    frontend: external.frontend,
                    services: external.services,
                    agent: external.agent,
                    token: token.clone(),
                },
            ),
            None => {
                let stack_config = boutique::RawStackConfig {
                    head_read_timeout: config.head_read_timeout,
                    ..boutique::RawStackConfig::default()
                }
                .with_token(token.clone())
                .and_then(boutique::RawStackConfig::build)
                .map_err(|error| DashboardError::Testbed(error.to_string()))?;
                let stack = boutique::RunningStack::start(stack_config)
                    .await
                    .map_err(|error| DashboardError::Testbed(error.to_string()))?;
                let testbed = Testbed::of_stack(&stack, token.clone());
                (Some(stack), testbed)
            }
        };
        let store = Store::open(&config.database).await?;
        let hub = Hub::new(config.hub);
        let flusher = hub.spawn_flusher();
        let shop_url = format!("http://{}/", testbed.frontend);
        let mut sweep = None;
        let containers = match config.compose {
            Some(compose) => {
                let leases = ContainerLeases::new(compose.engine, store.clone());
                // Faults a stopped controller left behind whose lease has ended are undone first.
                if let Err(error) = leases.sweep(now_ms()).await {
                    tracing::warn!(%error, "container fault sweep at start failed");
                }
                sweep = Some(leases.spawn_watchdog(LEASE_SWEEP_PERIOD));
                Some(ContainerStack {
                    leases,
                    deployment: compose.deployment,
                })
            }
            None => None,
        };
        let operations = EmbeddedOperations::orchestrated(
            store.clone(),
            testbed,
            hub.clone(),
            containers,
            config.orchestrator,
        )
        .await?;
        operations.set_mode_lease(config.mode_lease);
        let mut feeds = operations.spawn_live_feeds();
        feeds.extend(sweep);
        let state = AppState {
            hub,
            operations: Arc::new(operations.clone()),
            auth: Arc::new(Auth::new(token.clone())),
            shop_url: Some(shop_url.clone()),
            breaker_inbox: operations.push_inbox(),
            simulations: Default::default(),
        };
        let listener = tokio::net::TcpListener::bind(config.bind)
            .await
            .map_err(|source| DashboardError::Bind {
                addr: config.bind,
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| DashboardError::Bind {
                addr: config.bind,
                source,
            })?;
        let (stop_server, stopped) = oneshot::channel::<()>();
        let app = router(state);
        let head_read_timeout = config.head_read_timeout;
        let server = tokio::spawn(async move {
            let serve = serving::serve(listener, app, head_read_timeout, async move {
                let _ = stopped.await;
            });
            if let Err(error) = serve.await {
                tracing::warn!(%error, "dashboard server stopped");
            }
        });
        Ok(RunningDashboard {
            addr,
            token,
            shop_url,
            stack,
            store,
            operations,
            feeds,
            flusher,
            server,
            stop_server,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    /// The shop: the boutique frontend's URL (`http://127.0.0.1:PORT/`).
    pub fn shop_url(&self) -> &str {
        &self.shop_url
    }

    /// The embedded boutique (service URLs, the Payment agent); `None` with an external testbed.
    pub fn stack(&self) -> Option<&boutique::RunningStack> {
        self.stack.as_ref()
    }

    /// Stops the running experiment (its run stays unfinished and is redone on the next start), clears
    /// every fault, stops the dashboard (websockets get a short grace), the feeds and the ten services.
    pub async fn shutdown(self) {
        self.operations.stop_active().await;
        if let Err(error) = self.operations.halt().await {
            tracing::warn!(%error, "clearing faults at shutdown failed");
        }
        let _ = self.stop_server.send(());
        let server = self.server;
        let abort = server.abort_handle();
        if tokio::time::timeout(SHUTDOWN_GRACE, server).await.is_err() {
            abort.abort();
        }
        for feed in self.feeds {
            feed.abort();
        }
        self.flusher.abort();
        if let Some(stack) = self.stack {
            stack.shutdown().await;
        }
        self.store.close().await;
    }
}
