//! `[targets]`: a testbed of your own. A target written as a URL string is a Tolerant service (it offers what
//! every boutique service offers); a target written as a table says what it offers, so any HTTP service can be
//! one: `shop = { url = "http://127.0.0.1:9000", offers = [] }`.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::checker::Checker;
use super::error::SpecError;
use crate::target::ServiceId;

/// The services of the boutique testbed a fault or a target may name: `boutique::ServiceName`'s, in its order.
pub const SERVICE_NAMES: [&str; boutique::ServiceName::ALL.len()] = {
    let mut names = [""; boutique::ServiceName::ALL.len()];
    let mut at = 0;
    while at < names.len() {
        names[at] = boutique::ServiceName::ALL[at].as_str();
        at += 1;
    }
    names
};

/// Extra target keys besides the services: the fault agent's control API.
pub const AGENT_TARGET: &str = "agent";

/// What a target offers Tolerant beyond answering HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offers {
    /// `POST /_admin/reset` clears its state between runs.
    pub reset: bool,
    /// `PUT /_admin/breakers?lease=…` takes a breaker config (and `/_admin/breakers/mode` a mode), held while
    /// `POST /_admin/breakers/renew` comes within the lease; `DELETE /_admin/breakers` restores the startup one.
    pub breaker_config: bool,
    /// `/_breakers/stream` sends its breakers' transitions.
    pub breaker_stream: bool,
    /// `GET /_pool` answers its worker pool's occupancy.
    pub pool: bool,
    /// `GET /_admin/cart-stats` answers cart sizes.
    pub cart_metrics: bool,
}

impl Offers {
    /// The spelling in `offers = [...]`, in the order reports list them.
    pub const NAMES: [&'static str; 5] = [
        "reset",
        "breaker-config",
        "breaker-stream",
        "pool",
        "cart-metrics",
    ];

    /// What a Tolerant (boutique) service offers: everything, cart sizes only in Cart.
    pub fn tolerant_service(name: &str) -> Offers {
        Offers {
            reset: true,
            breaker_config: true,
            breaker_stream: true,
            pool: true,
            cart_metrics: name == "cart",
        }
    }

    /// Whether the capability named `name` (one of [`Offers::NAMES`]) is offered.
    pub fn has(&self, name: &str) -> bool {
        match name {
            "reset" => self.reset,
            "breaker-config" => self.breaker_config,
            "breaker-stream" => self.breaker_stream,
            "pool" => self.pool,
            "cart-metrics" => self.cart_metrics,
            _ => false,
        }
    }

    fn set(&mut self, name: &str) -> bool {
        let slot = match name {
            "reset" => &mut self.reset,
            "breaker-config" => &mut self.breaker_config,
            "breaker-stream" => &mut self.breaker_stream,
            "pool" => &mut self.pool,
            "cart-metrics" => &mut self.cart_metrics,
            _ => return false,
        };
        *slot = true;
        true
    }

    /// The names offered, in [`Offers::NAMES`] order.
    pub fn offered(&self) -> Vec<&'static str> {
        Offers::NAMES.into_iter().filter(|n| self.has(n)).collect()
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawTarget {
    Url(String),
    Table(RawTargetTable),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTargetTable {
    url: String,
    #[serde(default)]
    offers: Vec<String>,
}

/// Longest target name.
pub const MAX_TARGET_NAME: usize = crate::target::MAX_SERVICE_ID_BYTES;
/// At most this many targets.
pub const MAX_TARGETS: usize = 64;

/// Base URLs and offers by target name.
pub(super) type Targets = (BTreeMap<ServiceId, String>, BTreeMap<ServiceId, Offers>);

pub(super) fn targets(
    check: &Checker<'_>,
    raw: &BTreeMap<Spanned<String>, Spanned<RawTarget>>,
) -> Result<Targets, SpecError> {
    let mut urls = BTreeMap::new();
    let mut offers = BTreeMap::new();
    for (key, value) in raw {
        let name = key.get_ref().as_str();
        let field = format!("targets.{name}");
        let id = check.service_id(&field, key)?;
        if urls.len() >= MAX_TARGETS {
            return Err(check.error(&field, key.span(), format!("at most {MAX_TARGETS} targets")));
        }
        let (url, offered) = match value.get_ref() {
            RawTarget::Url(url) => {
                if name != AGENT_TARGET && !SERVICE_NAMES.contains(&name) {
                    return Err(check.error(
                        &field,
                        key.span(),
                        format!(
                            "`{name}` is not a Tolerant service ({}, {AGENT_TARGET}); for a service of your own write \
                             {name} = {{ url = \"{url}\", offers = [] }}",
                            SERVICE_NAMES.join(", ")
                        ),
                    ));
                }
                (url.as_str(), Offers::tolerant_service(name))
            }
            RawTarget::Table(table) => {
                let mut offered = Offers::default();
                for (i, capability) in table.offers.iter().enumerate() {
                    if !offered.set(capability) {
                        return Err(check.error(
                            &format!("{field}.offers[{i}]"),
                            value.span(),
                            format!(
                                "`{capability}` is not a capability; known: {}",
                                Offers::NAMES.join(", ")
                            ),
                        ));
                    }
                }
                (table.url.as_str(), offered)
            }
        };
        let url = url.trim_end_matches('/');
        let valid = url
            .strip_prefix("http://")
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('/'));
        if !valid {
            return Err(check.error(
                &field,
                value.span(),
                format!("`{url}` is not a base URL like \"http://127.0.0.1:8080\""),
            ));
        }
        if id != AGENT_TARGET {
            offers.insert(id.clone(), offered);
        }
        urls.insert(id, url.to_owned());
    }
    Ok((urls, offers))
}
