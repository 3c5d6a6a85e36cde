//! The shop's routes and their handlers: home, product, cart, currency, logout and checkout.

use std::sync::Arc;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use futures::future::join_all;

use super::forms::{AddToCartForm, CheckoutForm, InvalidForm, SetCurrencyForm};
use super::pages::{CartLine, CartPage, Header, HomePage, OrderPage, ProductPage, ProductView};
use super::respond::{Valid, Visit, call_failed, error_page, found, invalid_form, render};
use super::session::{self, CURRENCY_COOKIE, SESSION_COOKIE, ShopperSession};
use super::state::FrontendState;
use crate::client::{Ack, CallError};
use crate::money::Money;
use crate::services::payment::YearMonth;
use crate::wire::{
    AddItemRequest, CartItem, OrderResult, PlaceOrderRequest, Product, QuoteResponse,
    ShippingRequest,
};

/// The shop's routes (`/_healthz` and the admin routes are added by the stack, outside the worker pool).
pub fn router(state: FrontendState) -> Router {
    Router::new()
        .route("/", get(home))
        .route("/product/{id}", get(product))
        .route("/cart", get(view_cart).post(add_to_cart))
        .route("/cart/empty", post(empty_cart))
        .route("/cart/checkout", post(checkout))
        .route("/setCurrency", post(set_currency))
        .route("/logout", get(logout))
        .layer(axum::middleware::from_fn(session::ensure_session))
        .with_state(Arc::new(state))
}

/// The header of a page that looked the cart up: the currencies offered and how many items the cart holds.
fn cart_header(session: &ShopperSession, currencies: &[String], items: &[CartItem]) -> Header {
    let cart_size = items.iter().map(|item| item.quantity).sum();
    Header::new(currencies, &session.currency, Some(cart_size))
}

async fn home(Visit { state, session }: Visit) -> Response {
    let (currencies, products, items, ad) = tokio::join!(
        state.currencies(),
        state.deps.catalog.get::<Vec<Product>>("/products"),
        state.cart_items(&session.id),
        state.ad(&[]),
    );
    let products = products.unwrap_or_else(|error| {
        tracing::debug!(%error, "catalog unavailable, showing no products");
        vec![]
    });
    let prices = join_all(
        products
            .iter()
            .map(|product| state.price(&product.price_usd, &session.currency)),
    )
    .await;
    let products = products
        .iter()
        .zip(prices)
        .map(|(product, price)| ProductView::new(product, price.display()))
        .collect();
    let page = HomePage {
        header: cart_header(&session, &currencies, &items),
        products,
        ad,
    };
    render(&page, StatusCode::OK)
}

async fn product(Visit { state, session }: Visit, Path(id): Path<String>) -> Response {
    let product: Product = match state.deps.catalog.get(&format!("/products/{id}")).await {
        Ok(product) => product,
        Err(CallError::Status { status: 404, .. }) => {
            return error_page(
                &session,
                StatusCode::NOT_FOUND,
                format!("no product with id {id}"),
                None,
            );
        }
        Err(error) => return call_failed(&session, "could not retrieve product", &error),
    };
    let shown = [product.id.clone()];
    let (currencies, items, price, recommendations, ad) = tokio::join!(
        state.currencies(),
        state.cart_items(&session.id),
        state.price(&product.price_usd, &session.currency),
        state.recommendations(&session.id, &shown),
        state.ad(&product.categories),
    );
    let page = ProductPage {
        header: cart_header(&session, &currencies, &items),
        product: ProductView::new(&product, price.display()),
        recommendations,
        ad,
    };
    render(&page, StatusCode::OK)
}

async fn view_cart(Visit { state, session }: Visit) -> Response {
    let (currencies, items) = tokio::join!(state.currencies(), state.cart_items(&session.id));
    let product_ids: Vec<String> = items.iter().map(|item| item.product_id.clone()).collect();
    let quote_request = ShippingRequest {
        address: crate::wire::Address {
            street_address: String::new(),
            city: String::new(),
            state: String::new(),
            country: String::new(),
            zip_code: 0,
        },
        items: items.clone(),
    };
    let shipping_cost = async {
        let quote: QuoteResponse = state
            .deps
            .shipping
            .post("/quote", &quote_request)
            .await
            .ok()?;
        Some(state.price(&quote.cost_usd, &session.currency).await)
    };
    let lines = join_all(items.iter().map(|item| async {
        let product: Product = state
            .deps
            .catalog
            .get(&format!("/products/{}", item.product_id))
            .await
            .ok()?;
        let unit_price = state.price(&product.price_usd, &session.currency).await;
        let line_total = unit_price.times(item.quantity);
        Some((product, item.quantity, line_total))
    }));
    let (recommendations, shipping_cost, lines) = tokio::join!(
        state.recommendations(&session.id, &product_ids),
        shipping_cost,
        lines
    );
    let lines: Vec<(Product, u32, Money)> = lines.into_iter().flatten().collect();
    let shipping_cost = shipping_cost.unwrap_or_else(|| Money::zero(session.currency.clone()));
    let total = lines
        .iter()
        .fold(shipping_cost.clone(), |total, (_, _, line)| {
            total.checked_add(line).unwrap_or(total)
        });
    let page = CartPage {
        header: cart_header(&session, &currencies, &items),
        lines: lines
            .iter()
            .map(|(product, quantity, line_total)| CartLine {
                product: ProductView::new(product, String::new()),
                quantity: *quantity,
                line_total: line_total.display(),
            })
            .collect(),
        shipping_cost: shipping_cost.display(),
        total: total.display(),
        recommendations,
        default_expiry_year: YearMonth::now().year + 1,
    };
    render(&page, StatusCode::OK)
}

async fn add_to_cart(
    Visit { state, session }: Visit,
    Valid(form): Valid<AddToCartForm>,
) -> Response {
    match state
        .deps
        .catalog
        .get::<Product>(&format!("/products/{}", form.product_id))
        .await
    {
        Ok(_) => {}
        Err(CallError::Status { status: 404, .. }) => {
            return invalid_form(
                &session,
                InvalidForm {
                    problems: vec![format!(
                        "product_id: no product with id {}",
                        form.product_id
                    )],
                },
            );
        }
        Err(error) => return call_failed(&session, "could not retrieve product", &error),
    }
    let item = AddItemRequest {
        product_id: form.product_id,
        quantity: form.quantity,
    };
    match state
        .deps
        .cart
        .post::<_, Ack>(&format!("/carts/{}/items", session.id), &item)
        .await
    {
        Ok(_) => found("/cart"),
        Err(error) => call_failed(&session, "failed to add to cart", &error),
    }
}

async fn empty_cart(Visit { state, session }: Visit) -> Response {
    match state
        .deps
        .cart
        .delete::<Ack>(&format!("/carts/{}", session.id))
        .await
    {
        Ok(_) => found("/"),
        Err(error) => call_failed(&session, "failed to empty cart", &error),
    }
}

async fn set_currency(headers: HeaderMap, Valid(form): Valid<SetCurrencyForm>) -> Response {
    let back = headers
        .get(header::REFERER)
        .and_then(|value| value.to_str().ok())
        .filter(|referer| !referer.is_empty())
        .unwrap_or("/");
    let mut response = found(back);
    response.headers_mut().append(
        header::SET_COOKIE,
        session::set_cookie(CURRENCY_COOKIE, &form.currency_code),
    );
    response
}

async fn logout() -> Response {
    let mut response = found("/");
    for name in [SESSION_COOKIE, CURRENCY_COOKIE] {
        response
            .headers_mut()
            .append(header::SET_COOKIE, session::expire_cookie(name));
    }
    response
}

async fn checkout(Visit { state, session }: Visit, Valid(form): Valid<CheckoutForm>) -> Response {
    let request = PlaceOrderRequest {
        user_id: session.id.clone(),
        user_currency: session.currency.clone(),
        address: form.address,
        email: form.email,
        credit_card: form.credit_card,
    };
    let order: OrderResult = match state.deps.checkout.post("/orders", &request).await {
        Ok(order) => order,
        Err(error) => {
            if let Some(status) = error.client_error_status() {
                let message = match &error {
                    CallError::Status { message, .. } => message.clone(),
                    other => other.to_string(),
                };
                let status = if status == 400 {
                    StatusCode::UNPROCESSABLE_ENTITY
                } else {
                    StatusCode::from_u16(status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY)
                };
                return error_page(&session, status, format!("order refused: {message}"), None);
            }
            return call_failed(&session, "failed to complete the order", &error);
        }
    };
    let (recommendations, currencies) =
        tokio::join!(state.recommendations(&session.id, &[]), state.currencies());
    let page = OrderPage {
        header: Header::new(&currencies, &session.currency, Some(0)),
        order_id: order.order_id,
        tracking_id: order.shipping_tracking_id,
        total: order.total.display(),
        recommendations,
    };
    render(&page, StatusCode::OK)
}
