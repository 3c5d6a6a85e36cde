//! Payment: validates the card like Online Boutique (Luhn, VISA or MasterCard only, not expired) and
//! answers a transaction id. Invalid cards are the caller's mistake (400), never a dependency failure.
//! The fault-injection agent's layer wraps these routes in the running stack.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use breaker::{Clock, SystemClock};

use crate::services::json_error;
use crate::wire::{ChargeRequest, ChargeResponse, CreditCardInfo};

/// A calendar month, for expiry checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct YearMonth {
    pub year: i32,
    pub month: u32,
}

impl YearMonth {
    /// The month a unix timestamp (seconds) falls in, UTC.
    pub fn from_unix_seconds(seconds: u64) -> Self {
        // Civil-from-days (H. Hinnant), valid for every date after 1970.
        let days = (seconds / 86_400) as i64 + 719_468;
        let era = days.div_euclid(146_097);
        let day_of_era = days - era * 146_097;
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let shifted_month = (5 * day_of_year + 2) / 153;
        let month = if shifted_month < 10 {
            shifted_month + 3
        } else {
            shifted_month - 9
        };
        let year = year_of_era + era * 400 + i64::from(month <= 2);
        YearMonth {
            year: year as i32,
            month: month as u32,
        }
    }

    /// The current month, UTC.
    pub fn now() -> Self {
        let clock = SystemClock;
        YearMonth::from_unix_seconds(clock.unix_ms(clock.now()) / 1000)
    }

    fn index(self) -> i64 {
        i64::from(self.year) * 12 + i64::from(self.month)
    }
}

/// The card brands Online Boutique tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardBrand {
    Visa,
    MasterCard,
    Other,
}

/// Why a card was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    #[error("credit_card_number: not a valid card number")]
    Invalid,
    #[error("credit_card_number: only VISA or MasterCard are accepted")]
    Unaccepted,
    #[error("credit_card_expiration: the card expired on {month:02}/{year}")]
    Expired { year: i32, month: u32 },
}

/// The digits of a card number, ignoring spaces and dashes; `None` if anything else is in it.
fn card_digits(number: &str) -> Option<Vec<u8>> {
    number
        .chars()
        .filter(|c| *c != ' ' && *c != '-')
        .map(|c| c.to_digit(10).map(|d| d as u8))
        .collect()
}

/// The Luhn checksum over the digits.
pub fn luhn_valid(digits: &[u8]) -> bool {
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(position, digit)| {
            let digit = u32::from(*digit);
            if position % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    sum % 10 == 0
}

/// The brand from the number's prefix and length.
pub fn card_brand(digits: &[u8]) -> CardBrand {
    let prefix = |n: usize| {
        digits
            .iter()
            .take(n)
            .fold(0u32, |acc, d| acc * 10 + u32::from(*d))
    };
    let length = digits.len();
    if digits.first() == Some(&4) && matches!(length, 13 | 16 | 19) {
        return CardBrand::Visa;
    }
    if length == 16 && ((51..=55).contains(&prefix(2)) || (2221..=2720).contains(&prefix(4))) {
        return CardBrand::MasterCard;
    }
    CardBrand::Other
}

/// Validates a card as Online Boutique's payment service does, at month `today`.
pub fn validate_card(card: &CreditCardInfo, today: YearMonth) -> Result<CardBrand, CardError> {
    let digits = card_digits(&card.credit_card_number).ok_or(CardError::Invalid)?;
    if !(12..=19).contains(&digits.len()) || !luhn_valid(&digits) {
        return Err(CardError::Invalid);
    }
    let brand = card_brand(&digits);
    if brand == CardBrand::Other {
        return Err(CardError::Unaccepted);
    }
    let expiry = YearMonth {
        year: card.credit_card_expiration_year,
        month: card.credit_card_expiration_month,
    };
    if today.index() > expiry.index() {
        return Err(CardError::Expired {
            year: expiry.year,
            month: expiry.month,
        });
    }
    Ok(brand)
}

/// Payment's state: where "today" comes from (a fixed month in tests).
#[derive(Clone)]
pub struct PaymentState {
    today: Arc<dyn Fn() -> YearMonth + Send + Sync>,
}

impl std::fmt::Debug for PaymentState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaymentState").finish_non_exhaustive()
    }
}

impl Default for PaymentState {
    fn default() -> Self {
        PaymentState {
            today: Arc::new(YearMonth::now),
        }
    }
}

impl PaymentState {
    /// A payment service whose calendar always shows `today`.
    pub fn at(today: YearMonth) -> Self {
        PaymentState {
            today: Arc::new(move || today),
        }
    }
}

/// `POST /charge`.
pub fn router(state: PaymentState) -> Router {
    Router::new()
        .route("/charge", post(charge))
        .with_state(state)
}

async fn charge(State(state): State<PaymentState>, Json(request): Json<ChargeRequest>) -> Response {
    if !request.amount.is_valid() || request.amount.units < 0 {
        return json_error(
            StatusCode::BAD_REQUEST,
            "amount: must be a non-negative amount",
        );
    }
    match validate_card(&request.credit_card, (state.today)()) {
        Ok(_) => Json(ChargeResponse {
            transaction_id: uuid::Uuid::new_v4().to_string(),
        })
        .into_response(),
        Err(error) => json_error(StatusCode::BAD_REQUEST, error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(number: &str, year: i32, month: u32) -> CreditCardInfo {
        CreditCardInfo {
            credit_card_number: number.into(),
            credit_card_cvv: 672,
            credit_card_expiration_year: year,
            credit_card_expiration_month: month,
        }
    }

    const TODAY: YearMonth = YearMonth {
        year: 2026,
        month: 11,
    };

    #[test]
    fn visa_and_mastercard_pass() {
        assert_eq!(
            validate_card(&card("4432-8015-6152-0454", 2039, 1), TODAY),
            Ok(CardBrand::Visa)
        );
        assert_eq!(
            validate_card(&card("5555555555554444", 2030, 1), TODAY),
            Ok(CardBrand::MasterCard)
        );
        assert_eq!(
            validate_card(&card("2223000048400011", 2030, 1), TODAY),
            Ok(CardBrand::MasterCard)
        );
    }

    #[test]
    fn luhn_failure_is_invalid() {
        assert_eq!(
            validate_card(&card("4432801561520455", 2039, 1), TODAY),
            Err(CardError::Invalid)
        );
        assert_eq!(
            validate_card(&card("4432x01561520454", 2039, 1), TODAY),
            Err(CardError::Invalid)
        );
    }

    #[test]
    fn amex_is_unaccepted() {
        assert_eq!(
            validate_card(&card("378282246310005", 2039, 1), TODAY),
            Err(CardError::Unaccepted)
        );
    }

    #[test]
    fn expiry_compares_year_times_twelve_plus_month() {
        assert!(validate_card(&card("4111111111111111", 2026, 11), TODAY).is_ok());
        assert_eq!(
            validate_card(&card("4111111111111111", 2026, 10), TODAY),
            Err(CardError::Expired {
                year: 2026,
                month: 10
            })
        );
    }

    async fn charge_status(card: CreditCardInfo) -> axum::http::StatusCode {
        use tower::ServiceExt;
        let body = serde_json::to_vec(&ChargeRequest {
            amount: crate::money::Money::from_cents("USD", 1999),
            credit_card: card,
        })
        .unwrap();
        let request = axum::http::Request::post("/charge")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .unwrap();
        router(PaymentState::at(TODAY))
            .oneshot(request)
            .await
            .unwrap()
            .status()
    }

    #[tokio::test]
    async fn charge_answers_400_for_the_callers_mistakes_and_200_otherwise() {
        assert_eq!(
            charge_status(card("4432801561520454", 2039, 1)).await,
            StatusCode::OK
        );
        assert_eq!(
            charge_status(card("378282246310005", 2039, 1)).await,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            charge_status(card("4432801561520454", 2020, 1)).await,
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn calendar_month_from_unix_seconds() {
        // 2026-11-29T00:00:00Z
        assert_eq!(
            YearMonth::from_unix_seconds(1_795_910_400),
            YearMonth {
                year: 2026,
                month: 11
            }
        );
        // 2024-02-29T12:00:00Z
        assert_eq!(
            YearMonth::from_unix_seconds(1_709_208_000),
            YearMonth {
                year: 2024,
                month: 2
            }
        );
    }
}
