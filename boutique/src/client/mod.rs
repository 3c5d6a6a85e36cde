//! The breaker-wrapped JSON client every service uses to call a dependency.
//!
//! Each call takes a permit from the `caller->dependency` breaker (a rejection never touches the network),
//! runs under the call timeout (so a hang becomes a failure the breaker can count), and records its
//! outcome with `breaker::http::Classifier`: 5xx, timeouts and transport errors are failures, 4xx are the
//! caller's mistake and ignored. A dependency scaled to several replicas gets its calls in turn, one address
//! per call ([`replicas`]); the breaker stays one per caller and dependency. A half-open probe call says so in
//! [`PROBE_HEADER`], so the dependency's agent can count the probes reaching it.

pub mod replicas;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use breaker::{CircuitBreaker, Outcome};
use bytes::Bytes;
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::service_name::ServiceName;
use replicas::{Origin, Replicas, Resolve, SystemResolver};
use serving::ErrorBody;

/// Concurrent calls (so open connections) from one caller to one dependency; more wait for a slot,
/// inside the call timeout. Without a bound, HTTP/1's connection per concurrent call runs a loaded
/// stack out of file descriptors.
pub const MAX_CONCURRENT_CALLS: usize = 128;

/// Header naming the breaker that rejected a request (docs/wire.md).
pub const REJECTED_HEADER: &str = "x-tolerant-rejected";

/// Header marking a call that holds a half-open probe slot of the caller's breaker (value `1`).
pub const PROBE_HEADER: &str = agent::PROBE_HEADER;

/// Why a dependency call produced no value.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("circuit breaker {breaker} is open")]
    Rejected { breaker: String },
    #[error("{dependency} did not answer within {timeout:?}")]
    Timeout {
        dependency: ServiceName,
        timeout: Duration,
    },
    #[error("{dependency} could not be reached: {message}")]
    Transport {
        dependency: ServiceName,
        message: String,
    },
    #[error("{dependency} answered {status}: {message}")]
    Status {
        dependency: ServiceName,
        status: u16,
        message: String,
        /// The breaker further down that rejected the request, when the dependency says so.
        rejected_by: Option<String>,
    },
    #[error("{dependency} sent an unreadable answer: {message}")]
    Decode {
        dependency: ServiceName,
        message: String,
    },
}

impl CallError {
    /// The breaker that rejected the call, here or further down the call graph.
    pub fn rejected_by(&self) -> Option<&str> {
        match self {
            CallError::Rejected { breaker } => Some(breaker),
            CallError::Status { rejected_by, .. } => rejected_by.as_deref(),
            _ => None,
        }
    }

    /// The 4xx status when the dependency blamed the caller.
    pub fn client_error_status(&self) -> Option<u16> {
        match self {
            CallError::Status { status, .. } if (400..500).contains(status) => Some(*status),
            _ => None,
        }
    }
}

/// The keep-alive HTTP/1 client internal calls share (hyper-util's pooled client).
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// The HTTP client used for internal calls: HTTP/1 keep-alive, no proxy, no redirects followed.
/// (HTTP/2 would bound connections like Online Boutique's gRPC, but costs about 40 % more CPU per call
/// here; [`Dependency`] bounds concurrent calls, hence connections, instead.)
pub fn internal_http_client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    connector.enforce_http(true);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(serving::CLIENT_IDLE_TIMEOUT)
        .build(connector)
}

/// Outcome counters of one dependency, exported in `/metrics`.
#[derive(Debug, Default)]
pub struct CallStats {
    pub successes: AtomicU64,
    pub failures: AtomicU64,
    pub ignored: AtomicU64,
    pub rejected: AtomicU64,
}

impl CallStats {
    fn count(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Success => &self.successes,
            Outcome::Failure => &self.failures,
            Outcome::Ignored => &self.ignored,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// A dependency as seen from one caller: its replicas, its breaker and the call timeout.
#[derive(Debug, Clone)]
pub struct Dependency {
    target: ServiceName,
    replicas: Arc<Replicas>,
    breaker: Arc<CircuitBreaker>,
    http: HttpClient,
    timeout: Duration,
    classifier: breaker::http::Classifier,
    stats: Arc<CallStats>,
    connections: Arc<tokio::sync::Semaphore>,
}

impl Dependency {
    /// A dependency reached at `base_url` (no trailing slash) through `breaker`; a host name there is resolved
    /// by the system's resolver to every replica's address.
    pub fn new(
        target: ServiceName,
        base_url: impl Into<Arc<str>>,
        breaker: Arc<CircuitBreaker>,
        http: HttpClient,
        timeout: Duration,
        stats: Arc<CallStats>,
    ) -> Self {
        Dependency {
            target,
            replicas: Arc::new(Replicas::new(base_url, Arc::new(SystemResolver))),
            breaker,
            http,
            timeout,
            classifier: breaker::http::Classifier::default(),
            stats,
            connections: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_CALLS)),
        }
    }

    /// The same dependency with its host name resolved by `resolver` instead of the system's.
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolve>) -> Self {
        self.replicas = Arc::new(Replicas::new(self.replicas.base_url(), resolver));
        self
    }

    /// The breaker guarding this dependency.
    pub fn breaker(&self) -> &Arc<CircuitBreaker> {
        &self.breaker
    }

    /// `GET {base}{path}` and decode the JSON answer.
    pub async fn get<T: DeserializeOwned + Send + 'static>(
        &self,
        path: &str,
    ) -> Result<T, CallError> {
        self.call(Method::GET, path, None).await
    }

    /// `POST {base}{path}` with a JSON body and decode the JSON answer.
    pub async fn post<B: Serialize, T: DeserializeOwned + Send + 'static>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<T, CallError> {
        let body = serde_json::to_vec(body).map_err(|error| CallError::Decode {
            dependency: self.target,
            message: format!("request body: {error}"),
        })?;
        self.call(Method::POST, path, Some(body)).await
    }

    /// `DELETE {base}{path}` and decode the JSON answer.
    pub async fn delete<T: DeserializeOwned + Send + 'static>(
        &self,
        path: &str,
    ) -> Result<T, CallError> {
        self.call(Method::DELETE, path, None).await
    }

    fn request(
        &self,
        origin: Origin,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Request<Full<Bytes>>, CallError> {
        let mut builder = Request::builder()
            .method(method)
            .uri(format!("{}{}", origin.base_url, path))
            .header(header::ACCEPT, "application/json");
        if let Some(host) = origin.host {
            builder = builder.header(header::HOST, host);
        }
        let request = match body {
            Some(body) => builder
                .header(header::CONTENT_TYPE, "application/json")
                .body(Full::new(Bytes::from(body))),
            None => builder.body(Full::new(Bytes::new())),
        };
        request.map_err(|error| CallError::Transport {
            dependency: self.target,
            message: format!("invalid request: {error}"),
        })
    }

    /// One call under the breaker. The call runs on its own task, so a caller that gives up (its future dropped
    /// because *its* caller disconnected) does not cancel it: the call still ends within the call timeout and its
    /// outcome — a hang's timeout included — is recorded, instead of a dropped permit the breaker cannot read.
    async fn call<T: DeserializeOwned + Send + 'static>(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<T, CallError> {
        let origin = self.replicas.next().await;
        let mut request = self.request(origin, method, path, body)?;
        let permit = match self.breaker.try_acquire_owned() {
            Ok(permit) => permit,
            Err(rejected) => {
                self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                return Err(CallError::Rejected {
                    breaker: rejected.breaker.clone(),
                });
            }
        };
        if permit.is_probe() {
            request
                .headers_mut()
                .insert(PROBE_HEADER, header::HeaderValue::from_static("1"));
        }
        let dependency = self.clone();
        let call = tokio::spawn(async move { dependency.exchange(request, permit).await });
        call.await.unwrap_or_else(|error| {
            Err(CallError::Transport {
                dependency: self.target,
                message: format!("the call task failed: {error}"),
            })
        })
    }

    /// Sends `request`, waits for the answer within the call timeout, records the outcome on `permit`.
    #[allow(clippy::disallowed_methods)] // the call's wall latency for its stats, measured at the edge
    async fn exchange<T: DeserializeOwned>(
        &self,
        request: Request<Full<Bytes>>,
        permit: breaker::OwnedPermit,
    ) -> Result<T, CallError> {
        let started = Instant::now();
        let exchange = tokio::time::timeout(self.timeout, async move {
            let _connection = self
                .connections
                .acquire()
                .await
                .map_err(|_| "connection limiter closed".to_owned())?;
            let response = self.http.request(request).await.map_err(|error| {
                let mut message = error.to_string();
                if let Some(source) = std::error::Error::source(&error) {
                    message = format!("{message}: {source}");
                }
                message
            })?;
            let status = response.status().as_u16();
            let rejected_by = response
                .headers()
                .get(REJECTED_HEADER)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|error| error.to_string())?
                .to_bytes();
            Ok::<_, String>((status, rejected_by, body))
        })
        .await;
        let elapsed = started.elapsed();
        let (outcome, result) = match exchange {
            Err(_elapsed) => (
                Outcome::Failure,
                Err(CallError::Timeout {
                    dependency: self.target,
                    timeout: self.timeout,
                }),
            ),
            Ok(Err(message)) => (
                Outcome::Failure,
                Err(CallError::Transport {
                    dependency: self.target,
                    message,
                }),
            ),
            Ok(Ok((status, rejected_by, body))) => {
                let outcome = self.classifier.status(status);
                if (200..300).contains(&status) {
                    match serde_json::from_slice::<T>(&body) {
                        Ok(value) => (outcome, Ok(value)),
                        Err(error) => (
                            Outcome::Failure,
                            Err(CallError::Decode {
                                dependency: self.target,
                                message: error.to_string(),
                            }),
                        ),
                    }
                } else {
                    let message = serde_json::from_slice::<ErrorBody>(&body)
                        .map(|body| body.error)
                        .unwrap_or_else(|_| {
                            String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned()
                        });
                    (
                        outcome,
                        Err(CallError::Status {
                            dependency: self.target,
                            status,
                            message,
                            rejected_by,
                        }),
                    )
                }
            }
        };
        permit.record_timed(outcome, elapsed);
        self.stats.count(outcome);
        result
    }
}

/// An empty JSON object answer (`{}`), for calls that return nothing of interest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize)]
pub struct Ack {}

#[cfg(test)]
mod tests;
