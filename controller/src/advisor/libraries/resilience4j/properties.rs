//! Reading Resilience4j's Spring properties: the `resilience4j.circuitbreaker` section, keys normalised from
//! camelCase or kebab-case, an instance merged over `baseConfig` or `configs.default`.

use serde_json::{Map, Value};

use super::super::model::LibraryError;

/// Keys that do not change when the breaker trips or recovers: kept for export.
pub(super) const KEPT: [&str; 6] = [
    "registerhealthindicator",
    "allowhealthindicatortofail",
    "eventconsumerbuffersize",
    "writablestacktraceenabled",
    "ignoreclassbindingexceptions",
    "baseconfig",
];
/// Keys of which outcomes count: Tolerant's classifier decides that.
pub(super) const CLASSIFYING: [&str; 5] = [
    "recordexceptions",
    "ignoreexceptions",
    "recordfailurepredicate",
    "ignoreexceptionpredicate",
    "recordresultpredicate",
];

/// The spelling Resilience4j's docs use for a normalised key.
pub(super) fn spelled(key: &str) -> &str {
    const NAMES: [&str; 26] = [
        "slidingWindowType",
        "slidingWindowSize",
        "minimumNumberOfCalls",
        "failureRateThreshold",
        "waitDurationInOpenState",
        "permittedNumberOfCallsInHalfOpenState",
        "slowCallRateThreshold",
        "slowCallDurationThreshold",
        "enableExponentialBackoff",
        "exponentialBackoffMultiplier",
        "exponentialMaxWaitDurationInOpenState",
        "enableRandomizedWait",
        "randomizedWaitFactor",
        "automaticTransitionFromOpenToHalfOpenEnabled",
        "maxWaitDurationInHalfOpenState",
        "initialState",
        "registerHealthIndicator",
        "allowHealthIndicatorToFail",
        "eventConsumerBufferSize",
        "writableStackTraceEnabled",
        "ignoreClassBindingExceptions",
        "baseConfig",
        "recordExceptions",
        "ignoreExceptions",
        "recordFailurePredicate",
        "ignoreExceptionPredicate",
    ];
    NAMES
        .iter()
        .find(|n| n.to_ascii_lowercase() == key)
        .copied()
        .unwrap_or(match key {
            "recordresultpredicate" => "recordResultPredicate",
            _ => key,
        })
}

pub(super) fn normalise(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .collect::<String>()
        .to_ascii_lowercase()
}

/// The value as text (numbers, booleans, strings; lists joined by commas).
pub(super) fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// `resilience4j.circuitbreaker` of the document (as a dotted key or nested).
pub(super) fn circuitbreaker(document: &Value) -> Option<&Map<String, Value>> {
    let top = document.as_object()?;
    if let Some(Value::Object(section)) = top.get("resilience4j.circuitbreaker") {
        return Some(section);
    }
    top.get("resilience4j")?
        .as_object()?
        .get("circuitbreaker")?
        .as_object()
}

type Properties = Vec<(String, Value)>;

pub(super) fn properties(field: &str, value: &Value) -> Result<Properties, LibraryError> {
    let map = value
        .as_object()
        .ok_or_else(|| LibraryError::new(field, "must be a table of settings"))?;
    Ok(map.iter().map(|(k, v)| (normalise(k), v.clone())).collect())
}

/// The instance's properties merged as Resilience4j merges them, with its name and the path they came from.
pub(super) fn resolve(
    section: &Map<String, Value>,
    instance: Option<&str>,
) -> Result<(String, String, Properties), LibraryError> {
    let prefix = "resilience4j.circuitbreaker";
    let instances = section
        .get("instances")
        .or_else(|| section.get("backends"))
        .and_then(Value::as_object);
    let configs = section.get("configs").and_then(Value::as_object);
    let (name, path, mut own) = match (instances, instance) {
        (Some(instances), Some(wanted)) => {
            let value = instances.get(wanted).ok_or_else(|| {
                LibraryError::new(
                    format!("{prefix}.instances"),
                    format!(
                        "no instance `{wanted}` (there are {})",
                        instances.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
            let path = format!("{prefix}.instances.{wanted}");
            (wanted.to_owned(), path.clone(), properties(&path, value)?)
        }
        (Some(instances), None) if instances.len() == 1 => {
            let (name, value) = instances.iter().next().expect("one instance");
            let path = format!("{prefix}.instances.{name}");
            (name.clone(), path.clone(), properties(&path, value)?)
        }
        (Some(instances), None) if !instances.is_empty() => {
            return Err(LibraryError::new(
                format!("{prefix}.instances"),
                format!(
                    "{} instances ({}): name one with --instance",
                    instances.len(),
                    instances.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        _ => match configs.and_then(|c| c.get("default")) {
            Some(default) => {
                let path = format!("{prefix}.configs.default");
                (
                    "default".to_owned(),
                    path.clone(),
                    properties(&path, default)?,
                )
            }
            None => {
                return Err(LibraryError::new(
                    prefix,
                    "has neither instances nor configs.default",
                ));
            }
        },
    };
    let base_name = own
        .iter()
        .find(|(k, _)| k == "baseconfig")
        .map(|(_, v)| scalar(v));
    let base = match &base_name {
        Some(base) => Some(configs.and_then(|c| c.get(base.as_str())).ok_or_else(|| {
            LibraryError::new(
                format!("{path}.baseConfig"),
                format!("no config `{base}` in configs"),
            )
        })?),
        None if path.ends_with(".configs.default") => None,
        None => configs.and_then(|c| c.get("default")),
    };
    if let Some(base) = base {
        for (key, value) in properties(&format!("{prefix}.configs"), base)? {
            if !own.iter().any(|(k, _)| *k == key) {
                own.push((key, value));
            }
        }
    }
    Ok((name, path, own))
}
