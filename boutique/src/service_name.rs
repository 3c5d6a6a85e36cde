//! The ten Online Boutique services by name, and who calls whom.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the ten services of the Online Boutique.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServiceName {
    Frontend,
    #[serde(rename = "productcatalog")]
    ProductCatalog,
    Cart,
    Currency,
    Payment,
    Shipping,
    Email,
    Checkout,
    Recommendation,
    Ad,
}

impl ServiceName {
    /// Every service, in a stable order (leaves last is not implied; the stack binds all before serving any).
    pub const ALL: [ServiceName; 10] = [
        ServiceName::Frontend,
        ServiceName::ProductCatalog,
        ServiceName::Cart,
        ServiceName::Currency,
        ServiceName::Payment,
        ServiceName::Shipping,
        ServiceName::Email,
        ServiceName::Checkout,
        ServiceName::Recommendation,
        ServiceName::Ad,
    ];

    /// The name used in URLs, breaker names and the CLI.
    pub const fn as_str(self) -> &'static str {
        match self {
            ServiceName::Frontend => "frontend",
            ServiceName::ProductCatalog => "productcatalog",
            ServiceName::Cart => "cart",
            ServiceName::Currency => "currency",
            ServiceName::Payment => "payment",
            ServiceName::Shipping => "shipping",
            ServiceName::Email => "email",
            ServiceName::Checkout => "checkout",
            ServiceName::Recommendation => "recommendation",
            ServiceName::Ad => "ad",
        }
    }

    /// The services this one calls (the Online Boutique call graph).
    pub fn dependencies(self) -> &'static [ServiceName] {
        use ServiceName::*;
        match self {
            Frontend => &[
                Currency,
                ProductCatalog,
                Cart,
                Recommendation,
                Shipping,
                Checkout,
                Ad,
            ],
            Checkout => &[Cart, ProductCatalog, Currency, Shipping, Payment, Email],
            Recommendation => &[ProductCatalog],
            ProductCatalog | Cart | Currency | Payment | Shipping | Email | Ad => &[],
        }
    }

    /// The breaker name for a call from `self` to `dependency`: `caller->dependency`.
    pub fn breaker_name(self, dependency: ServiceName) -> String {
        format!("{}->{}", self.as_str(), dependency.as_str())
    }
}

impl fmt::Display for ServiceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A string that names no service.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown service {0:?} (expected one of: frontend, productcatalog, cart, currency, payment, shipping, email, checkout, recommendation, ad)"
)]
pub struct UnknownService(pub String);

impl FromStr for ServiceName {
    type Err = UnknownService;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ServiceName::ALL
            .into_iter()
            .find(|name| name.as_str() == s)
            .ok_or_else(|| UnknownService(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_display_and_from_str() {
        for name in ServiceName::ALL {
            assert_eq!(name.to_string().parse::<ServiceName>(), Ok(name));
        }
        assert!("front-end".parse::<ServiceName>().is_err());
    }

    #[test]
    fn breaker_names_follow_the_caller_arrow_dependency_contract() {
        assert_eq!(
            ServiceName::Checkout.breaker_name(ServiceName::Payment),
            "checkout->payment"
        );
    }

    #[test]
    fn serde_uses_the_same_names_as_display() {
        let json = serde_json::to_string(&ServiceName::ProductCatalog).unwrap();
        assert_eq!(json, "\"productcatalog\"");
    }
}
