//! Email: accepts order confirmations and counts them (nothing leaves the machine).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};

use crate::admin::ServiceHooks;
use crate::client::Ack;
use crate::services::json_error;
use crate::wire::ConfirmationRequest;

/// Email's state: how many confirmations it accepted.
#[derive(Debug, Clone, Default)]
pub struct EmailState {
    sent: Arc<AtomicU64>,
}

impl EmailState {
    /// Confirmations accepted so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

impl ServiceHooks for EmailState {
    fn render_metrics(&self, out: &mut String) {
        let _ = writeln!(out, "# TYPE boutique_email_confirmations_total counter");
        let _ = writeln!(out, "boutique_email_confirmations_total {}", self.sent());
    }
}

/// `POST /send-confirmation`.
pub fn router(state: EmailState) -> Router {
    Router::new()
        .route("/send-confirmation", post(send_confirmation))
        .with_state(state)
}

async fn send_confirmation(
    State(state): State<EmailState>,
    Json(request): Json<ConfirmationRequest>,
) -> Response {
    if !request.email.contains('@') {
        return json_error(StatusCode::BAD_REQUEST, "email: not an email address");
    }
    state.sent.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(order = %request.order.order_id, "order confirmation sent");
    Json(Ack {}).into_response()
}
