//! [`ServiceId`]: the name of a service Tolerant talks to — a boutique service, a `[targets]` entry of one's own,
//! a `TOLERANT_TARGETS` name or a compose replica's label (`checkout#2`) — checked once, where it is made.
//! On the wire, in the store and in spec files it is the plain string.

use std::borrow::Borrow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Longest name, the replica suffix `#N` aside.
pub const MAX_SERVICE_ID_BYTES: usize = 64;

/// A service's name: 1 to [`MAX_SERVICE_ID_BYTES`] of `A-Z a-z 0-9 . _ -`, then optionally a replica suffix
/// `#N` (`N` from 2: the first replica is the plain name). Serialised as that string.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServiceId(String);

/// Why a string is not a [`ServiceId`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceIdError {
    #[error("a service name must not be empty")]
    Empty,
    #[error("service name `{name}…` is {bytes} bytes long; at most {MAX_SERVICE_ID_BYTES}")]
    TooLong { name: String, bytes: usize },
    #[error(
        "service name `{name}` has `{character}`; a name is made of A-Z, a-z, 0-9, `.`, `_` and `-`"
    )]
    BadCharacter { name: String, character: char },
    #[error(
        "replica suffix `#{suffix}` of `{name}` is not a replica number from 2 (write `{base}#2`, `{base}#3`, …)"
    )]
    BadReplica {
        name: String,
        base: String,
        suffix: String,
    },
}

impl ServiceId {
    /// Checks `name` (see [`ServiceId`]).
    pub fn new(name: impl Into<String>) -> Result<Self, ServiceIdError> {
        let name = name.into();
        let (base, suffix) = match name.split_once('#') {
            Some((base, suffix)) => (base, Some(suffix)),
            None => (name.as_str(), None),
        };
        check_base(base)?;
        if let Some(suffix) = suffix {
            let number = suffix
                .bytes()
                .all(|byte| byte.is_ascii_digit())
                .then(|| suffix.parse::<u32>().ok())
                .flatten();
            if number.is_none_or(|number| number < 2) {
                return Err(ServiceIdError::BadReplica {
                    base: base.to_owned(),
                    suffix: suffix.to_owned(),
                    name: name.clone(),
                });
            }
        }
        Ok(ServiceId(name))
    }

    /// The label of replica `number` of this service: the plain name for the first, `checkout#2` for the second
    /// (a replica's label gives its service's).
    pub fn replica(&self, number: u32) -> ServiceId {
        ServiceId(replica_label(self.service(), number))
    }

    /// The service this names, the replica suffix left off: `checkout` for `checkout#2` and for `checkout`.
    pub fn service(&self) -> &str {
        split_replica(&self.0).map_or(self.0.as_str(), |(service, _)| service)
    }

    /// Which replica this names: 2 for `checkout#2`, 1 for a plain name.
    pub fn replica_number(&self) -> u32 {
        split_replica(&self.0).map_or(1, |(_, number)| number)
    }

    /// Whether this labels a further replica of `service` (`checkout#2` of `checkout`; not `checkout` itself, not
    /// another service's replica): the label that replica's transitions are stored and shown under.
    pub fn is_replica_of(&self, service: &str) -> bool {
        self.is_replica() && self.service() == service
    }

    /// Whether this is a further replica's label (`checkout#2`), not a plain name.
    pub fn is_replica(&self) -> bool {
        self.0.contains('#')
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// How replica `number` of `service` is labelled: `checkout` for the first, `checkout#2` for the second. The one
/// rule for replica labels: [`ServiceId::replica`], the compose discovery and the dashboard's containers use it.
pub fn replica_label(service: &str, number: u32) -> String {
    if number <= 1 {
        service.to_owned()
    } else {
        format!("{service}#{number}")
    }
}

/// Reads a [`replica_label`] back: `checkout#2` is replica 2 of `checkout`. `None` for a plain name or anything
/// not `NAME#DIGITS` (`checkout#`, `checkout#2x`).
pub fn split_replica(label: &str) -> Option<(&str, u32)> {
    let (service, number) = label.split_once('#')?;
    if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    Some((service, number.parse().ok()?))
}

fn check_base(base: &str) -> Result<(), ServiceIdError> {
    if base.is_empty() {
        return Err(ServiceIdError::Empty);
    }
    if base.len() > MAX_SERVICE_ID_BYTES {
        let mut cut = MAX_SERVICE_ID_BYTES.min(24);
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        return Err(ServiceIdError::TooLong {
            name: base[..cut].to_owned(),
            bytes: base.len(),
        });
    }
    if let Some(character) = base
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(ServiceIdError::BadCharacter {
            name: base.to_owned(),
            character,
        });
    }
    Ok(())
}

impl From<boutique::ServiceName> for ServiceId {
    fn from(service: boutique::ServiceName) -> Self {
        ServiceId(service.as_str().to_owned())
    }
}

impl TryFrom<String> for ServiceId {
    type Error = ServiceIdError;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        ServiceId::new(name)
    }
}

impl FromStr for ServiceId {
    type Err = ServiceIdError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        ServiceId::new(name)
    }
}

impl From<ServiceId> for String {
    fn from(id: ServiceId) -> Self {
        id.0
    }
}

impl fmt::Display for ServiceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl AsRef<str> for ServiceId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ServiceId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for ServiceId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ServiceId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<boutique::ServiceName> for ServiceId {
    fn eq(&self, other: &boutique::ServiceName) -> bool {
        self.0 == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_and_replica_labels_are_accepted() {
        for name in [
            "checkout",
            "my-shop_2.api",
            "Cart",
            "checkout#2",
            "checkout#12",
        ] {
            assert_eq!(ServiceId::new(name).unwrap().as_str(), name);
        }
    }

    #[test]
    fn serde_is_the_plain_string_both_ways() {
        let id = ServiceId::new("checkout#2").unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"checkout#2\"");
        assert_eq!(serde_json::from_str::<ServiceId>(&json).unwrap(), id);
        let pair: (ServiceId, String) = serde_json::from_str(r#"["cart","http://x"]"#).unwrap();
        assert_eq!(pair.0, "cart");
    }

    #[test]
    fn deserialising_a_bad_name_says_what_is_wrong() {
        let error = serde_json::from_str::<ServiceId>("\"shop cart\"").unwrap_err();
        assert!(error.to_string().contains("has ` `"), "{error}");
    }

    #[test]
    fn each_refusal_names_what_is_wrong() {
        assert_eq!(ServiceId::new(""), Err(ServiceIdError::Empty));
        assert_eq!(ServiceId::new("#2"), Err(ServiceIdError::Empty));
        let long = "a".repeat(MAX_SERVICE_ID_BYTES + 1);
        let error = ServiceId::new(long.as_str()).unwrap_err();
        assert!(
            matches!(error, ServiceIdError::TooLong { bytes: 65, .. }),
            "{error}"
        );
        assert!(error.to_string().contains("at most 64"), "{error}");
        assert!(ServiceId::new("a".repeat(MAX_SERVICE_ID_BYTES)).is_ok());
        assert_eq!(
            ServiceId::new("shop/cart"),
            Err(ServiceIdError::BadCharacter {
                name: "shop/cart".into(),
                character: '/'
            })
        );
        assert!(
            ServiceId::new("käse")
                .unwrap_err()
                .to_string()
                .contains("`ä`")
        );
        for bad in [
            "checkout#",
            "checkout#x",
            "checkout#1",
            "checkout#0",
            "checkout#2#3",
            "c#99999999999",
        ] {
            let error = ServiceId::new(bad).unwrap_err();
            assert!(
                matches!(error, ServiceIdError::BadReplica { .. }),
                "{bad}: {error}"
            );
            assert!(error.to_string().contains("replica suffix"), "{error}");
        }
    }

    #[test]
    fn replicas_are_labelled_and_read_back() {
        let checkout = ServiceId::from(boutique::ServiceName::Checkout);
        assert_eq!(checkout.replica(1), "checkout");
        let second = checkout.replica(2);
        assert_eq!(second, "checkout#2");
        assert_eq!(second.service(), "checkout");
        assert_eq!(second.replica_number(), 2);
        assert!(second.is_replica());
        assert_eq!(second.replica(3), "checkout#3");
        assert_eq!(checkout.replica_number(), 1);
        assert!(!checkout.is_replica());
        assert_eq!(ServiceId::new(second.to_string()), Ok(second));
    }

    #[test]
    fn a_label_that_is_not_name_hash_digits_is_no_replica() {
        assert_eq!(split_replica("checkout#2"), Some(("checkout", 2)));
        assert_eq!(split_replica("checkout#10"), Some(("checkout", 10)));
        for label in [
            "checkout",
            "checkout#",
            "checkout#2x",
            "checkout#-2",
            "checkout#99999999999",
        ] {
            assert_eq!(split_replica(label), None, "{label}");
        }
        assert_eq!(replica_label("checkout", 1), "checkout");
        assert_eq!(replica_label("checkout", 0), "checkout");
    }

    #[test]
    fn every_boutique_service_is_a_service_id() {
        for service in boutique::ServiceName::ALL {
            assert_eq!(
                ServiceId::new(service.as_str()),
                Ok(ServiceId::from(service))
            );
        }
    }
}
