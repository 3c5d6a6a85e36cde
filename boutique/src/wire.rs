//! JSON wire types of the internal service APIs, shared by each service and its callers.

use serde::{Deserialize, Serialize};

use crate::money::Money;

/// A catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Product {
    pub id: String,
    pub name: String,
    pub description: String,
    pub picture: String,
    pub price_usd: Money,
    pub categories: Vec<String>,
}

/// One line of a cart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CartItem {
    pub product_id: String,
    pub quantity: u32,
}

/// A user's cart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cart {
    pub user_id: String,
    pub items: Vec<CartItem>,
}

/// Body of `POST /carts/{user_id}/items`.
pub type AddItemRequest = CartItem;

/// Body of `POST /convert`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConvertRequest {
    pub from: Money,
    pub to_code: String,
}

/// A postal address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    pub street_address: String,
    pub city: String,
    pub state: String,
    pub country: String,
    pub zip_code: i64,
}

/// Card details as the frontend's form carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreditCardInfo {
    pub credit_card_number: String,
    pub credit_card_cvv: u32,
    pub credit_card_expiration_year: i32,
    pub credit_card_expiration_month: u32,
}

/// Body of Payment's `POST /charge`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChargeRequest {
    pub amount: Money,
    pub credit_card: CreditCardInfo,
}

/// Answer of Payment's `POST /charge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChargeResponse {
    pub transaction_id: String,
}

/// Body of Shipping's `POST /quote` and `POST /ship`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShippingRequest {
    pub address: Address,
    pub items: Vec<CartItem>,
}

/// Answer of Shipping's `POST /quote` (always in USD).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuoteResponse {
    pub cost_usd: Money,
}

/// Answer of Shipping's `POST /ship`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShipResponse {
    pub tracking_id: String,
}

/// One line of a placed order, priced in the user's currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderItem {
    pub item: CartItem,
    pub cost: Money,
}

/// What Checkout returns for a placed order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderResult {
    pub order_id: String,
    pub shipping_tracking_id: String,
    pub shipping_cost: Money,
    pub shipping_address: Address,
    pub items: Vec<OrderItem>,
    pub total: Money,
}

/// Body of Checkout's `POST /orders`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlaceOrderRequest {
    pub user_id: String,
    pub user_currency: String,
    pub address: Address,
    pub email: String,
    pub credit_card: CreditCardInfo,
}

/// Body of Email's `POST /send-confirmation`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationRequest {
    pub email: String,
    pub order: OrderResult,
}

/// Answer of Recommendation's `GET /recommendations`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recommendations {
    pub product_ids: Vec<String>,
}

/// One advertisement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ad {
    pub redirect_url: String,
    pub text: String,
}

/// Answer of Ad's `GET /ads`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ads {
    pub ads: Vec<Ad>,
}
