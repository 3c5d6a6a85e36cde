//! `[[sources]]`: where the states of breakers Tolerant did not write come from — a Prometheus exposition
//! scraped at an interval (with a preset for the exporter: Resilience4j via Micrometer, opossum-prometheus, or a
//! generic gauge), or pushes to `POST /api/breaker-events`.

use std::net::SocketAddr;
use std::ops::Range;
use std::time::Duration;

use breaker::State;
use serde::Deserialize;
use toml::Spanned;

use super::checker::Checker;
use super::error::SpecError;
use crate::sources::{StateMapping, foreign_state};

/// Bounds of a scrape interval (not scaled by `time_scale`: it is a property of the scraper).
pub const MIN_SCRAPE_INTERVAL: Duration = Duration::from_millis(50);
pub const MAX_SCRAPE_INTERVAL: Duration = Duration::from_secs(60);
/// Default scrape interval: four scrapes a second.
pub const DEFAULT_SCRAPE_INTERVAL: Duration = Duration::from_millis(250);
/// At most this many sources per spec.
pub const MAX_SOURCES: usize = 32;

/// One breaker source.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceSpec {
    Prometheus(ScrapeSpec),
    /// Pushed events; `listen` is where `tolerant run` takes them (the dashboard takes them on its own address).
    Push {
        listen: Option<SocketAddr>,
    },
}

/// A Prometheus exposition scraped during every run.
#[derive(Debug, Clone, PartialEq)]
pub struct ScrapeSpec {
    /// `http://host:port/path`.
    pub url: String,
    pub interval: Duration,
    /// What the events' `service` field says, a service name (default: the URL's `host-port`).
    pub service: String,
    pub mapping: StateMapping,
}

impl ScrapeSpec {
    /// The events' `source` field.
    pub fn source_name(&self) -> String {
        format!("prometheus:{}", self.url)
    }
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Prometheus,
    Push,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Preset {
    Resilience4j,
    Opossum,
    Gauge,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    kind: Spanned<Kind>,
    url: Option<Spanned<String>>,
    preset: Option<Spanned<Preset>>,
    interval: Option<Spanned<String>>,
    service: Option<Spanned<String>>,
    /// opossum-prometheus's `metricPrefix`.
    prefix: Option<Spanned<String>>,
    /// gauge: the metric, the label naming the breaker, and either a state label or a value per state.
    metric: Option<Spanned<String>>,
    label: Option<Spanned<String>>,
    state_label: Option<Spanned<String>>,
    values: Option<Spanned<std::collections::BTreeMap<String, f64>>>,
    listen: Option<Spanned<String>>,
    /// `listen` on every interface (`0.0.0.0`, `[::]`) only when this says so.
    listen_public: Option<Spanned<bool>>,
}

pub(super) fn sources(
    check: &Checker<'_>,
    raw: &Spanned<Vec<Spanned<RawSource>>>,
) -> Result<Vec<SourceSpec>, SpecError> {
    if raw.get_ref().len() > MAX_SOURCES {
        return Err(check.error(
            "sources",
            raw.span(),
            format!("at most {MAX_SOURCES} sources"),
        ));
    }
    let mut sources = Vec::with_capacity(raw.get_ref().len());
    let mut pushes = 0;
    for (i, entry) in raw.get_ref().iter().enumerate() {
        let field = |name: &str| format!("sources[{i}].{name}");
        let source = entry.get_ref();
        let only = |name: &str, value: Option<Range<usize>>, kinds: &str| match value {
            Some(span) => Err(check.error(&field(name), span, format!("only used by {kinds}"))),
            None => Ok(()),
        };
        match *source.kind.get_ref() {
            Kind::Push => {
                for (name, span) in [
                    ("url", source.url.as_ref().map(Spanned::span)),
                    ("preset", source.preset.as_ref().map(Spanned::span)),
                    ("interval", source.interval.as_ref().map(Spanned::span)),
                    ("service", source.service.as_ref().map(Spanned::span)),
                    ("prefix", source.prefix.as_ref().map(Spanned::span)),
                    ("metric", source.metric.as_ref().map(Spanned::span)),
                    ("label", source.label.as_ref().map(Spanned::span)),
                    (
                        "state_label",
                        source.state_label.as_ref().map(Spanned::span),
                    ),
                    ("values", source.values.as_ref().map(Spanned::span)),
                ] {
                    only(name, span, "kind = \"prometheus\"")?;
                }
                pushes += 1;
                if pushes > 1 {
                    return Err(check.error(
                        &field("kind"),
                        source.kind.span(),
                        "one push source is enough: every pushed event is taken",
                    ));
                }
                let listen = match &source.listen {
                    Some(listen) => {
                        let address =
                            listen.get_ref().trim().parse::<SocketAddr>().map_err(|_| {
                                check.error(
                                    &field("listen"),
                                    listen.span(),
                                    format!(
                                        "`{}` is not an address like \"127.0.0.1:9400\"",
                                        listen.get_ref()
                                    ),
                                )
                            })?;
                        let public = source.listen_public.as_ref().is_some_and(|p| *p.get_ref());
                        if address.ip().is_unspecified() && !public {
                            return Err(check.error(
                                &field("listen"),
                                listen.span(),
                                format!(
                                    "`{address}` takes pushes on every interface, with the token as the only guard; \
                                     write `listen_public = true` to mean it, or listen on one address (127.0.0.1:{})",
                                    address.port()
                                ),
                            ));
                        }
                        Some(address)
                    }
                    None => {
                        only(
                            "listen_public",
                            source.listen_public.as_ref().map(Spanned::span),
                            "a push source with `listen`",
                        )?;
                        None
                    }
                };
                sources.push(SourceSpec::Push { listen });
            }
            Kind::Prometheus => {
                for (name, span) in [
                    ("listen", source.listen.as_ref().map(Spanned::span)),
                    (
                        "listen_public",
                        source.listen_public.as_ref().map(Spanned::span),
                    ),
                ] {
                    only(name, span, "kind = \"push\"")?;
                }
                sources.push(SourceSpec::Prometheus(scrape(check, entry, &field)?));
            }
        }
    }
    Ok(sources)
}

fn scrape(
    check: &Checker<'_>,
    entry: &Spanned<RawSource>,
    field: &dyn Fn(&str) -> String,
) -> Result<ScrapeSpec, SpecError> {
    let source = entry.get_ref();
    let url = source
        .url
        .as_ref()
        .ok_or_else(|| check.error(&field("url"), entry.span(), "missing (the /metrics URL)"))?;
    let text = url.get_ref().trim();
    let authority = text
        .strip_prefix("http://")
        .map(|rest| rest.split('/').next().unwrap_or(""))
        .filter(|authority| !authority.is_empty())
        .ok_or_else(|| {
            check.error(
                &field("url"),
                url.span(),
                format!("`{text}` is not a URL like \"http://127.0.0.1:9000/metrics\""),
            )
        })?;
    let interval = match &source.interval {
        Some(interval) => {
            let value = check.duration(&field("interval"), interval)?;
            if !(MIN_SCRAPE_INTERVAL..=MAX_SCRAPE_INTERVAL).contains(&value) {
                return Err(check.error(
                    &field("interval"),
                    interval.span(),
                    format!(
                        "{} is not between {} and {}",
                        interval.get_ref(),
                        humantime::format_duration(MIN_SCRAPE_INTERVAL),
                        humantime::format_duration(MAX_SCRAPE_INTERVAL)
                    ),
                ));
            }
            value
        }
        None => DEFAULT_SCRAPE_INTERVAL,
    };
    let name = |value: &Option<Spanned<String>>, name: &str| -> Result<Option<String>, SpecError> {
        match value {
            Some(text) if text.get_ref().trim().is_empty() => {
                Err(check.error(&field(name), text.span(), "must not be empty"))
            }
            Some(text) => Ok(Some(text.get_ref().trim().to_owned())),
            None => Ok(None),
        }
    };
    // The one service-name rule; without `service`, the URL's host and port made into a name (`127.0.0.1-9001`).
    let service = match &source.service {
        Some(written) => check.service_id(&field("service"), written)?.into_string(),
        None => service_of_authority(authority),
    };
    let preset = source.preset.as_ref().ok_or_else(|| {
        check.error(
            &field("preset"),
            entry.span(),
            "missing: one of \"resilience4j\", \"opossum\", \"gauge\"",
        )
    })?;
    let gauge_only = [
        ("metric", source.metric.as_ref().map(Spanned::span)),
        ("label", source.label.as_ref().map(Spanned::span)),
        (
            "state_label",
            source.state_label.as_ref().map(Spanned::span),
        ),
        ("values", source.values.as_ref().map(Spanned::span)),
    ];
    let refuse_all = |names: &[(&str, Option<Range<usize>>)], by: &str| {
        for (name, span) in names {
            if let Some(span) = span {
                return Err(check.error(&field(name), span.clone(), format!("only used by {by}")));
            }
        }
        Ok(())
    };
    let mapping = match preset.get_ref() {
        Preset::Resilience4j => {
            refuse_all(&gauge_only, "preset = \"gauge\"")?;
            refuse_all(
                &[("prefix", source.prefix.as_ref().map(Spanned::span))],
                "preset = \"opossum\"",
            )?;
            StateMapping::resilience4j()
        }
        Preset::Opossum => {
            refuse_all(&gauge_only, "preset = \"gauge\"")?;
            StateMapping::opossum(&name(&source.prefix, "prefix")?.unwrap_or_default())
        }
        Preset::Gauge => {
            refuse_all(
                &[("prefix", source.prefix.as_ref().map(Spanned::span))],
                "preset = \"opossum\"",
            )?;
            let metric = name(&source.metric, "metric")?.ok_or_else(|| {
                check.error(
                    &field("metric"),
                    entry.span(),
                    "missing (the gauge's metric name)",
                )
            })?;
            let breaker_label = name(&source.label, "label")?.unwrap_or_else(|| "name".into());
            match (&source.state_label, &source.values) {
                (Some(_), Some(values)) => {
                    return Err(check.error(
                        &field("values"),
                        values.span(),
                        "give either `state_label` or `values`, not both",
                    ));
                }
                (Some(_), None) => StateMapping::StateLabel {
                    metric,
                    breaker_label,
                    state_label: name(&source.state_label, "state_label")?.unwrap_or_default(),
                },
                (None, values) => StateMapping::Value {
                    metric,
                    breaker_label,
                    values: match values {
                        Some(values) => state_values(check, values, field)?,
                        None => StateMapping::default_values(),
                    },
                },
            }
        }
    };
    Ok(ScrapeSpec {
        url: text.trim_end_matches('/').to_owned(),
        interval,
        service,
        mapping,
    })
}

/// A service name made of a URL's `host:port`: every character a name cannot hold becomes `-`, at most
/// [`crate::target::MAX_SERVICE_ID_BYTES`] kept.
fn service_of_authority(authority: &str) -> String {
    authority
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                true => c,
                false => '-',
            },
        )
        .take(crate::target::MAX_SERVICE_ID_BYTES)
        .collect()
}

fn state_values(
    check: &Checker<'_>,
    values: &Spanned<std::collections::BTreeMap<String, f64>>,
    field: &dyn Fn(&str) -> String,
) -> Result<Vec<(f64, State)>, SpecError> {
    let mut mapped: Vec<(f64, State)> = Vec::new();
    for (name, value) in values.get_ref() {
        let state = foreign_state(name).ok_or_else(|| {
            check.error(
                &field(&format!("values.{name}")),
                values.span(),
                "not a breaker state (closed, open, half_open)",
            )
        })?;
        if mapped.iter().any(|(v, _)| v == value) {
            return Err(check.error(
                &field(&format!("values.{name}")),
                values.span(),
                format!("{value} already codes another state"),
            ));
        }
        mapped.push((*value, state));
    }
    if mapped.is_empty() {
        return Err(check.error(&field("values"), values.span(), "must not be empty"));
    }
    Ok(mapped)
}
