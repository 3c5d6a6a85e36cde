//! Running the services: all ten in one process on loopback ([`RunningStack`]), or one on its own
//! ([`run_one`]). Every service gets its breaker registry, worker pool and admin endpoints here.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::middleware::from_fn_with_state;
use parking_lot::Mutex;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::admin::{self, NoHooks, ServiceHooks};
use crate::client::internal_http_client;
use crate::config::StackConfig;
use crate::context::ServiceContext;
use crate::error::StackError;
use crate::metrics::{self, RequestStats};
use crate::pool::{self, WorkerPool};
use crate::service_name::ServiceName;
use crate::services::{
    ad, cart, checkout, currency, email, frontend, payment, productcatalog, recommendation,
    shipping,
};

/// How long a graceful shutdown may take before the remaining connections are dropped.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A service's router with its pool, admin routes and counters, plus what the stack keeps of it.
struct BuiltService {
    router: Router,
    agent: Option<agent::Agent>,
}

/// A seed per service derived from the stack's seed, so services draw different sequences.
fn service_seed(seed: u64, service: ServiceName) -> u64 {
    let index = ServiceName::ALL
        .iter()
        .position(|name| *name == service)
        .unwrap_or(0) as u64;
    seed ^ (index + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Puts the business routes behind the worker pool and request counters, and adds the admin routes
/// (outside the pool, so they answer while the pool is full).
fn assemble(ctx: &Arc<ServiceContext>, business: Router, hooks: Arc<dyn ServiceHooks>) -> Router {
    let business = business
        .layer(from_fn_with_state(ctx.pool.clone(), pool::limit))
        .layer(from_fn_with_state(ctx.requests.clone(), metrics::track));
    business.merge(admin::router(ctx.clone(), hooks))
}

fn build_service(
    service: ServiceName,
    config: &StackConfig,
    peers: &BTreeMap<ServiceName, String>,
    shutdown: CancellationToken,
) -> Result<BuiltService, StackError> {
    let registry = breaker::Registry::new(
        service.as_str(),
        config.breaker().clone(),
        Arc::new(breaker::SystemClock),
    );
    let ctx = Arc::new(ServiceContext {
        service,
        registry,
        pool: WorkerPool::new(config.pool()),
        token: config.token().map(Arc::from),
        http: internal_http_client(),
        call_timeout: config.call_timeout(),
        peers: peers.clone(),
        requests: Arc::new(RequestStats::default()),
        calls: Mutex::new(Vec::new()),
        shutdown,
    });
    let seed = service_seed(config.seed(), service);
    let no_hooks: Arc<dyn ServiceHooks> = Arc::new(NoHooks);
    let built = match service {
        ServiceName::Frontend => {
            let deps = frontend::FrontendDependencies {
                catalog: ctx.dependency(ServiceName::ProductCatalog)?,
                currency: ctx.dependency(ServiceName::Currency)?,
                cart: ctx.dependency(ServiceName::Cart)?,
                recommendation: ctx.dependency(ServiceName::Recommendation)?,
                shipping: ctx.dependency(ServiceName::Shipping)?,
                checkout: ctx.dependency(ServiceName::Checkout)?,
                ad: ctx.dependency(ServiceName::Ad)?,
            };
            let state = frontend::FrontendState::new(deps, seed);
            BuiltService {
                router: assemble(&ctx, frontend::router(state), no_hooks),
                agent: None,
            }
        }
        ServiceName::Checkout => {
            let state = checkout::CheckoutState {
                cart: ctx.dependency(ServiceName::Cart)?,
                catalog: ctx.dependency(ServiceName::ProductCatalog)?,
                currency: ctx.dependency(ServiceName::Currency)?,
                shipping: ctx.dependency(ServiceName::Shipping)?,
                payment: ctx.dependency(ServiceName::Payment)?,
                email: ctx.dependency(ServiceName::Email)?,
            };
            BuiltService {
                router: assemble(&ctx, checkout::router(state), no_hooks),
                agent: None,
            }
        }
        ServiceName::Recommendation => {
            let state = recommendation::RecommendationState::new(
                ctx.dependency(ServiceName::ProductCatalog)?,
                seed,
            );
            BuiltService {
                router: assemble(&ctx, recommendation::router(state), no_hooks),
                agent: None,
            }
        }
        ServiceName::ProductCatalog => BuiltService {
            router: assemble(
                &ctx,
                productcatalog::router(productcatalog::CatalogState::default()),
                no_hooks,
            ),
            agent: None,
        },
        ServiceName::Currency => BuiltService {
            router: assemble(&ctx, currency::router(currency::CurrencyState), no_hooks),
            agent: None,
        },
        ServiceName::Cart => {
            let state = cart::CartState::default();
            let router = assemble(&ctx, cart::router(state.clone()), Arc::new(state.clone()))
                .merge(cart::stats_router(state));
            BuiltService {
                router,
                agent: None,
            }
        }
        ServiceName::Payment => {
            let agent = agent::Agent::new(config.agent().clone());
            let business = payment::router(payment::PaymentState::default());
            let business = business
                .layer(from_fn_with_state(ctx.pool.clone(), pool::limit))
                .layer(agent::FaultLayer::new(agent.clone()))
                .layer(from_fn_with_state(ctx.requests.clone(), metrics::track));
            let hooks: Arc<dyn ServiceHooks> = Arc::new(PaymentHooks {
                agent: agent.clone(),
            });
            let router = business
                .merge(admin::router(ctx.clone(), hooks))
                .merge(agent::fault_api::router(agent.clone()));
            BuiltService {
                router,
                agent: Some(agent),
            }
        }
        ServiceName::Shipping => BuiltService {
            router: assemble(
                &ctx,
                shipping::router(shipping::ShippingState::default()),
                no_hooks,
            ),
            agent: None,
        },
        ServiceName::Email => {
            let state = email::EmailState::default();
            BuiltService {
                router: assemble(&ctx, email::router(state.clone()), Arc::new(state)),
                agent: None,
            }
        }
        ServiceName::Ad => BuiltService {
            router: assemble(&ctx, ad::router(ad::AdState::new(seed)), no_hooks),
            agent: None,
        },
    };
    Ok(built)
}

/// Payment's extra metrics: the embedded agent's.
struct PaymentHooks {
    agent: agent::Agent,
}

impl ServiceHooks for PaymentHooks {
    fn render_metrics(&self, out: &mut String) {
        out.push_str(&self.agent.render_metrics());
    }
}

async fn bind(service: ServiceName, addr: SocketAddr) -> Result<TcpListener, StackError> {
    TcpListener::bind(addr)
        .await
        .map_err(|source| StackError::Bind {
            service,
            addr,
            source,
        })
}

/// Serves one service; a client must send each request head within `head_timeout` ([`serving::server`]).
fn spawn_server(
    service: ServiceName,
    listener: TcpListener,
    router: Router,
    head_timeout: Duration,
    shutdown: CancellationToken,
) -> JoinHandle<Result<(), StackError>> {
    tokio::spawn(async move {
        serving::serve(listener, router, head_timeout, shutdown.cancelled_owned())
            .await
            .map_err(|source| StackError::Serve { service, source })
    })
}

/// All ten services running in this process.
#[derive(Debug)]
pub struct RunningStack {
    addrs: BTreeMap<ServiceName, SocketAddr>,
    shutdown: CancellationToken,
    servers: Vec<JoinHandle<Result<(), StackError>>>,
    agent: Option<agent::Agent>,
}

impl RunningStack {
    /// Binds every service (ports from the config, 0 = ephemeral), wires them to each other and serves; the config
    /// was checked when it was built.
    pub async fn start(config: StackConfig) -> Result<RunningStack, StackError> {
        let mut listeners = Vec::with_capacity(ServiceName::ALL.len());
        let mut addrs = BTreeMap::new();
        for service in ServiceName::ALL {
            let listener = bind(
                service,
                SocketAddr::new(config.host(), config.port(service)),
            )
            .await?;
            let local = listener.local_addr().map_err(|source| StackError::Bind {
                service,
                addr: SocketAddr::new(config.host(), config.port(service)),
                source,
            })?;
            addrs.insert(service, local);
            listeners.push((service, listener));
        }
        let peers: BTreeMap<ServiceName, String> = addrs
            .iter()
            .map(|(service, addr)| (*service, format!("http://{addr}")))
            .collect();
        let shutdown = CancellationToken::new();
        let mut servers = Vec::with_capacity(listeners.len());
        let mut payment_agent = None;
        for (service, listener) in listeners {
            let built = build_service(service, &config, &peers, shutdown.child_token())?;
            if built.agent.is_some() {
                payment_agent = built.agent;
            }
            servers.push(spawn_server(
                service,
                listener,
                built.router,
                config.head_read_timeout(),
                shutdown.child_token(),
            ));
        }
        Ok(RunningStack {
            addrs,
            shutdown,
            servers,
            agent: payment_agent,
        })
    }

    /// The base URL of a service, e.g. `http://127.0.0.1:40123`.
    pub fn url(&self, service: ServiceName) -> String {
        format!("http://{}", self.addrs[&service])
    }

    /// Where every service listens.
    pub fn addrs(&self) -> BTreeMap<ServiceName, SocketAddr> {
        self.addrs.clone()
    }

    /// The fault-injection agent embedded in Payment.
    pub fn payment_agent(&self) -> Option<&agent::Agent> {
        self.agent.as_ref()
    }

    /// Stops accepting, lets in-flight requests finish (up to a grace period), then returns.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        for server in self.servers {
            let abort = server.abort_handle();
            match tokio::time::timeout(SHUTDOWN_GRACE, server).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(error))) => tracing::warn!(%error, "service stopped with an error"),
                Ok(Err(join_error)) => tracing::warn!(%join_error, "service task failed"),
                Err(_) => abort.abort(),
            }
        }
    }
}

/// One service running on its own, with its dependencies reached over HTTP.
#[derive(Debug)]
pub struct RunningService {
    service: ServiceName,
    addr: SocketAddr,
    shutdown: CancellationToken,
    server: JoinHandle<Result<(), StackError>>,
}

impl RunningService {
    /// Binds and serves `service`; `peers` must give a base URL for each of its dependencies.
    pub async fn start(
        service: ServiceName,
        config: StackConfig,
        peers: BTreeMap<ServiceName, String>,
    ) -> Result<RunningService, StackError> {
        for dependency in service.dependencies() {
            let url = peers.get(dependency).ok_or(StackError::MissingPeer {
                service,
                dependency: *dependency,
            })?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(StackError::PeerUrl {
                    service: *dependency,
                    url: url.clone(),
                    message: "must start with http:// or https://".into(),
                });
            }
        }
        let requested = SocketAddr::new(config.host(), config.port(service));
        let listener = bind(service, requested).await?;
        let addr = listener.local_addr().map_err(|source| StackError::Bind {
            service,
            addr: requested,
            source,
        })?;
        let shutdown = CancellationToken::new();
        let built = build_service(service, &config, &peers, shutdown.child_token())?;
        let server = spawn_server(
            service,
            listener,
            built.router,
            config.head_read_timeout(),
            shutdown.child_token(),
        );
        Ok(RunningService {
            service,
            addr,
            shutdown,
            server,
        })
    }

    /// Which service this is.
    pub fn service(&self) -> ServiceName {
        self.service
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serves until the server fails or `stop` resolves, then shuts down gracefully.
    pub async fn serve_until(self, stop: impl Future<Output = ()>) -> Result<(), StackError> {
        let mut server = self.server;
        tokio::select! {
            finished = &mut server => return flatten(finished),
            () = stop => {}
        }
        self.shutdown.cancel();
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut server).await {
            Ok(finished) => flatten(finished),
            Err(_) => {
                server.abort();
                Ok(())
            }
        }
    }
}

fn flatten(
    finished: Result<Result<(), StackError>, tokio::task::JoinError>,
) -> Result<(), StackError> {
    match finished {
        Ok(result) => result,
        Err(join_error) => Err(StackError::Serve {
            service: ServiceName::Frontend,
            source: std::io::Error::other(join_error.to_string()),
        }),
    }
}

/// Runs one service until Ctrl-C; `peers` gives the base URL of each of its dependencies.
pub async fn run_one(
    service: ServiceName,
    config: StackConfig,
    peers: BTreeMap<ServiceName, String>,
) -> Result<(), StackError> {
    let running = RunningService::start(service, config, peers).await?;
    tracing::info!(%service, addr = %running.addr(), "listening");
    running
        .serve_until(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
