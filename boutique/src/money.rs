//! Money as Online Boutique carries it: a currency code, whole units and nanos (billionths of a unit).

use serde::{Deserialize, Serialize};

const NANOS_PER_UNIT: i128 = 1_000_000_000;

/// An amount of money. `units` and `nanos` have the same sign, `|nanos| < 1e9` (the google.type.Money rule).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Money {
    pub currency_code: String,
    pub units: i64,
    pub nanos: i32,
}

impl Money {
    /// Builds an amount from a currency code and a total in nanos.
    pub fn from_total_nanos(currency_code: impl Into<String>, total_nanos: i128) -> Self {
        let units = (total_nanos / NANOS_PER_UNIT) as i64;
        let nanos = (total_nanos % NANOS_PER_UNIT) as i32;
        Money {
            currency_code: currency_code.into(),
            units,
            nanos,
        }
    }

    /// Builds an amount from cents, e.g. `Money::from_cents("USD", 1999)` is $19.99.
    pub fn from_cents(currency_code: impl Into<String>, cents: i64) -> Self {
        Money::from_total_nanos(currency_code, i128::from(cents) * 10_000_000)
    }

    /// Zero in the given currency.
    pub fn zero(currency_code: impl Into<String>) -> Self {
        Money::from_total_nanos(currency_code, 0)
    }

    /// The amount in nanos.
    pub fn total_nanos(&self) -> i128 {
        i128::from(self.units) * NANOS_PER_UNIT + i128::from(self.nanos)
    }

    /// Whether `units` and `nanos` respect the sign and range rule.
    pub fn is_valid(&self) -> bool {
        let nanos_in_range = self.nanos.unsigned_abs() < 1_000_000_000;
        let same_sign =
            (self.units >= 0 && self.nanos >= 0) || (self.units <= 0 && self.nanos <= 0);
        nanos_in_range && same_sign
    }

    /// This amount times a whole quantity.
    pub fn times(&self, quantity: u32) -> Money {
        Money::from_total_nanos(
            self.currency_code.clone(),
            self.total_nanos() * i128::from(quantity),
        )
    }

    /// The sum of two amounts in the same currency; `None` when the currencies differ.
    pub fn checked_add(&self, other: &Money) -> Option<Money> {
        (self.currency_code == other.currency_code).then(|| {
            Money::from_total_nanos(
                self.currency_code.clone(),
                self.total_nanos() + other.total_nanos(),
            )
        })
    }

    /// Converts with a rate `to_per_from` (units of the target currency per unit of this one).
    pub fn converted(&self, to_code: &str, to_per_from: f64) -> Money {
        let converted = self.total_nanos() as f64 * to_per_from;
        Money::from_total_nanos(to_code, converted.round() as i128)
    }

    /// Human-readable with a symbol and two decimals, e.g. "$19.99".
    pub fn display(&self) -> String {
        let cents = (self.total_nanos() + 5_000_000).div_euclid(10_000_000);
        let sign = if cents < 0 { "-" } else { "" };
        let cents = cents.abs();
        format!(
            "{sign}{}{}.{:02}",
            currency_symbol(&self.currency_code),
            cents / 100,
            cents % 100
        )
    }
}

/// A short symbol for the currencies the shop shows; the code followed by a space otherwise.
pub fn currency_symbol(code: &str) -> String {
    match code {
        "USD" | "CAD" => "$".to_owned(),
        "EUR" => "€".to_owned(),
        "JPY" => "¥".to_owned(),
        "GBP" => "£".to_owned(),
        "TRY" => "₺".to_owned(),
        other => format!("{other} "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cents_round_trip_and_display() {
        let price = Money::from_cents("USD", 1999);
        assert_eq!(price.units, 19);
        assert_eq!(price.nanos, 990_000_000);
        assert_eq!(price.display(), "$19.99");
        assert_eq!(price.times(3).display(), "$59.97");
    }

    #[test]
    fn adding_different_currencies_is_refused() {
        let usd = Money::from_cents("USD", 100);
        let eur = Money::from_cents("EUR", 100);
        assert_eq!(usd.checked_add(&eur), None);
        assert_eq!(
            usd.checked_add(&usd).map(|m| m.display()),
            Some("$2.00".into())
        );
    }

    #[test]
    fn validity_follows_the_sign_rule() {
        assert!(Money::from_cents("USD", -150).is_valid());
        let mixed = Money {
            currency_code: "USD".into(),
            units: 1,
            nanos: -5,
        };
        assert!(!mixed.is_valid());
    }

    #[test]
    fn conversion_scales_by_the_rate() {
        let ten = Money::from_cents("EUR", 1000);
        assert_eq!(ten.converted("USD", 1.5).display(), "$15.00");
    }
}
