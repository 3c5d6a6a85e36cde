//! Cart: in-memory carts per user (Online Boutique keeps them in Redis).
//!
//! Every add appends a line, as the study's testbed did, so a cart that is never checked out keeps
//! growing and every cart view (one catalog lookup and one conversion per line) grows slower with it: the
//! state-borne cascade of seed 000. Carts empty only when Checkout asks, after a successful payment.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::admin::ServiceHooks;
use crate::client::Ack;
use crate::services::json_error;
use crate::wire::{AddItemRequest, Cart, CartItem};

/// Every user's cart.
#[derive(Debug, Clone, Default)]
pub struct CartState {
    carts: Arc<RwLock<HashMap<String, Vec<CartItem>>>>,
}

/// Cart sizes across all non-empty carts (`GET /_admin/cart-stats`, also in `/metrics`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CartStats {
    /// Number of non-empty carts.
    pub carts: usize,
    /// Mean number of lines per non-empty cart (0 when there are none).
    pub mean_items: f64,
    /// Mean total quantity per non-empty cart.
    pub mean_quantity: f64,
}

impl CartState {
    /// Current cart-size statistics.
    pub fn stats(&self) -> CartStats {
        let carts = self.carts.read();
        let non_empty = carts.values().filter(|items| !items.is_empty());
        let (count, lines, quantity) = non_empty.fold((0usize, 0usize, 0u64), |acc, items| {
            let quantity: u64 = items.iter().map(|item| u64::from(item.quantity)).sum();
            (acc.0 + 1, acc.1 + items.len(), acc.2 + quantity)
        });
        let mean = |total: f64| {
            if count == 0 {
                0.0
            } else {
                total / count as f64
            }
        };
        CartStats {
            carts: count,
            mean_items: mean(lines as f64),
            mean_quantity: mean(quantity as f64),
        }
    }

    /// Drops every cart.
    pub fn clear(&self) {
        self.carts.write().clear();
    }
}

impl ServiceHooks for CartState {
    fn reset(&self) {
        self.clear();
    }

    fn render_metrics(&self, out: &mut String) {
        let stats = self.stats();
        let _ = writeln!(out, "# TYPE boutique_cart_carts gauge");
        let _ = writeln!(out, "boutique_cart_carts {}", stats.carts);
        let _ = writeln!(out, "# TYPE boutique_cart_mean_items gauge");
        let _ = writeln!(out, "boutique_cart_mean_items {}", stats.mean_items);
        let _ = writeln!(out, "# TYPE boutique_cart_mean_quantity gauge");
        let _ = writeln!(out, "boutique_cart_mean_quantity {}", stats.mean_quantity);
    }
}

/// `GET /carts/{user_id}`, `POST /carts/{user_id}/items`, `DELETE /carts/{user_id}`.
pub fn router(state: CartState) -> Router {
    Router::new()
        .route("/carts/{user_id}", get(get_cart).delete(empty_cart))
        .route("/carts/{user_id}/items", post(add_item))
        .with_state(state)
}

/// `GET /_admin/cart-stats`, mounted outside the worker pool.
pub fn stats_router(state: CartState) -> Router {
    Router::new()
        .route("/_admin/cart-stats", get(cart_stats))
        .with_state(state)
}

async fn get_cart(State(state): State<CartState>, Path(user_id): Path<String>) -> Json<Cart> {
    let items = state
        .carts
        .read()
        .get(&user_id)
        .cloned()
        .unwrap_or_default();
    Json(Cart { user_id, items })
}

async fn add_item(
    State(state): State<CartState>,
    Path(user_id): Path<String>,
    Json(item): Json<AddItemRequest>,
) -> Response {
    if item.product_id.trim().is_empty() {
        return json_error(StatusCode::BAD_REQUEST, "product_id: must not be empty");
    }
    if item.quantity == 0 {
        return json_error(StatusCode::BAD_REQUEST, "quantity: must be at least 1");
    }
    state.carts.write().entry(user_id).or_default().push(item);
    Json(Ack {}).into_response()
}

async fn empty_cart(State(state): State<CartState>, Path(user_id): Path<String>) -> Json<Ack> {
    state.carts.write().remove(&user_id);
    Json(Ack {})
}

async fn cart_stats(State(state): State<CartState>) -> Json<CartStats> {
    Json(state.stats())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::{Body, to_bytes};
    use axum::http::Request;
    use tower::ServiceExt;

    async fn send(state: &CartState, request: Request<Body>) -> (StatusCode, serde_json::Value) {
        let response = router(state.clone()).oneshot(request).await.unwrap();
        let status = response.status();
        let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap_or_default())
    }

    fn add(user: &str, product: &str, quantity: u32) -> Request<Body> {
        Request::post(format!("/carts/{user}/items"))
            .header("content-type", "application/json")
            .body(Body::from(
                serde_json::json!({"product_id": product, "quantity": quantity}).to_string(),
            ))
            .unwrap()
    }

    #[tokio::test]
    async fn adds_append_lines_and_empty_clears() {
        let state = CartState::default();
        assert_eq!(
            send(&state, add("u1", "OLJCESPC7Z", 2)).await.0,
            StatusCode::OK
        );
        assert_eq!(
            send(&state, add("u1", "OLJCESPC7Z", 1)).await.0,
            StatusCode::OK
        );
        let (_, cart) = send(
            &state,
            Request::get("/carts/u1").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(cart["items"].as_array().unwrap().len(), 2);
        assert_eq!(state.stats().mean_items, 2.0);
        assert_eq!(state.stats().mean_quantity, 3.0);

        send(
            &state,
            Request::delete("/carts/u1").body(Body::empty()).unwrap(),
        )
        .await;
        assert_eq!(state.stats().carts, 0);
    }

    #[tokio::test]
    async fn zero_quantity_is_a_400_naming_the_field() {
        let state = CartState::default();
        let (status, body) = send(&state, add("u1", "OLJCESPC7Z", 0)).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // The stack's one error body, nothing more.
        let error: serving::ErrorBody = serde_json::from_value(body.clone()).unwrap();
        assert_eq!(serde_json::to_value(&error).unwrap(), body);
        assert!(error.error.starts_with("quantity"), "{error:?}");
    }

    #[test]
    fn reset_hook_clears_carts() {
        let state = CartState::default();
        state.carts.write().insert(
            "u".into(),
            vec![CartItem {
                product_id: "x".into(),
                quantity: 1,
            }],
        );
        ServiceHooks::reset(&state);
        assert_eq!(state.stats().carts, 0);
    }
}
