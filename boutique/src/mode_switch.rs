//! The body of `PUT /_admin/breakers/mode`: a mode for every breaker of the service, or for one of them
//! (`breaker`), the rest of each config kept. One type for the controller's admin client that sends it and the
//! service that reads it; errors name the field.

/// `{"mode": "shadow"}` (every breaker of the service) or `{"mode": "shadow", "breaker": "checkout->payment"}`
/// (that one only).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeSwitch {
    pub mode: breaker::Mode,
    /// The name of one breaker of the service; absent: every breaker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<String>,
}

/// Why a body is not a [`ModeSwitch`]; `Display` names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeSwitchError {
    #[error("body: not JSON ({0})")]
    NotJson(String),
    #[error(r#"body: expected a JSON object like {{"mode": "shadow"}}"#)]
    NotAnObject,
    #[error("{0}: unknown field (the fields are `mode` and `breaker`)")]
    UnknownField(String),
    #[error("mode: missing")]
    MissingMode,
    #[error(r#"mode: {0} is not one of "enforce", "shadow", "forced-open", "disabled""#)]
    UnknownMode(String),
    #[error("breaker: expected the name of one breaker of the service as a string, not {0}")]
    NotAName(String),
    /// A name the service has no breaker by (its breakers listed).
    #[error("breaker: no breaker `{name}` in {service} (its breakers: {known})")]
    UnknownBreaker {
        name: String,
        service: String,
        known: String,
    },
}

impl ModeSwitch {
    /// Every breaker of the service to `mode`.
    pub fn every(mode: breaker::Mode) -> ModeSwitch {
        ModeSwitch {
            mode,
            breaker: None,
        }
    }

    /// Reads a body; errors name the field.
    pub fn parse(body: &[u8]) -> Result<ModeSwitch, ModeSwitchError> {
        serde_json::from_slice(body).map_err(|_| ModeSwitch::why_refused(body))
    }

    /// The breaker of `registry` this switch names (`None`: every breaker); a name the service has no breaker
    /// by is refused naming `breaker` (a switch never creates a breaker).
    pub fn target(
        &self,
        registry: &breaker::Registry,
    ) -> Result<Option<std::sync::Arc<breaker::CircuitBreaker>>, ModeSwitchError> {
        let Some(name) = &self.breaker else {
            return Ok(None);
        };
        let breakers = registry.breakers();
        match breakers.iter().find(|breaker| breaker.name() == name) {
            Some(found) => Ok(Some(std::sync::Arc::clone(found))),
            None => Err(ModeSwitchError::UnknownBreaker {
                name: name.clone(),
                service: registry.service().to_owned(),
                known: match breakers.is_empty() {
                    true => "none yet".to_owned(),
                    false => (breakers.iter().map(|breaker| breaker.name()))
                        .collect::<Vec<_>>()
                        .join(", "),
                },
            }),
        }
    }

    /// Why `body` is not a mode switch, naming the field.
    fn why_refused(body: &[u8]) -> ModeSwitchError {
        let value: serde_json::Value = match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(err) => return ModeSwitchError::NotJson(err.to_string()),
        };
        let Some(object) = value.as_object() else {
            return ModeSwitchError::NotAnObject;
        };
        if let Some(unknown) = object
            .keys()
            .find(|key| !["mode", "breaker"].contains(&key.as_str()))
        {
            return ModeSwitchError::UnknownField(unknown.clone());
        }
        if let Some(name) = object
            .get("breaker")
            .filter(|name| !name.is_string() && !name.is_null())
        {
            return ModeSwitchError::NotAName(name.to_string());
        }
        match object.get("mode") {
            None => ModeSwitchError::MissingMode,
            Some(mode) => ModeSwitchError::UnknownMode(mode.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{ModeSwitch, ModeSwitchError};

    /// What the admin client sends for each mode is what the service reads back: one type on both sides.
    #[test]
    fn every_mode_switch_reads_back_as_sent() {
        for mode in breaker::Mode::ALL {
            for breaker in [None, Some("checkout->payment".to_owned())] {
                let switch = ModeSwitch { mode, breaker };
                let body = serde_json::to_vec(&switch).expect("serialises");
                assert_eq!(ModeSwitch::parse(&body), Ok(switch));
            }
        }
        assert_eq!(
            serde_json::to_string(&ModeSwitch::every(breaker::Mode::Shadow)).expect("serialises"),
            r#"{"mode":"shadow"}"#,
            "a switch of every breaker is the body it always was"
        );
        assert_eq!(
            ModeSwitch::parse(br#"{"mode":"forced-open"}"#).map(|switch| switch.mode),
            Ok(breaker::Mode::ForcedOpen)
        );
    }

    /// A body that is not a mode switch is refused naming the field.
    #[test]
    fn a_bad_mode_switch_is_refused_naming_the_field() {
        for (body, error) in [
            ("{}", "mode: missing".to_owned()),
            (
                r#"{"mode":"off"}"#,
                r#"mode: "off" is not one of "enforce", "shadow", "forced-open", "disabled""#
                    .to_owned(),
            ),
            (
                r#"{"mode":"shadow","lease":1}"#,
                "lease: unknown field (the fields are `mode` and `breaker`)".to_owned(),
            ),
            (
                r#"{"mode":"shadow","breaker":3}"#,
                "breaker: expected the name of one breaker of the service as a string, not 3"
                    .to_owned(),
            ),
            (
                "[]",
                r#"body: expected a JSON object like {"mode": "shadow"}"#.to_owned(),
            ),
        ] {
            let refused = ModeSwitch::parse(body.as_bytes()).unwrap_err();
            assert_eq!(refused.to_string(), error, "{body}");
        }
        assert!(matches!(
            ModeSwitch::parse(b"mode"),
            Err(ModeSwitchError::NotJson(_))
        ));
        assert!(
            ModeSwitch::parse(b"mode")
                .unwrap_err()
                .to_string()
                .starts_with("body: not JSON")
        );
    }

    /// A named breaker is found among the service's own; another name is refused naming `breaker` and
    /// listing the ones there are, and creates no breaker.
    #[test]
    fn a_switch_targets_one_existing_breaker_or_every_one() {
        let registry = breaker::Registry::new(
            "checkout",
            breaker::BreakerConfig::default(),
            Arc::new(breaker::SystemClock),
        );
        registry.get("checkout->payment");
        registry.get("checkout->shipping");
        let one = ModeSwitch {
            mode: breaker::Mode::Disabled,
            breaker: Some("checkout->shipping".into()),
        };
        let found = one.target(&registry).expect("known").expect("one breaker");
        assert_eq!(found.name(), "checkout->shipping");
        let every = ModeSwitch::every(breaker::Mode::Disabled);
        assert!(every.target(&registry).expect("every").is_none());
        let unknown = ModeSwitch {
            breaker: Some("checkout->nowhere".into()),
            ..one
        };
        assert_eq!(
            unknown
                .target(&registry)
                .map(|_| ())
                .unwrap_err()
                .to_string(),
            "breaker: no breaker `checkout->nowhere` in checkout \
             (its breakers: checkout->payment, checkout->shipping)"
        );
        assert_eq!(registry.breakers().len(), 2, "no breaker was created");
    }
}
