//! Preflight: before an experiment is stored, every target of the testbed must answer and take the token, so a
//! typo in `[targets]` or a wrong `--token` fails at once with the target named, not at run 1 after the experiment
//! row exists.
//!
//! The checks change nothing: `GET /_healthz` on every Tolerant service; a breaker-mode switch with an empty body
//! where breaker config is offered (a valid token gets `400 mode: missing`, a wrong one `401`); a `GET` of the
//! POST-only reset route (`405` where it exists); `GET /_pool`, `GET /_admin/cart-stats` and a subscription to
//! `/_breakers/stream` where those are offered; `GET /` on a target that offers nothing (any answer will do); on
//! the agent, `GET /_agent/faults` and a renew of a fault id that cannot exist (a valid token gets `404`, a wrong
//! one `401`). Only the two refusal probes carry the token (they are mutations of Tolerant's own control
//! endpoints); every read goes without it, so a service of the user's own never sees it.
//!
//! The agent's caps (`GET /_agent/limits`) are compared with the spec's fault lease, delays and jitters
//! ([`Runner::check_fault_limits`]): a spec beyond them is a [`RunnerError::Spec`] naming the field (`tolerant run`
//! exits 2), not a run aborted with "fault not applied". An agent that does not answer the route (an older one)
//! is said and the agent checks each put itself.
//!
//! Every `[[sources]]` Prometheus source is scraped once too ([`Runner::check_sources`]): one that does not
//! answer at all (refused, no such path, too slow) is retried [`SOURCE_ATTEMPTS`] times [`SOURCE_RETRY_AFTER`]
//! apart and then is an error naming `sources[N].url` (a typo fails before anything is stored); one that answers
//! 5xx (it is there, restarting or overloaded) is said and not an error: a run counts a source blind while it
//! does not answer, and the experiment goes on.

use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode};

use super::{Runner, RunnerError};
use crate::observe::{Follows, Target};
use crate::spec::{ExperimentSpec, Offers, SourceSpec};
use crate::target::ServiceId;
use crate::testbed::AdminError;
use crate::testbed::Credential::{self, Anonymous};

/// Scrapes the preflight tries a `[[sources]]` source that does not answer, and the wait between two.
pub const SOURCE_ATTEMPTS: u32 = 3;
pub const SOURCE_RETRY_AFTER: Duration = Duration::from_millis(500);

/// A fault id no controller puts (ids are checked by the agent; this one is only ever renewed, never put).
const PREFLIGHT_FAULT_ID: &str = "tolerant-preflight-token-check";

impl Runner {
    /// Checks that every service of a Tolerant testbed and the agent answer and accept the token (see the module
    /// docs). The error names the target as the spec's `[targets]` table does.
    pub async fn check_testbed(&self) -> Result<(), RunnerError> {
        self.check_targets(&|name| Offers::tolerant_service(name))
            .await
            .map(drop)
    }

    /// Like [`Runner::check_testbed`] for the targets of `spec`, each probed for what it says it offers (a
    /// capability it declares and does not have is an error naming it); returns one line per target saying what it
    /// offers and what it does not (so what a run cannot measure there).
    pub async fn check_spec_targets(
        &self,
        spec: &ExperimentSpec,
    ) -> Result<Vec<String>, RunnerError> {
        let mut lines = self.check_targets(&|name| spec.offers_of(name)).await?;
        lines.extend(self.check_fault_limits(spec).await?);
        lines.extend(self.check_sources(spec).await?);
        Ok(lines)
    }

    /// Compares the spec's fault lease, and every delay fault's delay and delay + jitter, with the caps the agent
    /// answers at `GET /_agent/limits`; the error names the field. Returns a line when the agent does not say its
    /// caps.
    pub async fn check_fault_limits(
        &self,
        spec: &ExperimentSpec,
    ) -> Result<Option<String>, RunnerError> {
        let agent = &self.testbed.agent;
        let url = format!("{agent}/_agent/limits");
        let limits: agent::api::AgentLimits = match self
            .admin
            .call(Method::GET, &url, Anonymous, None, Bytes::new())
            .await
        {
            Ok(body) => serde_json::from_slice(&body).map_err(|error| {
                RunnerError::Testbed(format!(
                    "targets.agent: GET {url} is not the agent's limits ({error})"
                ))
            })?,
            Err(AdminError::Status { status, .. }) if status == StatusCode::NOT_FOUND => {
                return Ok(Some(format!(
                    "targets.agent ({agent}): does not say its limits (GET /_agent/limits: 404); the fault's                          lease and delay are checked by the agent when a run puts it"
                )));
            }
            Err(error) => return Err(unreachable("targets.agent", &error)),
        };
        let cap = |name: &str, text: &str| {
            agent::api::parse_duration(text).map_err(|error| {
                RunnerError::Testbed(format!("targets.agent: its limits' {name}: {error}"))
            })
        };
        let max_lease = cap("max_lease", &limits.max_lease)?;
        let max_hold = cap("max_hold", &limits.max_hold)?;
        let over =
            |field: &str, asked: std::time::Duration, name: &str, max: std::time::Duration| {
                RunnerError::Spec(format!(
                    "{field}: {} is over the agent's {name} of {} ({agent})",
                    humantime::format_duration(asked),
                    humantime::format_duration(max)
                ))
            };
        if spec.fault.lease > max_lease {
            return Err(over(
                "fault.lease",
                spec.fault.lease,
                "max_lease",
                max_lease,
            ));
        }
        for condition in spec.conditions() {
            if let crate::spec::ConditionFault::Delay { delay, jitter } = condition.fault {
                if delay > max_hold {
                    return Err(over("fault.delay", delay, "max_hold", max_hold));
                }
                if delay.saturating_add(jitter) > max_hold {
                    return Err(over(
                        "fault.jitter",
                        delay.saturating_add(jitter),
                        "max_hold (delay + jitter)",
                        max_hold,
                    ));
                }
            }
        }
        Ok(None)
    }

    /// Scrapes every `[[sources]]` Prometheus source of `spec` once (see the module docs); returns a line for each
    /// that answered 5xx. The error names the source as the spec does.
    pub async fn check_sources(&self, spec: &ExperimentSpec) -> Result<Vec<String>, RunnerError> {
        let client = crate::testbed::AdminClient::without_token();
        let mut lines = Vec::new();
        for (index, source) in spec.sources.iter().enumerate() {
            let SourceSpec::Prometheus(scrape) = source else {
                continue;
            };
            let mut attempt = 1;
            loop {
                match crate::observe::foreign::scrape(&client, &scrape.url).await {
                    Ok(_) => break,
                    Err(AdminError::Status { status, .. }) if status.is_server_error() => {
                        lines.push(format!(
                            "sources[{index}].url ({}): answers HTTP {status} now; a run counts it blind while it                              does not answer",
                            scrape.url
                        ));
                        break;
                    }
                    Err(error) if attempt >= SOURCE_ATTEMPTS => {
                        return Err(RunnerError::Testbed(format!(
                            "sources[{index}].url: does not answer ({error}; {SOURCE_ATTEMPTS} attempts {} apart)",
                            humantime::format_duration(SOURCE_RETRY_AFTER)
                        )));
                    }
                    Err(_) => {
                        attempt += 1;
                        tokio::time::sleep(SOURCE_RETRY_AFTER).await;
                    }
                }
            }
        }
        Ok(lines)
    }

    async fn check_targets(
        &self,
        offers_of: &(dyn Fn(&str) -> Offers + Sync),
    ) -> Result<Vec<String>, RunnerError> {
        let mut lines = Vec::new();
        for (name, url) in &self.testbed.services {
            let field = format!("targets.{name}");
            let offers = offers_of(name.as_str());
            if offers == Offers::default() {
                // A plain HTTP service: any answer will do.
                match self
                    .admin
                    .call(
                        Method::GET,
                        &format!("{url}/"),
                        Anonymous,
                        None,
                        Bytes::new(),
                    )
                    .await
                {
                    Ok(_) | Err(AdminError::Status { .. }) => {}
                    Err(error) => return Err(unreachable(&field, &error)),
                }
            } else {
                self.admin
                    .call(
                        Method::GET,
                        &format!("{url}/_healthz"),
                        Anonymous,
                        None,
                        Bytes::new(),
                    )
                    .await
                    .map_err(|error| unreachable(&field, &error))?;
                self.probe_offers(name, url, offers).await?;
            }
            let missing: Vec<&str> = Offers::NAMES
                .into_iter()
                .filter(|capability| !offers.has(capability))
                .collect();
            lines.push(format!(
                "{field} ({url}): offers {}; not offered: {}",
                list_or_none(&offers.offered()),
                list_or_none(&missing),
            ));
        }
        let agent = &self.testbed.agent;
        self.admin
            .call(
                Method::GET,
                &format!("{agent}/_agent/faults"),
                Anonymous,
                None,
                Bytes::new(),
            )
            .await
            .map_err(|error| unreachable("targets.agent", &error))?;
        self.expect_refusal(
            "targets.agent",
            Method::POST,
            &format!("{agent}/_agent/faults/{PREFLIGHT_FAULT_ID}/renew"),
            StatusCode::NOT_FOUND,
        )
        .await?;
        Ok(lines)
    }

    /// One probe per declared capability, none of which changes anything.
    async fn probe_offers(
        &self,
        name: &ServiceId,
        url: &str,
        offers: Offers,
    ) -> Result<(), RunnerError> {
        let field = format!("targets.{name}");
        let lacks = |capability: &str, error: String| {
            RunnerError::Testbed(format!(
                "{field}: declares `{capability}` but {error}; remove it from `offers` or fix the target"
            ))
        };
        if offers.breaker_config {
            self.expect_refusal(
                &field,
                Method::PUT,
                &format!("{url}/_admin/breakers/mode"),
                StatusCode::BAD_REQUEST,
            )
            .await?;
        }
        if offers.reset {
            // The route takes POST only: a GET is refused with 405 where it exists, 404 where it does not.
            match self
                .admin
                .call(
                    Method::GET,
                    &format!("{url}/_admin/reset"),
                    Anonymous,
                    None,
                    Bytes::new(),
                )
                .await
            {
                Err(AdminError::Status { status, .. })
                    if status == StatusCode::METHOD_NOT_ALLOWED => {}
                Err(error) => {
                    return Err(lacks(
                        "reset",
                        format!("POST /_admin/reset is not there ({error})"),
                    ));
                }
                Ok(_) => {
                    return Err(lacks(
                        "reset",
                        "GET /_admin/reset answered as if it were not a POST route".into(),
                    ));
                }
            }
        }
        for (capability, path, wanted) in [
            ("pool", "/_pool", offers.pool),
            ("cart-metrics", "/_admin/cart-stats", offers.cart_metrics),
        ] {
            if wanted {
                self.admin
                    .call(
                        Method::GET,
                        &format!("{url}{path}"),
                        Anonymous,
                        None,
                        Bytes::new(),
                    )
                    .await
                    .map_err(|error| lacks(capability, format!("GET {path} failed ({error})")))?;
            }
        }
        if offers.breaker_stream {
            let watch = self.observer.watch();
            watch.follow(&Target {
                label: name.clone(),
                url: url.to_owned(),
                follows: Follows {
                    transitions: true,
                    ..Follows::default()
                },
            });
            watch.breakers_connected(name).await.map_err(|error| {
                lacks(
                    "breaker-stream",
                    format!("/_breakers/stream does not open ({error})"),
                )
            })?;
        }
        Ok(())
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "nothing".to_owned()
    } else {
        names.join(", ")
    }
}

fn unreachable(field: &str, error: &AdminError) -> RunnerError {
    RunnerError::Testbed(format!("{field}: does not answer ({error})"))
}

impl Runner {
    /// A probe that a target must refuse with `expected`: an empty JSON object sent to `url`, wrong on purpose so
    /// that nothing changes. `401`/`403` means the token is not accepted, anything else that the target is not
    /// what the spec says.
    async fn expect_refusal(
        &self,
        field: &str,
        method: Method,
        url: &str,
        expected: StatusCode,
    ) -> Result<(), RunnerError> {
        let answered = self
            .admin
            .call(
                method,
                url,
                Credential::Token,
                Some("application/json"),
                Bytes::from_static(b"{}"),
            )
            .await;
        refusal_expected(field, answered, expected)
    }
}

/// Whether a probe's answer is the refusal `expected` (see [`Runner::expect_refusal`]).
fn refusal_expected(
    field: &str,
    answered: Result<Bytes, AdminError>,
    expected: StatusCode,
) -> Result<(), RunnerError> {
    match answered {
        Err(AdminError::Status { status, .. }) if status == expected => Ok(()),
        Err(AdminError::Status { status, url, .. })
            if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN =>
        {
            Err(RunnerError::Testbed(format!(
                "{field}: {url} refuses the token (HTTP {status}); check --token / TOLERANT_TOKEN"
            )))
        }
        Err(error) => Err(RunnerError::Testbed(format!(
            "{field}: unexpected answer to a preflight check ({error})"
        ))),
        Ok(_) => Err(RunnerError::Testbed(format!(
            "{field}: accepted a preflight request it should refuse with {expected}; is it a Tolerant service?"
        ))),
    }
}
