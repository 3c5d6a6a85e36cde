//! Helpers shared by the integration tests: a stack on ephemeral loopback ports and a shopper.

#![allow(dead_code)]

use std::time::Duration;

use boutique::{RawStackConfig, RunningStack, ServiceName, StackConfig};

pub const TOKEN: &str = "test-token";

/// The checkout form the stock load generator sends (fixed values, a VISA card valid for years).
pub fn checkout_form() -> Vec<(&'static str, String)> {
    vec![
        ("email", "someone@example.com".into()),
        ("street_address", "1600 Amphitheatre Parkway".into()),
        ("zip_code", "94043".into()),
        ("city", "Mountain View".into()),
        ("state", "CA".into()),
        ("country", "United States".into()),
        ("credit_card_number", "4432801561520454".into()),
        ("credit_card_expiration_month", "1".into()),
        ("credit_card_expiration_year", "2090".into()),
        ("credit_card_cvv", "672".into()),
    ]
}

/// A stack config with the test token for admin and agent mutations, checked.
pub fn config() -> StackConfig {
    raw_config().build().expect("a valid stack config")
}

/// The unchecked shape of [`config`], for a test to change a field before building it.
pub fn raw_config() -> RawStackConfig {
    RawStackConfig::default()
        .with_token(TOKEN)
        .expect("a valid token")
}

/// Starts the stack, bounded in time.
pub async fn start(config: StackConfig) -> RunningStack {
    tokio::time::timeout(Duration::from_secs(10), RunningStack::start(config))
        .await
        .expect("stack starts in time")
        .expect("stack starts")
}

/// A browser-like client: its own cookie store, redirects not followed (tests look at the 302s).
pub fn shopper() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

/// An admin client (no cookies).
pub fn admin() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// Adds one product to the shopper's cart, expecting the 302 to /cart.
pub async fn add_to_cart(client: &reqwest::Client, frontend: &str, product: &str, quantity: u32) {
    let response = client
        .post(format!("{frontend}/cart"))
        .form(&[
            ("product_id", product.to_owned()),
            ("quantity", quantity.to_string()),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 302, "add to cart");
    assert_eq!(response.headers()["location"], "/cart");
}

/// The state of every breaker of a service, by name.
pub async fn breaker_states(stack: &RunningStack, service: ServiceName) -> Vec<(String, String)> {
    let snapshots: serde_json::Value = admin()
        .get(format!("{}/_breakers", stack.url(service)))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    snapshots
        .as_array()
        .expect("a JSON array of snapshots")
        .iter()
        .map(|snapshot| {
            (
                snapshot["name"].as_str().unwrap_or_default().to_owned(),
                snapshot["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Puts a fault on Payment through the agent's control API.
pub async fn put_payment_fault(stack: &RunningStack, id: &str, spec: serde_json::Value) {
    let response = admin()
        .put(format!(
            "{}/_agent/faults/{id}",
            stack.url(ServiceName::Payment)
        ))
        .bearer_auth(TOKEN)
        .json(&spec)
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "fault accepted: {}",
        response.status()
    );
}

/// Reads the cart service's statistics.
pub async fn cart_stats(stack: &RunningStack) -> serde_json::Value {
    admin()
        .get(format!(
            "{}/_admin/cart-stats",
            stack.url(ServiceName::Cart)
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}
