//! HTTP calls to the testbed's control surfaces: service admin endpoints (reset, breaker config) and
//! the fault agent's control API (put, renew, delete), and the reads the observer samples (pools, carts,
//! `/metrics`, breaker snapshots). The bearer token is a property of the request, not of the client: only a call
//! made with [`Credential::Token`] — a mutation of Tolerant's own control endpoints (the agent's `/_agent/*`,
//! the services' `/_admin/*`) — carries it; every read, and every request to a service of the user's own that
//! is not one of those, goes without it. Every answer is read within [`ADMIN_CALL_TIMEOUT`] and at most
//! [`MAX_ANSWER_BYTES`].

use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// Time one control call may take.
pub const ADMIN_CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest answer body read (a foreign source's whole exposition fits many times over).
pub const MAX_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// A control call that did not get the answer it needed.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{method} {url}: {message}")]
    Transport {
        method: Method,
        url: String,
        message: String,
    },
    #[error("{method} {url}: HTTP {status}: {body}")]
    Status {
        method: Method,
        url: String,
        status: StatusCode,
        body: String,
    },
    /// The answer's body went over the cap while being read (an endless or oversized answer): reading stopped
    /// there, at most one chunk past the cap held.
    #[error("{method} {url}: answer too large: more than {cap} bytes")]
    TooLarge {
        method: Method,
        url: String,
        cap: usize,
    },
    /// No whole answer within the call's time (a too-slow or trickling answer included).
    #[error("{method} {url}: no whole answer within {after:?}")]
    TimedOut {
        method: Method,
        url: String,
        after: Duration,
    },
    /// A 2xx answer whose body is not the message the producer sends.
    #[error("{method} {url}: answer does not decode: {message}")]
    Decode {
        method: Method,
        url: String,
        message: String,
    },
    /// Refused before sending: an input that cannot be put into a URL as it is (a fault id).
    #[error(transparent)]
    Invalid(#[from] agent::api::InvalidFault),
}

impl AdminError {
    /// What the callee refused about the caller's input, naming the field: a 400 or 404 answer whose body is
    /// the producers' `{"error": …, "field": …}` (the agent's and the services'), or an input refused before
    /// sending. `None` for every other failure (transport, 5xx, auth): those are the testbed's, not the input's.
    pub fn refused_input(&self) -> Option<String> {
        match self {
            AdminError::Invalid(error) => Some(error.to_string()),
            AdminError::Status { status, body, .. }
                if matches!(*status, StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND) =>
            {
                let answer: serving::ErrorBody = serde_json::from_str(body).ok()?;
                Some(match answer.field {
                    Some(field) if !answer.error.starts_with(&format!("{field}:")) => {
                        format!("{field}: {}", answer.error)
                    }
                    _ => answer.error,
                })
            }
            _ => None,
        }
    }
}

/// Why a body was not read whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CappedReadError {
    /// More than `cap` bytes arrived; reading stopped there.
    #[error("more than {cap} bytes")]
    TooLarge { cap: usize },
    /// The body failed while being read (the connection dropped, a framing error).
    #[error("{0}")]
    Body(String),
}

/// Reads `body` chunk by chunk, stopping with [`CappedReadError::TooLarge`] as soon as more than `cap` bytes have
/// arrived (so at most `cap` plus one chunk is ever held), whatever the answer's `Content-Length` says. The one
/// reader of every answer Tolerant takes from outside; the caller bounds its time.
pub async fn read_capped<B>(body: B, cap: usize) -> Result<Bytes, CappedReadError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let mut body = std::pin::pin!(body);
    if body.size_hint().lower() > cap as u64 {
        return Err(CappedReadError::TooLarge { cap });
    }
    let mut read = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|error| CappedReadError::Body(error.to_string()))?;
        if let Ok(data) = frame.into_data() {
            if read.len() + data.len() > cap {
                return Err(CappedReadError::TooLarge { cap });
            }
            read.extend_from_slice(&data);
        }
    }
    Ok(read.freeze())
}

/// `{agent}/_agent/faults/{id}{suffix}`, the id checked by the agent's own rule first (so it is one path
/// segment as it is: `A–Z a–z 0–9 . _ -` need no escaping, and `x?y` is refused rather than sent as `x`).
fn fault_url(agent_url: &str, id: &str, suffix: &str) -> Result<String, AdminError> {
    agent::api::validate_fault_id(id)?;
    Ok(format!("{agent_url}/_agent/faults/{id}{suffix}"))
}

/// `?lease=…ms` for a push held by `lease`; nothing for one that stays.
fn lease_query(lease: Option<Duration>) -> String {
    match lease {
        Some(lease) => format!("?lease={}ms", lease.as_millis()),
        None => String::new(),
    }
}

/// Whether one request carries the testbed's bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// No `Authorization` header: every read, and every request to something that is not Tolerant's own
    /// control endpoint (a `[targets]` service's `/`, a `[[sources]]` exposition).
    Anonymous,
    /// `Authorization: Bearer <token>`: a mutation of Tolerant's own control endpoints (the agent's control API,
    /// a testbed service's `/_admin/*`).
    Token,
}

/// Client for control calls (pooled keep-alive connections, one per target).
#[derive(Clone)]
pub struct AdminClient {
    client: Client<HttpConnector, Full<Bytes>>,
    /// The token a [`Credential::Token`] request carries; `None` for a client that only reads.
    token: Option<String>,
}

impl std::fmt::Debug for AdminClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminClient")
            .field("token", &self.token.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

impl AdminClient {
    pub fn new(token: impl Into<String>) -> Self {
        AdminClient {
            client: Client::builder(TokioExecutor::new())
                .pool_idle_timeout(serving::CLIENT_IDLE_TIMEOUT)
                .build_http(),
            token: Some(token.into()),
        }
    }

    /// A client that has no token to send: for reading a foreign service's metrics.
    pub fn without_token() -> Self {
        AdminClient {
            client: Client::builder(TokioExecutor::new())
                .pool_idle_timeout(serving::CLIENT_IDLE_TIMEOUT)
                .build_http(),
            token: None,
        }
    }

    /// Sends a request, with the token when `credential` says so; returns the body of a 2xx answer.
    pub async fn call(
        &self,
        method: Method,
        url: &str,
        credential: Credential,
        content_type: Option<&'static str>,
        body: Bytes,
    ) -> Result<Bytes, AdminError> {
        let transport = |message: String| AdminError::Transport {
            method: method.clone(),
            url: url.to_owned(),
            message,
        };
        let mut request = Request::builder().method(method.clone()).uri(url);
        if let (Credential::Token, Some(token)) = (credential, &self.token) {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        let request = request
            .body(Full::new(body))
            .map_err(|e| transport(e.to_string()))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| transport(e.to_string()))?;
            let status = response.status();
            let body = read_capped(response.into_body(), MAX_ANSWER_BYTES)
                .await
                .map_err(|error| match error {
                    CappedReadError::TooLarge { cap } => AdminError::TooLarge {
                        method: method.clone(),
                        url: url.to_owned(),
                        cap,
                    },
                    CappedReadError::Body(message) => transport(message),
                })?;
            Ok::<_, AdminError>((status, body))
        };
        let (status, body) = tokio::time::timeout(ADMIN_CALL_TIMEOUT, exchange)
            .await
            .map_err(|_| AdminError::TimedOut {
                method: method.clone(),
                url: url.to_owned(),
                after: ADMIN_CALL_TIMEOUT,
            })??;
        if !status.is_success() {
            return Err(AdminError::Status {
                method,
                url: url.to_owned(),
                status,
                body: String::from_utf8_lossy(&body).chars().take(500).collect(),
            });
        }
        Ok(body)
    }

    /// `GET url`, the answer decoded into the producer's type.
    pub async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: &str,
    ) -> Result<T, AdminError> {
        let body = self
            .call(Method::GET, url, Credential::Anonymous, None, Bytes::new())
            .await?;
        serde_json::from_slice(&body).map_err(|error| AdminError::Decode {
            method: Method::GET,
            url: url.to_owned(),
            message: error.to_string(),
        })
    }

    /// `GET url`, the answer as text (lossy UTF-8).
    pub async fn get_text(&self, url: &str) -> Result<String, AdminError> {
        let body = self
            .call(Method::GET, url, Credential::Anonymous, None, Bytes::new())
            .await?;
        Ok(String::from_utf8_lossy(&body).into_owned())
    }

    /// `GET {service}/_pool`: the service's worker pool now.
    pub async fn pool(&self, service_url: &str) -> Result<boutique::pool::PoolStats, AdminError> {
        self.get_json(&format!("{service_url}/_pool")).await
    }

    /// `GET {cart}/_admin/cart-stats`: cart sizes now.
    pub async fn cart_stats(
        &self,
        cart_url: &str,
    ) -> Result<boutique::services::cart::CartStats, AdminError> {
        self.get_json(&format!("{cart_url}/_admin/cart-stats"))
            .await
    }

    /// `GET {service}/_breakers`: every breaker of the service now.
    pub async fn breakers(
        &self,
        service_url: &str,
    ) -> Result<Vec<breaker::BreakerSnapshot>, AdminError> {
        self.get_json(&format!("{service_url}/_breakers")).await
    }

    /// `POST {service}/_admin/reset`: clears carts and breaker state.
    pub async fn reset(&self, service_url: &str) -> Result<(), AdminError> {
        self.call(
            Method::POST,
            &format!("{service_url}/_admin/reset"),
            Credential::Token,
            None,
            Bytes::new(),
        )
        .await
        .map(drop)
    }

    /// `PUT {service}/_admin/breakers` with a breaker config (TOML); with `lease`, the service goes back to its
    /// startup config by itself unless [`AdminClient::renew_breakers`] comes within the lease.
    pub async fn set_breakers(
        &self,
        service_url: &str,
        config: &breaker::BreakerConfig,
        lease: Option<Duration>,
    ) -> Result<(), AdminError> {
        self.call(
            Method::PUT,
            &format!("{service_url}/_admin/breakers{}", lease_query(lease)),
            Credential::Token,
            Some("application/toml"),
            Bytes::from(config.to_toml_string()),
        )
        .await
        .map(drop)
    }

    /// `POST {service}/_admin/breakers/renew`: the leased config holds for its lease from now.
    pub async fn renew_breakers(&self, service_url: &str) -> Result<(), AdminError> {
        self.call(
            Method::POST,
            &format!("{service_url}/_admin/breakers/renew"),
            Credential::Token,
            None,
            Bytes::new(),
        )
        .await
        .map(drop)
    }

    /// `DELETE {service}/_admin/breakers`: back to the service's startup config (mode included), any lease ended.
    pub async fn restore_breakers(&self, service_url: &str) -> Result<(), AdminError> {
        self.call(
            Method::DELETE,
            &format!("{service_url}/_admin/breakers"),
            Credential::Token,
            None,
            Bytes::new(),
        )
        .await
        .map(drop)
    }

    /// `GET {service}/_admin/breakers`: the running config, the startup config and the lease, if any.
    pub async fn breaker_config(
        &self,
        service_url: &str,
    ) -> Result<boutique::breaker_lease::BreakerConfigView, AdminError> {
        self.get_json(&format!("{service_url}/_admin/breakers"))
            .await
    }

    /// `PUT {service}/_admin/breakers/mode`: every breaker of the service (or the one `switch.breaker` names)
    /// switches to `switch.mode` and keeps the rest of its config; with `lease`, the service goes back to its
    /// startup config by itself unless [`AdminClient::renew_breakers`] comes within the lease.
    pub async fn set_breaker_mode(
        &self,
        service_url: &str,
        switch: &boutique::admin::ModeSwitch,
        lease: Option<Duration>,
    ) -> Result<(), AdminError> {
        let body = serde_json::to_vec(switch).expect("a mode switch serialises");
        self.call(
            Method::PUT,
            &format!("{service_url}/_admin/breakers/mode{}", lease_query(lease)),
            Credential::Token,
            Some("application/json"),
            Bytes::from(body),
        )
        .await
        .map(drop)
    }

    /// `GET {agent}/_agent/probes?since_ms=…&until_ms=…`: the agent's half-open probes per 10 ms bucket in the window.
    pub async fn probe_buckets(
        &self,
        agent_url: &str,
        since_ms: u64,
        until_ms: u64,
    ) -> Result<agent::probes::ProbeBuckets, AdminError> {
        self.get_json(&format!(
            "{agent_url}/_agent/probes?since_ms={since_ms}&until_ms={until_ms}"
        ))
        .await
    }

    /// `PUT {agent}/_agent/faults/{id}`.
    pub async fn put_fault(
        &self,
        agent_url: &str,
        id: &str,
        fault: &agent::api::FaultSpec,
    ) -> Result<(), AdminError> {
        self.call(
            Method::PUT,
            &fault_url(agent_url, id, "")?,
            Credential::Token,
            Some("application/json"),
            Bytes::from(fault.to_json_value().to_string()),
        )
        .await
        .map(drop)
    }

    /// `POST {agent}/_agent/faults/{id}/renew` (for the fault's own lease length).
    pub async fn renew_fault(&self, agent_url: &str, id: &str) -> Result<(), AdminError> {
        self.call_fault(Method::POST, agent_url, id, "/renew").await
    }

    /// `POST {agent}/_agent/halt`: removes every fault the agent holds; returns how many.
    pub async fn halt(&self, agent_url: &str) -> Result<u64, AdminError> {
        let url = format!("{agent_url}/_agent/halt");
        let body = self
            .call(Method::POST, &url, Credential::Token, None, Bytes::new())
            .await?;
        let answer: agent::api::HaltResponse =
            serde_json::from_slice(&body).map_err(|error| AdminError::Decode {
                method: Method::POST,
                url: url.clone(),
                message: error.to_string(),
            })?;
        Ok(answer.removed as u64)
    }

    /// `DELETE {agent}/_agent/faults/{id}`.
    pub async fn delete_fault(&self, agent_url: &str, id: &str) -> Result<(), AdminError> {
        self.call_fault(Method::DELETE, agent_url, id, "").await
    }

    /// A call without a body on one of the agent's faults (`{agent}/_agent/faults/{id}{suffix}`), the answer
    /// dropped.
    async fn call_fault(
        &self,
        method: Method,
        agent_url: &str,
        id: &str,
        suffix: &str,
    ) -> Result<(), AdminError> {
        let url = fault_url(agent_url, id, suffix)?;
        self.call(method, &url, Credential::Token, None, Bytes::new())
            .await
            .map(drop)
    }
}
