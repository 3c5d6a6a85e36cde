//! `POST /api/breakers`: a breaker-mode switch of every breaker, of one service's or of one breaker (`breaker`),
//! and the checks the game-day form shares with it.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::answers::BreakerModeAnswer;
use super::{Acting, parse_service};
use crate::error::AppError;
use crate::operations::ModeRequest;
use crate::state::AppState;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerModeBody {
    service: Option<String>,
    /// One breaker of `service` (its name, `checkout->payment`); absent or empty: every breaker of it.
    breaker: Option<String>,
    mode: String,
}

/// A mode switch as a form or a body gives it (an empty text is absent); a breaker needs its service, and a
/// name longer than any breaker's is refused, naming the field.
pub(crate) fn mode_request(
    service: Option<String>,
    breaker: Option<String>,
    mode: breaker::Mode,
) -> Result<ModeRequest, AppError> {
    let given = |text: Option<String>| text.filter(|text| !text.trim().is_empty());
    let service = given(service)
        .map(|service| parse_service("service", &service))
        .transpose()?;
    let breaker = given(breaker).map(|name| name.trim().to_owned());
    match (&service, &breaker) {
        (None, Some(_)) => Err(AppError::BadRequest(
            "service: needed with `breaker` (the service whose breaker it is)".into(),
        )),
        (_, Some(name)) if name.len() > MAX_BREAKER_NAME => Err(AppError::BadRequest(format!(
            "breaker: longer than {MAX_BREAKER_NAME} bytes"
        ))),
        _ => Ok(ModeRequest {
            service,
            breaker,
            mode,
        }),
    }
}

/// Longest breaker name a mode switch may carry.
const MAX_BREAKER_NAME: usize = 256;

/// A mode name as the breaker's [`breaker::Mode`]; the error names the field and the modes.
pub(crate) fn parse_mode(mode: &str) -> Result<breaker::Mode, AppError> {
    mode.parse()
        .map_err(|error: breaker::UnknownMode| AppError::BadRequest(error.to_string()))
}

pub async fn set_breaker_mode(
    State(state): State<AppState>,
    _: Acting,
    body: String,
) -> Result<Response, AppError> {
    let body: BreakerModeBody = serde_json::from_str(&body)
        .map_err(|error| AppError::BadRequest(format!("body: {error}")))?;
    let mode = parse_mode(&body.mode)?;
    let request = mode_request(body.service, body.breaker, mode)?;
    state.operations.set_breaker_mode(request).await?;
    Ok(Json(BreakerModeAnswer { mode }).into_response())
}
