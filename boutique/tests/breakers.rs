//! Payment failing: the breakers open, checkout fails fast with `x-tolerant-rejected`, browsing stays up,
//! carts keep their items; payment's own 4xx never trip a breaker.

mod common;

use std::time::Duration;

use boutique::ServiceName;
use common::{
    add_to_cart, breaker_states, cart_stats, checkout_form, put_payment_fault, shopper, start,
};
use futures::StreamExt;

const REJECTED: &str = "x-tolerant-rejected";

#[tokio::test]
async fn payment_failing_every_call_opens_a_breaker_and_checkout_fails_fast() {
    let stack = start(common::config()).await;
    let frontend = stack.url(ServiceName::Frontend);
    let checkout_ws = format!(
        "ws://{}/_breakers/stream",
        stack.addrs()[&ServiceName::Checkout]
    );
    let (mut transitions, _) = tokio_tungstenite::connect_async(checkout_ws.as_str())
        .await
        .expect("breaker stream connects");

    put_payment_fault(
        &stack,
        "payment-down",
        serde_json::json!({
            "kind": "error", "status": 500, "rate": 1.0,
            "match": {"method": "POST", "path_prefix": "/charge"}, "lease": "60s"
        }),
    )
    .await;

    let client = shopper();
    let mut rejected_by = None;
    let mut failures = 0;
    for _ in 0..20 {
        add_to_cart(&client, &frontend, "66VCHSJNUP", 1).await;
        let response = client
            .post(format!("{frontend}/cart/checkout"))
            .form(&checkout_form())
            .send()
            .await
            .unwrap();
        if let Some(breaker) = response.headers().get(REJECTED) {
            assert_eq!(response.status(), 503);
            rejected_by = Some(breaker.to_str().unwrap().to_owned());
            let body = response.text().await.unwrap();
            assert!(
                body.contains("circuit breaker"),
                "the user sees the rejection: {body}"
            );
            break;
        }
        assert_eq!(
            response.status(),
            500,
            "payment's 500 surfaces as a failed order"
        );
        failures += 1;
    }
    let rejected_by = rejected_by.expect("a breaker opened within 20 checkouts");
    assert!(
        rejected_by == "frontend->checkout" || rejected_by == "checkout->payment",
        "{rejected_by}"
    );
    assert!(
        failures >= 5,
        "the default breaker needs five consecutive failures, saw {failures}"
    );

    let states = breaker_states(&stack, ServiceName::Checkout).await;
    assert!(
        states.contains(&("checkout->payment".to_owned(), "open".to_owned())),
        "{states:?}"
    );
    let event = tokio::time::timeout(Duration::from_secs(5), transitions.next())
        .await
        .expect("a transition is streamed")
        .expect("stream open")
        .expect("a websocket message");
    let event: serde_json::Value = serde_json::from_str(event.to_text().unwrap()).unwrap();
    assert_eq!(event["service"], "checkout");
    assert_eq!(event["breaker"], "checkout->payment");
    assert_eq!(event["to"], "open");
    assert_eq!(event["reason"], "consecutive_failures");

    // Fails fast again, and browsing is unaffected.
    add_to_cart(&client, &frontend, "66VCHSJNUP", 1).await;
    let again = client
        .post(format!("{frontend}/cart/checkout"))
        .form(&checkout_form())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 503);
    assert!(again.headers().contains_key(REJECTED));
    let home = client.get(format!("{frontend}/")).send().await.unwrap();
    assert_eq!(home.status(), 200);
    let cart = client.get(format!("{frontend}/cart")).send().await.unwrap();
    assert_eq!(cart.status(), 200);
    assert!(
        cart.text().await.unwrap().contains("Tank Top"),
        "the cart keeps its items"
    );
    assert_eq!(cart_stats(&stack).await["carts"], 1);

    // Reset clears breakers and carts.
    for service in [
        ServiceName::Frontend,
        ServiceName::Checkout,
        ServiceName::Cart,
    ] {
        let reset = common::admin()
            .post(format!("{}/_admin/reset", stack.url(service)))
            .bearer_auth(common::TOKEN)
            .send()
            .await
            .unwrap();
        assert!(reset.status().is_success());
    }
    assert!(
        breaker_states(&stack, ServiceName::Checkout)
            .await
            .iter()
            .all(|(_, state)| state == "closed")
    );
    assert_eq!(cart_stats(&stack).await["carts"], 0);

    stack.shutdown().await;
}

#[tokio::test]
async fn payment_validation_errors_never_trip_a_breaker() {
    let stack = start(common::config()).await;
    let frontend = stack.url(ServiceName::Frontend);
    let client = shopper();
    let cases: [(&str, &str); 2] = [
        // AMEX passes Luhn and the frontend's check, but Payment accepts VISA and MasterCard only.
        ("credit_card_number", "378282246310005"),
        // Expired long ago: only Payment checks expiry.
        ("credit_card_expiration_year", "2001"),
    ];
    for round in 0..4 {
        for (field, value) in cases {
            add_to_cart(&client, &frontend, "LS4PSXUNUM", 1).await;
            let mut form = checkout_form();
            for (name, existing) in form.iter_mut() {
                if *name == field {
                    *existing = value.to_owned();
                }
            }
            let response = client
                .post(format!("{frontend}/cart/checkout"))
                .form(&form)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 422, "round {round}: {field}={value}");
            assert!(response.headers().get(REJECTED).is_none());
        }
    }
    for service in [ServiceName::Frontend, ServiceName::Checkout] {
        let states = breaker_states(&stack, service).await;
        assert!(
            states.iter().all(|(_, state)| state == "closed"),
            "{service}: {states:?}"
        );
    }
    // The cart was never emptied: no payment succeeded.
    assert_eq!(cart_stats(&stack).await["carts"], 1);
    stack.shutdown().await;
}
