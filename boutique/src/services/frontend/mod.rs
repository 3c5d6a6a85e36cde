//! Frontend: the shop's HTML pages, route- and form-compatible with Online Boutique's frontend so its
//! stock load generator runs unchanged. Read paths degrade (no products, empty cart, no ads or
//! recommendations, page still 200); checkout shows failures, with `x-tolerant-rejected` when a breaker
//! rejected the order.

pub mod forms;
pub mod pages;
pub mod session;

use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;
use axum::extract::{FromRequest, FromRequestParts, Path, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use futures::future::join_all;
use parking_lot::Mutex;
use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;

use crate::client::{Ack, CallError, Dependency, REJECTED_HEADER};
use crate::money::Money;
use crate::services::payment::YearMonth;
use crate::wire::{
    Ad, AddItemRequest, Ads, Cart, CartItem, ConvertRequest, OrderResult, PlaceOrderRequest,
    Product, QuoteResponse, Recommendations, ShippingRequest,
};
use forms::{AddToCartForm, CheckoutForm, InvalidForm, PostedForm, SetCurrencyForm};
use pages::{CartLine, CartPage, ErrorPage, Header, HomePage, OrderPage, ProductPage, ProductView};
use session::{CURRENCY_COOKIE, SESSION_COOKIE, ShopperSession};

/// How many recommended products a page looks up and shows (Online Boutique shows four).
const RECOMMENDATIONS_SHOWN: usize = 4;

/// The frontend's dependencies and a seeded random source for picking an ad.
#[derive(Debug, Clone)]
pub struct FrontendState {
    pub deps: FrontendDependencies,
    rng: Arc<Mutex<SmallRng>>,
}

/// The frontend's dependencies, by role.
#[derive(Debug, Clone)]
pub struct FrontendDependencies {
    pub catalog: Dependency,
    pub currency: Dependency,
    pub cart: Dependency,
    pub recommendation: Dependency,
    pub shipping: Dependency,
    pub checkout: Dependency,
    pub ad: Dependency,
}

impl FrontendState {
    /// A frontend calling `deps`, picking ads with `seed`.
    pub fn new(deps: FrontendDependencies, seed: u64) -> Self {
        FrontendState {
            deps,
            rng: Arc::new(Mutex::new(SmallRng::seed_from_u64(seed))),
        }
    }
}

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

fn render(template: &impl Template, status: StatusCode) -> Response {
    match template.render() {
        Ok(html) => (status, Html(html)).into_response(),
        Err(error) => {
            tracing::error!(%error, "template failed to render");
            (StatusCode::INTERNAL_SERVER_ERROR, "template error").into_response()
        }
    }
}

/// A 302 Found to `location`, as Online Boutique answers its form posts.
fn found(location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => (StatusCode::FOUND, [(header::LOCATION, value)]).into_response(),
        Err(_) => (
            StatusCode::FOUND,
            [(header::LOCATION, HeaderValue::from_static("/"))],
        )
            .into_response(),
    }
}

fn plain_header(session: &ShopperSession) -> Header {
    Header::new(&[], &session.currency, None)
}

/// The error page, with `x-tolerant-rejected` when a breaker rejected the request.
fn error_page(
    session: &ShopperSession,
    status: StatusCode,
    message: String,
    rejected_by: Option<String>,
) -> Response {
    let page = ErrorPage {
        header: plain_header(session),
        status: status.as_u16(),
        message,
        rejected_by: rejected_by.clone(),
    };
    let mut response = render(&page, status);
    if let Some(value) = rejected_by.and_then(|breaker| HeaderValue::from_str(&breaker).ok()) {
        response.headers_mut().insert(REJECTED_HEADER, value);
    }
    response
}

/// The page for a failed call on a path that cannot degrade.
fn call_failed(session: &ShopperSession, what: &str, error: &CallError) -> Response {
    if let Some(breaker) = error.rejected_by() {
        return error_page(
            session,
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{what}: {error}"),
            Some(breaker.to_owned()),
        );
    }
    error_page(
        session,
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("{what}: {error}"),
        None,
    )
}

fn invalid_form(session: &ShopperSession, error: InvalidForm) -> Response {
    error_page(
        session,
        StatusCode::UNPROCESSABLE_ENTITY,
        error.to_string(),
        None,
    )
}

/// What every shop handler that calls a dependency reads: the frontend's state and the visitor's session (put
/// in the request by [`session::ensure_session`]).
struct Visit {
    state: Arc<FrontendState>,
    session: ShopperSession,
}

impl FromRequestParts<Arc<FrontendState>> for Visit {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<FrontendState>,
    ) -> Result<Self, Response> {
        let Extension(session) = Extension::<ShopperSession>::from_request_parts(parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(Visit {
            state: state.clone(),
            session,
        })
    }
}

/// A posted form, read and checked: a handler gets it valid; a body that is not a form, or a form with invalid
/// fields, is answered with the 422 error page naming them.
struct Valid<F>(F);

impl<S: Send + Sync, F: PostedForm> FromRequest<S> for Valid<F> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        let (mut parts, body) = request.into_parts();
        let Extension(session) = Extension::<ShopperSession>::from_request_parts(&mut parts, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let posted =
            Form::<HashMap<String, String>>::from_request(Request::from_parts(parts, body), state)
                .await;
        let form = match posted {
            Ok(Form(fields)) => F::parse(&fields),
            Err(rejection) => Err(InvalidForm {
                problems: vec![rejection.to_string()],
            }),
        };
        form.map(Valid)
            .map_err(|error| invalid_form(&session, error))
    }
}

impl FrontendState {
    async fn currencies(&self) -> Vec<String> {
        self.deps
            .currency
            .get("/currencies")
            .await
            .unwrap_or_else(|error| {
                tracing::debug!(%error, "currencies unavailable");
                vec![]
            })
    }

    async fn cart_items(&self, user_id: &str) -> Vec<CartItem> {
        match self
            .deps
            .cart
            .get::<Cart>(&format!("/carts/{user_id}"))
            .await
        {
            Ok(cart) => cart.items,
            Err(error) => {
                tracing::debug!(%error, "cart unavailable, showing it empty");
                vec![]
            }
        }
    }

    async fn convert(&self, from: &Money, to_code: &str) -> Result<Money, CallError> {
        self.deps
            .currency
            .post(
                "/convert",
                &ConvertRequest {
                    from: from.clone(),
                    to_code: to_code.to_owned(),
                },
            )
            .await
    }

    /// A price in the user's currency; the USD price when conversion fails.
    async fn price(&self, price_usd: &Money, currency: &str) -> Money {
        self.convert(price_usd, currency)
            .await
            .unwrap_or_else(|_| price_usd.clone())
    }

    async fn recommendations(&self, user_id: &str, product_ids: &[String]) -> Vec<ProductView> {
        let path = format!(
            "/recommendations?user_id={user_id}&product_ids={}",
            product_ids.join(",")
        );
        let ids = match self.deps.recommendation.get::<Recommendations>(&path).await {
            Ok(recommended) => recommended.product_ids,
            Err(error) => {
                tracing::debug!(%error, "recommendations unavailable");
                return vec![];
            }
        };
        let lookups = ids.iter().take(RECOMMENDATIONS_SHOWN).map(|id| {
            let path = format!("/products/{id}");
            async move { self.deps.catalog.get::<Product>(&path).await }
        });
        join_all(lookups)
            .await
            .into_iter()
            .filter_map(Result::ok)
            .map(|product| {
                let price = product.price_usd.display();
                ProductView::new(&product, price)
            })
            .collect()
    }

    async fn ad(&self, categories: &[String]) -> Option<Ad> {
        let ads: Ads = self
            .deps
            .ad
            .get(&format!("/ads?context_keys={}", categories.join(",")))
            .await
            .ok()?;
        ads.ads.choose(&mut *self.rng.lock()).cloned()
    }
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

#[cfg(test)]
mod tests;
