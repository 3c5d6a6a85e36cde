//! Shipping: a flat quote in USD for a non-empty order, and a tracking id when shipping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};

use crate::money::Money;
use crate::wire::{QuoteResponse, ShipResponse, ShippingRequest};

/// Flat shipping cost in US cents for any non-empty order (Online Boutique quotes $8.99).
pub const FLAT_QUOTE_CENTS: i64 = 899;

/// Shipping's state: a counter for tracking ids.
#[derive(Debug, Clone, Default)]
pub struct ShippingState {
    shipped: Arc<AtomicU64>,
}

/// `POST /quote`, `POST /ship`.
pub fn router(state: ShippingState) -> Router {
    Router::new()
        .route("/quote", post(quote))
        .route("/ship", post(ship))
        .with_state(state)
}

/// The quote for an order with these items.
pub fn quote_for(request: &ShippingRequest) -> Money {
    let count: u64 = request
        .items
        .iter()
        .map(|item| u64::from(item.quantity))
        .sum();
    if count == 0 {
        Money::zero("USD")
    } else {
        Money::from_cents("USD", FLAT_QUOTE_CENTS)
    }
}

async fn quote(Json(request): Json<ShippingRequest>) -> Json<QuoteResponse> {
    Json(QuoteResponse {
        cost_usd: quote_for(&request),
    })
}

async fn ship(
    State(state): State<ShippingState>,
    Json(request): Json<ShippingRequest>,
) -> Json<ShipResponse> {
    let sequence = state.shipped.fetch_add(1, Ordering::Relaxed);
    let zip = request.address.zip_code.rem_euclid(100_000);
    Json(ShipResponse {
        tracking_id: format!("TR-{zip:05}-{sequence:08}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Address, CartItem};

    #[test]
    fn empty_orders_ship_free() {
        let address = Address {
            street_address: "1600 Amphitheatre Parkway".into(),
            city: "Mountain View".into(),
            state: "CA".into(),
            country: "United States".into(),
            zip_code: 94043,
        };
        let mut request = ShippingRequest {
            address,
            items: vec![],
        };
        assert_eq!(quote_for(&request), Money::zero("USD"));
        request.items.push(CartItem {
            product_id: "OLJCESPC7Z".into(),
            quantity: 3,
        });
        assert_eq!(quote_for(&request).display(), "$8.99");
    }
}
