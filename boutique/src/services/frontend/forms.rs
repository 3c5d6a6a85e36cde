//! The frontend's forms and their validation, mirroring Online Boutique's validator: any invalid field
//! makes the request a 422, and the message names every invalid field.

use std::collections::HashMap;

use crate::data;
use crate::services::payment::luhn_valid;
use crate::wire::{Address, CreditCardInfo};

/// A form that failed validation; the message names the fields.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid form input: {}", problems.join("; "))]
pub struct InvalidForm {
    pub problems: Vec<String>,
}

/// A form the frontend reads from a post's fields.
pub trait PostedForm: Sized {
    /// The form, or every field that is invalid.
    fn parse(fields: &HashMap<String, String>) -> Result<Self, InvalidForm>;
}

/// Collects field problems while reading a form.
struct FieldReader<'a> {
    fields: &'a HashMap<String, String>,
    problems: Vec<String>,
}

impl<'a> FieldReader<'a> {
    fn new(fields: &'a HashMap<String, String>) -> Self {
        FieldReader {
            fields,
            problems: Vec::new(),
        }
    }

    fn text(&mut self, name: &str, max_len: usize) -> String {
        let value = self.fields.get(name).map(|v| v.trim()).unwrap_or("");
        if value.is_empty() {
            self.problems.push(format!("{name}: required"));
        } else if value.chars().count() > max_len {
            self.problems
                .push(format!("{name}: longer than {max_len} characters"));
        }
        value.to_owned()
    }

    fn integer(&mut self, name: &str, range: std::ops::RangeInclusive<i64>) -> i64 {
        let raw = self.fields.get(name).map(|v| v.trim()).unwrap_or("");
        if raw.is_empty() {
            self.problems.push(format!("{name}: required"));
            return *range.start();
        }
        match raw.parse::<i64>() {
            Ok(value) if range.contains(&value) => value,
            Ok(_) => {
                self.problems.push(format!(
                    "{name}: must be between {} and {}",
                    range.start(),
                    range.end()
                ));
                *range.start()
            }
            Err(_) => {
                self.problems.push(format!("{name}: not a whole number"));
                *range.start()
            }
        }
    }

    fn finish<T>(self, value: T) -> Result<T, InvalidForm> {
        if self.problems.is_empty() {
            Ok(value)
        } else {
            Err(InvalidForm {
                problems: self.problems,
            })
        }
    }
}

/// `POST /cart`: `product_id`, `quantity` (1–10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddToCartForm {
    pub product_id: String,
    pub quantity: u32,
}

impl PostedForm for AddToCartForm {
    fn parse(fields: &HashMap<String, String>) -> Result<Self, InvalidForm> {
        let mut reader = FieldReader::new(fields);
        let quantity = reader.integer("quantity", 1..=10) as u32;
        let product_id = reader.text("product_id", 64);
        if !product_id.is_empty() && !product_id.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            reader
                .problems
                .push("product_id: must be letters and digits only".into());
        }
        reader.finish(AddToCartForm {
            product_id,
            quantity,
        })
    }
}

/// `POST /setCurrency`: `currency_code`, one the shop supports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetCurrencyForm {
    pub currency_code: String,
}

impl PostedForm for SetCurrencyForm {
    fn parse(fields: &HashMap<String, String>) -> Result<Self, InvalidForm> {
        let mut reader = FieldReader::new(fields);
        let currency_code = reader.text("currency_code", 3);
        if !currency_code.is_empty() && !data::is_supported_currency(&currency_code) {
            reader.problems.push(format!(
                "currency_code: unsupported currency {currency_code:?}"
            ));
        }
        reader.finish(SetCurrencyForm { currency_code })
    }
}

/// `POST /cart/checkout`: address, e-mail and card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckoutForm {
    pub email: String,
    pub address: Address,
    pub credit_card: CreditCardInfo,
}

/// A card number as the `credit_card` validator accepts it: digit groups separated by single spaces or
/// single dashes (the cart page's default `4432-8015-6152-0454`, as Payment accepts it), each group at least
/// 3 digits, 12–19 digits in all, passing Luhn.
fn card_number_valid(number: &str) -> bool {
    let groups: Vec<&str> = number.split([' ', '-']).collect();
    if groups.iter().any(|group| group.len() < 3) {
        return false;
    }
    let digits: Option<Vec<u8>> = groups
        .concat()
        .chars()
        .map(|c| c.to_digit(10).map(|d| d as u8))
        .collect();
    digits.is_some_and(|digits| (12..=19).contains(&digits.len()) && luhn_valid(&digits))
}

/// A plain `local@domain.tld` check.
fn email_valid(email: &str) -> bool {
    match email.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.starts_with('.')
                && domain.contains('.')
                && !domain.ends_with('.')
                && !email.contains(char::is_whitespace)
        }
        None => false,
    }
}

impl PostedForm for CheckoutForm {
    fn parse(fields: &HashMap<String, String>) -> Result<Self, InvalidForm> {
        let mut reader = FieldReader::new(fields);
        let email = reader.text("email", 320);
        if !email.is_empty() && !email_valid(&email) {
            reader.problems.push("email: not an e-mail address".into());
        }
        let street_address = reader.text("street_address", 512);
        let zip_code = reader.integer("zip_code", 0..=i64::from(u32::MAX));
        let city = reader.text("city", 128);
        let state = reader.text("state", 128);
        let country = reader.text("country", 128);
        let credit_card_number = reader.text("credit_card_number", 32);
        if !credit_card_number.is_empty() && !card_number_valid(&credit_card_number) {
            reader
                .problems
                .push("credit_card_number: not a valid card number".into());
        }
        let month = reader.integer("credit_card_expiration_month", 1..=12) as u32;
        let year = reader.integer("credit_card_expiration_year", 1..=9999) as i32;
        let cvv = reader.integer("credit_card_cvv", 1..=9999) as u32;
        reader.finish(CheckoutForm {
            email,
            address: Address {
                street_address,
                city,
                state,
                country,
                zip_code,
            },
            credit_card: CreditCardInfo {
                credit_card_number,
                credit_card_cvv: cvv,
                credit_card_expiration_year: year,
                credit_card_expiration_month: month,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn checkout_fields() -> Vec<(&'static str, &'static str)> {
        vec![
            ("email", "someone@example.com"),
            ("street_address", "1600 Amphitheatre Parkway"),
            ("zip_code", "04043"),
            ("city", "Mountain View"),
            ("state", "CA"),
            ("country", "United States"),
            ("credit_card_number", "4432801561520454"),
            ("credit_card_expiration_month", "1"),
            ("credit_card_expiration_year", "2039"),
            ("credit_card_cvv", "672"),
        ]
    }

    #[test]
    fn add_to_cart_quantity_bounds() {
        assert!(AddToCartForm::parse(&fields(&[("product_id", "X"), ("quantity", "10")])).is_ok());
        let err =
            AddToCartForm::parse(&fields(&[("product_id", "X"), ("quantity", "11")])).unwrap_err();
        assert!(err.to_string().contains("quantity"), "{err}");
        let err = AddToCartForm::parse(&fields(&[("product_id", "../x"), ("quantity", "1")]))
            .unwrap_err();
        assert!(err.to_string().contains("product_id"), "{err}");
        let err = AddToCartForm::parse(&fields(&[("quantity", "abc")])).unwrap_err();
        assert_eq!(err.problems.len(), 2, "{err}");
    }

    #[test]
    fn checkout_accepts_the_load_generator_form() {
        let form = CheckoutForm::parse(&fields(&checkout_fields())).unwrap();
        assert_eq!(form.address.zip_code, 4043);
        assert_eq!(form.credit_card.credit_card_cvv, 672);
    }

    #[test]
    fn checkout_names_each_invalid_field() {
        let mut pairs = checkout_fields();
        pairs.retain(|(k, _)| *k != "city");
        let mut map = fields(&pairs);
        map.insert("credit_card_number".into(), "4432801561520455".into());
        map.insert("credit_card_expiration_month".into(), "13".into());
        let err = CheckoutForm::parse(&map).unwrap_err().to_string();
        assert!(err.contains("city: required"), "{err}");
        assert!(err.contains("credit_card_number"), "{err}");
        assert!(err.contains("credit_card_expiration_month"), "{err}");
    }

    #[test]
    fn card_numbers_like_the_credit_card_validator() {
        assert!(card_number_valid("4432 8015 6152 0454"));
        assert!(card_number_valid("4432-8015-6152-0454"));
        assert!(!card_number_valid("4432--8015-6152-0454"));
        assert!(!card_number_valid("44 328015 6152 0454"));
        assert!(!card_number_valid("4432-8015-6152-0455"));
        assert!(card_number_valid("4222222222222"));
    }

    /// Every `name="…" value="…"` default of the cart page's checkout form (the expiry year is a template
    /// variable: a year in the future stands in for it).
    fn cart_page_defaults() -> HashMap<String, String> {
        let page = include_str!("../../../templates/cart.html");
        let form = page
            .split("action=\"/cart/checkout\"")
            .nth(1)
            .expect("the cart page has a checkout form");
        let mut defaults = HashMap::new();
        for input in form.split("<input").skip(1) {
            let attribute = |name: &str| {
                let start = input.find(&format!("{name}=\""))? + name.len() + 2;
                let end = input[start..].find('"')? + start;
                Some(input[start..end].to_owned())
            };
            if let (Some(name), Some(value)) = (attribute("name"), attribute("value")) {
                let value = if value.contains("{{") {
                    "2039".into()
                } else {
                    value
                };
                defaults.insert(name, value);
            }
        }
        defaults
    }

    #[test]
    fn the_cart_page_defaults_check_out() {
        let defaults = cart_page_defaults();
        assert!(defaults.contains_key("credit_card_number"), "{defaults:?}");
        let form = CheckoutForm::parse(&defaults).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(form.credit_card.credit_card_cvv, 672);
    }

    #[test]
    fn currency_must_be_supported() {
        assert!(SetCurrencyForm::parse(&fields(&[("currency_code", "TRY")])).is_ok());
        assert!(SetCurrencyForm::parse(&fields(&[("currency_code", "XXX")])).is_err());
        assert!(SetCurrencyForm::parse(&fields(&[])).is_err());
    }
}
