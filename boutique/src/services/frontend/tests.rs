//! Frontend routes tested with `router().oneshot()`: form validation, redirects, cookies, and degraded
//! read paths when every dependency is unreachable.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use axum::response::Response;
use tower::ServiceExt;

use super::*;
use crate::client::{CallStats, Dependency, REJECTED_HEADER};
use crate::service_name::ServiceName;

/// A frontend whose dependencies all point at a closed loopback port (every call fails at once).
fn unreachable_frontend() -> Router {
    let registry = breaker::Registry::new(
        "frontend",
        breaker::BreakerConfig::default(),
        Arc::new(breaker::SystemClock),
    );
    let http = crate::client::internal_http_client();
    let dependency = |target: ServiceName| {
        Dependency::new(
            target,
            "http://127.0.0.1:1",
            registry.get(&ServiceName::Frontend.breaker_name(target)),
            http.clone(),
            Duration::from_secs(2),
            Arc::new(CallStats::default()),
        )
    };
    let deps = FrontendDependencies {
        catalog: dependency(ServiceName::ProductCatalog),
        currency: dependency(ServiceName::Currency),
        cart: dependency(ServiceName::Cart),
        recommendation: dependency(ServiceName::Recommendation),
        shipping: dependency(ServiceName::Shipping),
        checkout: dependency(ServiceName::Checkout),
        ad: dependency(ServiceName::Ad),
    };
    router(FrontendState::new(deps, 1))
}

fn form_post(uri: &str, body: &str) -> Request<Body> {
    Request::post(uri)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::COOKIE, "shop_session-id=test-session")
        .body(Body::from(body.to_owned()))
        .unwrap()
}

async fn body_text(response: Response) -> String {
    let bytes = to_bytes(response.into_body(), 1 << 20).await.unwrap();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn invalid_add_to_cart_is_422_before_any_call() {
    for body in [
        "product_id=OLJCESPC7Z&quantity=0",
        "product_id=OLJCESPC7Z&quantity=11",
        "product_id=OLJCESPC7Z",
        "quantity=3",
    ] {
        let response = unreachable_frontend()
            .oneshot(form_post("/cart", body))
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}"
        );
    }
}

#[tokio::test]
async fn invalid_checkout_form_is_422_naming_the_fields() {
    let response = unreachable_frontend()
        .oneshot(form_post(
            "/cart/checkout",
            "email=nope&zip_code=abc&credit_card_number=1234",
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body = body_text(response).await;
    for field in [
        "email",
        "zip_code",
        "street_address",
        "credit_card_number",
        "credit_card_cvv",
    ] {
        assert!(body.contains(field), "{field} named in {body}");
    }
    // The error page does not ask the cart service: its header shows no count rather than a wrong one.
    assert!(body.contains(">Cart</a>"), "{body}");
    assert!(!body.contains("Cart (0)"), "{body}");
}

/// A post whose body is not a form at all is refused like an invalid form, on each of the three form posts.
#[tokio::test]
async fn a_post_that_is_not_a_form_is_422_invalid_form_input() {
    for uri in ["/cart", "/setCurrency", "/cart/checkout"] {
        let request = Request::post(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::COOKIE, "shop_session-id=test-session")
            .body(Body::from("{}"))
            .unwrap();
        let response = unreachable_frontend().oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY, "{uri}");
        let body = body_text(response).await;
        assert!(body.contains("invalid form input: "), "{uri}: {body}");
        assert!(body.contains("Content-Type"), "{uri}: {body}");
    }
}

#[tokio::test]
async fn set_currency_redirects_back_and_sets_the_cookie() {
    let mut request = form_post("/setCurrency", "currency_code=JPY");
    request
        .headers_mut()
        .insert(header::REFERER, "/product/OLJCESPC7Z".parse().unwrap());
    let response = unreachable_frontend().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::FOUND);
    assert_eq!(response.headers()[header::LOCATION], "/product/OLJCESPC7Z");
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    assert!(cookie.starts_with("shop_currency=JPY"), "{cookie}");

    let invalid = unreachable_frontend()
        .oneshot(form_post("/setCurrency", "currency_code=ZZZ"))
        .await
        .unwrap();
    assert_eq!(invalid.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn read_paths_degrade_to_200_when_every_dependency_is_down() {
    let home = unreachable_frontend()
        .oneshot(Request::get("/").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(home.status(), StatusCode::OK);
    let set_cookie = home.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(set_cookie.starts_with("shop_session-id="), "{set_cookie}");
    assert!(body_text(home).await.contains("No products are available"));

    let cart = unreachable_frontend()
        .oneshot(Request::get("/cart").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(cart.status(), StatusCode::OK);
    assert!(
        body_text(cart)
            .await
            .contains("Your shopping cart is empty")
    );
}

#[tokio::test]
async fn checkout_with_checkout_down_is_a_visible_500() {
    let form = "email=a%40b.co&street_address=1+Main+St&zip_code=12345&city=X&state=CA&country=US\
                &credit_card_number=4432801561520454&credit_card_expiration_month=1\
                &credit_card_expiration_year=2090&credit_card_cvv=672";
    let response = unreachable_frontend()
        .oneshot(form_post("/cart/checkout", form))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert!(response.headers().get(REJECTED_HEADER).is_none());
}

#[tokio::test]
async fn logout_expires_the_cookies() {
    let request = Request::get("/logout")
        .header(header::COOKIE, "shop_session-id=abc; shop_currency=EUR")
        .body(Body::empty())
        .unwrap();
    let response = unreachable_frontend().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::FOUND);
    let cookies: Vec<&str> = response
        .headers()
        .get_all(header::SET_COOKIE)
        .iter()
        .map(|value| value.to_str().unwrap())
        .collect();
    assert!(
        cookies.iter().all(|cookie| cookie.contains("Max-Age=0")),
        "{cookies:?}"
    );
    assert_eq!(cookies.len(), 2);
}
