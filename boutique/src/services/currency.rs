//! Currency: the supported codes and conversion through a fixed euro-based rate table.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::data;
use crate::money::Money;
use crate::services::json_error;
use crate::wire::ConvertRequest;

/// Currency has no state of its own (the table is fixed).
#[derive(Debug, Clone, Copy, Default)]
pub struct CurrencyState;

/// `GET /currencies`, `POST /convert`.
pub fn router(state: CurrencyState) -> Router {
    Router::new()
        .route("/currencies", get(currencies))
        .route("/convert", post(convert))
        .with_state(state)
}

async fn currencies() -> Json<Vec<&'static str>> {
    Json(data::EUR_RATES.iter().map(|(code, _)| *code).collect())
}

/// Why an amount cannot be converted; `Display` names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("from: units and nanos must have the same sign")]
    MixedSigns,
    #[error("from.currency_code: unsupported currency {0:?}")]
    UnsupportedFrom(String),
    #[error("to_code: unsupported currency {0:?}")]
    UnsupportedTo(String),
}

/// Converts `from` into `to_code`, or names what is unsupported.
pub fn convert_money(from: &Money, to_code: &str) -> Result<Money, ConvertError> {
    if !from.is_valid() {
        return Err(ConvertError::MixedSigns);
    }
    let from_rate = data::eur_rate(&from.currency_code)
        .ok_or_else(|| ConvertError::UnsupportedFrom(from.currency_code.clone()))?;
    let to_rate =
        data::eur_rate(to_code).ok_or_else(|| ConvertError::UnsupportedTo(to_code.to_owned()))?;
    Ok(from.converted(to_code, to_rate / from_rate))
}

async fn convert(State(_): State<CurrencyState>, Json(request): Json<ConvertRequest>) -> Response {
    match convert_money(&request.from, &request.to_code) {
        Ok(money) => Json(money).into_response(),
        Err(refused) => json_error(StatusCode::BAD_REQUEST, refused.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usd_to_eur_and_back_is_close() {
        let price = Money::from_cents("USD", 1999);
        let eur = convert_money(&price, "EUR").unwrap();
        assert_eq!(eur.currency_code, "EUR");
        let back = convert_money(&eur, "USD").unwrap();
        assert_eq!(back.display(), "$19.99");
    }

    #[test]
    fn unsupported_codes_name_the_field() {
        let price = Money::from_cents("USD", 100);
        assert_eq!(
            convert_money(&price, "XXX").unwrap_err().to_string(),
            r#"to_code: unsupported currency "XXX""#
        );
        let odd = Money::from_cents("XXX", 100);
        assert_eq!(
            convert_money(&odd, "USD").unwrap_err().to_string(),
            r#"from.currency_code: unsupported currency "XXX""#
        );
    }
}
