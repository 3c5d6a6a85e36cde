//! The `[breaker]` table as read and its check: the modes compared, the services it applies to, and one breaker
//! config, valid both as written and after dividing by `time_scale`.

use serde::Deserialize;
use toml::Spanned;

use crate::spec::bounds::MAX_BREAKER_INSTANCES;
use crate::spec::checker::Checker;
use crate::spec::error::SpecError;
use crate::spec::model::{BreakerMode, BreakerSpec};
use crate::spec::targets::SERVICE_NAMES;
use crate::target::ServiceId;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBreaker {
    pub(super) modes: Spanned<Vec<Spanned<BreakerMode>>>,
    pub(super) services: Option<Spanned<Vec<Spanned<String>>>>,
    /// Replicas of the calling service, each with its own breaker (the predictions model that many).
    pub(super) instances: Option<Spanned<u32>>,
    pub(super) trip: Option<Spanned<breaker::RawTripConfig>>,
    pub(super) open: Option<Spanned<breaker::RawOpenConfig>>,
    pub(super) half_open: Option<Spanned<breaker::RawHalfOpenConfig>>,
    /// `[[breaker.configs]]`: named configs the conditions expand over (instead of `trip`, `open`, `half_open`).
    pub(super) configs: Option<Spanned<Vec<Spanned<RawNamedConfig>>>>,
}

/// One `[[breaker.configs]]` table: a name and a breaker config.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNamedConfig {
    name: Spanned<String>,
    trip: Option<breaker::RawTripConfig>,
    open: Option<breaker::RawOpenConfig>,
    half_open: Option<breaker::RawHalfOpenConfig>,
}

/// Most `[[breaker.configs]]` (and `[[fault.profiles]]`) levels.
pub(super) const MAX_NAMED_LEVELS: usize = 8;

/// A level's name: 1 to 64 letters, digits, `-` or `_`, each once.
pub(super) fn level_name(
    check: &Checker<'_>,
    field: &str,
    name: &Spanned<String>,
    taken: &[String],
) -> Result<String, SpecError> {
    let text = check.name(field, name)?;
    if taken.contains(&text) {
        return Err(check.error(field, name.span(), format!("`{text}` is listed twice")));
    }
    Ok(text)
}

/// `[[breaker.configs]]`: each config valid as written and after dividing by `time_scale`.
fn named_configs(
    check: &Checker<'_>,
    raw: &Spanned<Vec<Spanned<RawNamedConfig>>>,
    time_scale: f64,
) -> Result<Vec<crate::spec::NamedBreakerConfig>, SpecError> {
    if raw.get_ref().is_empty() || raw.get_ref().len() > MAX_NAMED_LEVELS {
        return Err(check.error(
            "breaker.configs",
            raw.span(),
            format!("must list 1 to {MAX_NAMED_LEVELS} configs"),
        ));
    }
    let mut configs: Vec<crate::spec::NamedBreakerConfig> = Vec::new();
    for (i, entry) in raw.get_ref().iter().enumerate() {
        let taken: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
        let name = level_name(
            check,
            &format!("breaker.configs[{i}].name"),
            &entry.get_ref().name,
            &taken,
        )?;
        let table = entry.get_ref();
        let config = breaker::RawBreakerConfig {
            mode: breaker::Mode::Enforce,
            trip: table.trip.clone().unwrap_or_default(),
            open: table.open.clone().unwrap_or_default(),
            half_open: table.half_open.clone().unwrap_or_default(),
        }
        .build()
        .and_then(|config| config.time_scaled(time_scale).map(|_| config))
        .map_err(|error| {
            check.error(
                &format!("breaker.configs[{i}].{}", error.field),
                entry.span(),
                error.message,
            )
        })?;
        configs.push(crate::spec::NamedBreakerConfig { name, config });
    }
    Ok(configs)
}

pub(super) fn breaker(
    check: &Checker<'_>,
    raw: &RawBreaker,
    time_scale: f64,
) -> Result<BreakerSpec, SpecError> {
    if raw.modes.get_ref().is_empty() {
        return Err(check.error("breaker.modes", raw.modes.span(), "must not be empty"));
    }
    let mut modes = Vec::new();
    for (i, mode) in raw.modes.get_ref().iter().enumerate() {
        if modes.contains(mode.get_ref()) {
            return Err(check.error(
                &format!("breaker.modes[{i}]"),
                mode.span(),
                format!("`{}` is listed twice", mode.get_ref().as_str()),
            ));
        }
        modes.push(*mode.get_ref());
    }
    let config = breaker::RawBreakerConfig {
        mode: breaker::Mode::Enforce,
        trip: raw
            .trip
            .as_ref()
            .map(|t| t.get_ref().clone())
            .unwrap_or_default(),
        open: raw
            .open
            .as_ref()
            .map(|o| o.get_ref().clone())
            .unwrap_or_default(),
        half_open: raw
            .half_open
            .as_ref()
            .map(|h| h.get_ref().clone())
            .unwrap_or_default(),
    };
    let section_span = |field: &str| {
        let section = match field.split('.').next() {
            Some("trip") => raw.trip.as_ref().map(Spanned::span),
            Some("open") => raw.open.as_ref().map(Spanned::span),
            Some("half_open") => raw.half_open.as_ref().map(Spanned::span),
            _ => None,
        };
        section.unwrap_or_else(|| raw.modes.span())
    };
    let config = config.build().map_err(|error| {
        check.error(
            &format!("breaker.{}", error.field),
            section_span(&error.field),
            error.message,
        )
    })?;
    if let Err(error) = config.time_scaled(time_scale) {
        return Err(check.error(
            &format!("breaker.{}", error.field),
            section_span(&error.field),
            format!(
                "after dividing by time_scale {time_scale}: {}",
                error.message
            ),
        ));
    }
    let services = match &raw.services {
        None => None,
        Some(services) => Some(breaker_services(check, services)?),
    };
    let configs = match &raw.configs {
        None => Vec::new(),
        Some(configs) => {
            if raw.trip.is_some() || raw.open.is_some() || raw.half_open.is_some() {
                return Err(check.error(
                    "breaker.configs",
                    configs.span(),
                    "give the config either in [breaker] (trip, open, half_open) or as [[breaker.configs]], not both",
                ));
            }
            named_configs(check, configs, time_scale)?
        }
    };
    let instances = match &raw.instances {
        Some(instances) if !(1..=MAX_BREAKER_INSTANCES).contains(instances.get_ref()) => {
            return Err(check.error(
                "breaker.instances",
                instances.span(),
                format!(
                    "{} is not between 1 and {MAX_BREAKER_INSTANCES}",
                    instances.get_ref()
                ),
            ));
        }
        Some(instances) => *instances.get_ref(),
        None => 1,
    };
    Ok(BreakerSpec {
        modes,
        services,
        instances,
        config,
        configs,
    })
}

/// `breaker.services`: boutique services, each once, at least one.
fn breaker_services(
    check: &Checker<'_>,
    raw: &Spanned<Vec<Spanned<String>>>,
) -> Result<Vec<ServiceId>, SpecError> {
    if raw.get_ref().is_empty() {
        return Err(check.error(
            "breaker.services",
            raw.span(),
            "must not be empty (leave it out for every service)",
        ));
    }
    let mut services: Vec<ServiceId> = Vec::new();
    for (i, service) in raw.get_ref().iter().enumerate() {
        let field = format!("breaker.services[{i}]");
        let name = check.service_id(&field, service)?;
        if !SERVICE_NAMES.contains(&name.as_str()) {
            return Err(check.error(
                &field,
                service.span(),
                format!(
                    "unknown service `{name}`; known: {}",
                    SERVICE_NAMES.join(", ")
                ),
            ));
        }
        if services.contains(&name) {
            return Err(check.error(&field, service.span(), format!("`{name}` is listed twice")));
        }
        services.push(name);
    }
    Ok(services)
}
