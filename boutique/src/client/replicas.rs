//! The replicas of one dependency: its host name resolved to every address and a round robin over them, one
//! address per call.
//!
//! A compose service scaled to N containers (`docker-compose up --scale checkout=5`) is one name that the
//! engine's DNS answers with N addresses. hyper's connector would connect to the first address only and its pool
//! would keep that connection, so every call of a caller would reach one replica. Instead the name is resolved
//! here, every address becomes its own `http://IP:PORT` origin (hyper keeps a pool per origin), and calls take
//! the addresses in turn. The list is refreshed in the background once it is older than [`REFRESH_PERIOD`], so
//! replicas started or removed later are followed; a failed refresh keeps the last list. A host that is already
//! an IP address (the embedded stack on loopback) is used as it is, with no resolving at all.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::time::Instant;

/// How old the resolved addresses may get before a call starts refreshing them.
pub const REFRESH_PERIOD: Duration = Duration::from_secs(5);
/// At most this many addresses of one dependency are used (the first in address order); a resolver answering
/// more is not allowed to grow the caller's pools without bound.
pub const MAX_REPLICAS: usize = 64;

/// Resolves a host name to socket addresses (the system's resolver, or a fixed table in tests).
pub trait Resolve: Send + Sync + fmt::Debug {
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'static, io::Result<Vec<SocketAddr>>>;
}

/// The system's resolver (`getaddrinfo` through tokio): inside a compose network, docker's DNS.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> BoxFuture<'static, io::Result<Vec<SocketAddr>>> {
        let host = host.to_owned();
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// Where one call goes: the base URL to send it to and, when that is an address picked for a host name, the
/// `Host` header naming the service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub base_url: String,
    pub host: Option<String>,
}

/// The addresses of one dependency and whose turn is next; see the module documentation.
#[derive(Debug)]
pub struct Replicas {
    /// The base URL as configured (`http://checkout:8080`), no trailing slash.
    base_url: Arc<str>,
    /// `None` when the base URL's host is an IP address (nothing to resolve) or the URL cannot be read.
    name: Option<Name>,
}

#[derive(Debug)]
struct Name {
    scheme: String,
    /// `checkout:8080`, sent as the `Host` header.
    authority: String,
    host: String,
    port: u16,
    /// The base URL's path, if any (`/api`), kept after each address.
    path: String,
    resolver: Arc<dyn Resolve>,
    resolved: Mutex<Resolved>,
    refreshing: AtomicBool,
    next: AtomicUsize,
}

#[derive(Debug, Default)]
struct Resolved {
    addresses: Arc<Vec<SocketAddr>>,
    /// When the last resolution (successful or not) ended; `None` before the first.
    at: Option<Instant>,
}

impl Resolved {
    fn stale(&self, now: Instant) -> bool {
        self.at
            .is_none_or(|at| now.saturating_duration_since(at) >= REFRESH_PERIOD)
    }
}

impl Replicas {
    /// The replicas behind `base_url` (`scheme://host:port[/path]`, no trailing slash), resolved by `resolver`.
    pub fn new(base_url: impl Into<Arc<str>>, resolver: Arc<dyn Resolve>) -> Self {
        let base_url = base_url.into();
        let name = Name::of(&base_url, resolver);
        Replicas { base_url, name }
    }

    /// The base URL as configured.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Where the next call goes: the next address in turn, or the configured URL when its host is an address,
    /// or when resolving gave none (the call then fails in the connector with the resolver's own error).
    pub async fn next(self: &Arc<Self>) -> Origin {
        let configured = || Origin {
            base_url: self.base_url.to_string(),
            host: None,
        };
        let Some(name) = &self.name else {
            return configured();
        };
        let addresses = self.addresses(name, Instant::now()).await;
        if addresses.is_empty() {
            return configured();
        }
        let turn = name.next.fetch_add(1, Ordering::Relaxed) % addresses.len();
        Origin {
            base_url: format!("{}://{}{}", name.scheme, addresses[turn], name.path),
            host: Some(name.authority.clone()),
        }
    }

    /// The current list: resolved now when there is none and it is time to try, otherwise the last one, with a
    /// refresh started in the background when it is stale.
    async fn addresses(self: &Arc<Self>, name: &Name, now: Instant) -> Arc<Vec<SocketAddr>> {
        let (addresses, stale) = {
            let resolved = name.resolved.lock();
            (Arc::clone(&resolved.addresses), resolved.stale(now))
        };
        if !stale {
            return addresses;
        }
        if addresses.is_empty() {
            name.refresh().await;
            return Arc::clone(&name.resolved.lock().addresses);
        }
        if !name.refreshing.swap(true, Ordering::AcqRel) {
            let replicas = Arc::clone(self);
            tokio::spawn(async move {
                if let Some(name) = &replicas.name {
                    name.refresh().await;
                    name.refreshing.store(false, Ordering::Release);
                }
            });
        }
        addresses
    }
}

impl Name {
    fn of(base_url: &str, resolver: Arc<dyn Resolve>) -> Option<Name> {
        let uri: http::Uri = base_url.parse().ok()?;
        let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
        if host.parse::<IpAddr>().is_ok() {
            return None;
        }
        let scheme = uri.scheme_str().unwrap_or("http").to_owned();
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == "https" { 443 } else { 80 });
        Some(Name {
            authority: uri.authority()?.to_string(),
            host: host.to_owned(),
            port,
            path: uri.path().trim_end_matches('/').to_owned(),
            scheme,
            resolver,
            resolved: Mutex::new(Resolved::default()),
            refreshing: AtomicBool::new(false),
            next: AtomicUsize::new(0),
        })
    }

    /// Resolves the name once; a failure or an empty answer keeps the last list (logged).
    async fn refresh(&self) {
        let answer = self.resolver.resolve(&self.host, self.port).await;
        let mut resolved = self.resolved.lock();
        resolved.at = Some(Instant::now());
        match answer {
            Ok(mut addresses) if !addresses.is_empty() => {
                addresses.sort();
                addresses.dedup();
                addresses.truncate(MAX_REPLICAS);
                resolved.addresses = Arc::new(addresses);
            }
            Ok(_) => {
                tracing::warn!(host = %self.host, "resolving gave no address; keeping the last list")
            }
            Err(error) => {
                tracing::warn!(host = %self.host, %error, "resolving failed; keeping the last list");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// A resolver answering from a table the test changes.
    #[derive(Debug, Default)]
    struct Table {
        answer: Mutex<Vec<SocketAddr>>,
        asked: AtomicUsize,
    }

    impl Resolve for Table {
        fn resolve(&self, _: &str, _: u16) -> BoxFuture<'static, io::Result<Vec<SocketAddr>>> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            let answer = self.answer.lock().clone();
            Box::pin(async move { Ok(answer) })
        }
    }

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    async fn bases(replicas: &Arc<Replicas>, calls: usize) -> Vec<String> {
        let mut bases = Vec::new();
        for _ in 0..calls {
            bases.push(replicas.next().await.base_url);
        }
        bases
    }

    #[tokio::test(start_paused = true)]
    async fn calls_take_the_addresses_in_turn_and_follow_a_refresh() {
        let table = Arc::new(Table::default());
        *table.answer.lock() = vec![address("10.0.0.2:8080"), address("10.0.0.1:8080")];
        let replicas = Arc::new(Replicas::new("http://checkout:8080", table.clone()));
        let origin = replicas.next().await;
        assert_eq!(origin.host.as_deref(), Some("checkout:8080"));
        assert_eq!(
            bases(&replicas, 4).await,
            [
                "http://10.0.0.2:8080",
                "http://10.0.0.1:8080",
                "http://10.0.0.2:8080",
                "http://10.0.0.1:8080"
            ]
        );
        assert_eq!(table.asked.load(Ordering::Relaxed), 1);

        // A third replica appears: seen once the list is stale and the background refresh has run.
        table.answer.lock().push(address("10.0.0.3:8080"));
        tokio::time::advance(REFRESH_PERIOD - Duration::from_millis(1)).await;
        assert_eq!(bases(&replicas, 3).await.len(), 3);
        assert_eq!(table.asked.load(Ordering::Relaxed), 1, "not stale yet");
        tokio::time::advance(Duration::from_millis(1)).await;
        replicas.next().await;
        tokio::task::yield_now().await;
        let seen: BTreeSet<String> = bases(&replicas, 3).await.into_iter().collect();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert_eq!(table.asked.load(Ordering::Relaxed), 2);

        // The name stops resolving: the last list is kept.
        table.answer.lock().clear();
        tokio::time::advance(REFRESH_PERIOD).await;
        replicas.next().await;
        tokio::task::yield_now().await;
        let seen: BTreeSet<String> = bases(&replicas, 3).await.into_iter().collect();
        assert_eq!(seen.len(), 3, "{seen:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_address_is_not_resolved_and_a_long_answer_is_bounded() {
        let table = Arc::new(Table::default());
        let fixed = Arc::new(Replicas::new("http://127.0.0.1:4000", table.clone()));
        assert_eq!(
            fixed.next().await,
            Origin {
                base_url: "http://127.0.0.1:4000".into(),
                host: None
            }
        );
        assert_eq!(table.asked.load(Ordering::Relaxed), 0);

        // Nothing resolved yet: the configured URL, so the connector reports the failure itself.
        let named = Arc::new(Replicas::new("http://cart:8080/api", table.clone()));
        assert_eq!(named.next().await.base_url, "http://cart:8080/api");

        *table.answer.lock() = (0..200u16)
            .map(|i| SocketAddr::new(IpAddr::from([10, 0, (i >> 8) as u8, i as u8]), 8080))
            .collect();
        tokio::time::advance(REFRESH_PERIOD).await;
        let seen: BTreeSet<String> = bases(&named, 2 * MAX_REPLICAS).await.into_iter().collect();
        assert_eq!(seen.len(), MAX_REPLICAS);
        assert!(seen.contains("http://10.0.0.0:8080/api"), "{seen:?}");
    }
}
