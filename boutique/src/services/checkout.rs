//! Checkout: Online Boutique's PlaceOrder, in its order: get the cart; per item get the product and convert
//! its price; quote shipping and convert it; charge the card (a failure fails the order); ship; empty the
//! cart (only now, after a successful charge); send the confirmation (a failure is only logged).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures::future::try_join_all;

use crate::client::{Ack, CallError, Dependency};
use crate::money::Money;
use crate::services::{dependency_failure, json_error};
use crate::wire::{
    Cart, ChargeRequest, ChargeResponse, ConfirmationRequest, ConvertRequest, OrderItem,
    OrderResult, PlaceOrderRequest, Product, QuoteResponse, ShipResponse, ShippingRequest,
};

/// Checkout's dependencies.
#[derive(Debug, Clone)]
pub struct CheckoutState {
    pub cart: Dependency,
    pub catalog: Dependency,
    pub currency: Dependency,
    pub shipping: Dependency,
    pub payment: Dependency,
    pub email: Dependency,
}

/// `POST /orders`.
pub fn router(state: CheckoutState) -> Router {
    Router::new()
        .route("/orders", post(place_order_handler))
        .with_state(state)
}

async fn place_order_handler(
    State(state): State<CheckoutState>,
    Json(request): Json<PlaceOrderRequest>,
) -> Response {
    if request.user_id.trim().is_empty() {
        return json_error(StatusCode::BAD_REQUEST, "user_id: must not be empty");
    }
    match place_order(&state, &request).await {
        Ok(order) => Json(order).into_response(),
        Err(error) => dependency_failure(&error),
    }
}

async fn convert(currency: &Dependency, from: Money, to_code: &str) -> Result<Money, CallError> {
    currency
        .post(
            "/convert",
            &ConvertRequest {
                from,
                to_code: to_code.to_owned(),
            },
        )
        .await
}

/// Runs PlaceOrder; the first failing step decides the error.
pub async fn place_order(
    state: &CheckoutState,
    request: &PlaceOrderRequest,
) -> Result<OrderResult, CallError> {
    let user_currency = request.user_currency.as_str();
    let cart: Cart = state
        .cart
        .get(&format!("/carts/{}", request.user_id))
        .await?;

    let items = try_join_all(cart.items.iter().map(|item| async move {
        let product: Product = state
            .catalog
            .get(&format!("/products/{}", item.product_id))
            .await?;
        let unit_price = convert(&state.currency, product.price_usd, user_currency).await?;
        Ok::<_, CallError>(OrderItem {
            item: item.clone(),
            cost: unit_price,
        })
    }))
    .await?;

    let shipping_request = ShippingRequest {
        address: request.address.clone(),
        items: cart.items.clone(),
    };
    let quote: QuoteResponse = state.shipping.post("/quote", &shipping_request).await?;
    let shipping_cost = convert(&state.currency, quote.cost_usd, user_currency).await?;

    let total = items.iter().fold(shipping_cost.clone(), |total, line| {
        total
            .checked_add(&line.cost.times(line.item.quantity))
            .unwrap_or(total)
    });

    let _charge: ChargeResponse = state
        .payment
        .post(
            "/charge",
            &ChargeRequest {
                amount: total.clone(),
                credit_card: request.credit_card.clone(),
            },
        )
        .await?;

    let shipped: ShipResponse = state.shipping.post("/ship", &shipping_request).await?;

    let _: Ack = state
        .cart
        .delete(&format!("/carts/{}", request.user_id))
        .await?;

    let order = OrderResult {
        order_id: uuid::Uuid::new_v4().to_string(),
        shipping_tracking_id: shipped.tracking_id,
        shipping_cost,
        shipping_address: request.address.clone(),
        items,
        total,
    };

    let confirmation = ConfirmationRequest {
        email: request.email.clone(),
        order: order.clone(),
    };
    if let Err(error) = state
        .email
        .post::<_, Ack>("/send-confirmation", &confirmation)
        .await
    {
        tracing::warn!(%error, order = %order.order_id, "order confirmation not sent");
    }
    Ok(order)
}
