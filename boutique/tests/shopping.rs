//! A full shopping session end to end against the embedded stack, plus the admin endpoints.

mod common;

use boutique::ServiceName;
use common::{TOKEN, add_to_cart, admin, cart_stats, checkout_form, shopper, start};

#[tokio::test]
async fn a_shopper_browses_buys_and_the_cart_empties() {
    let stack = start(common::config()).await;
    let frontend = stack.url(ServiceName::Frontend);
    let client = shopper();

    let home = client.get(format!("{frontend}/")).send().await.unwrap();
    assert_eq!(home.status(), 200);
    assert!(
        home.headers()
            .get_all("set-cookie")
            .iter()
            .any(|cookie| cookie.to_str().unwrap().starts_with("shop_session-id=")),
        "the first visit creates the session cookie"
    );
    let body = home.text().await.unwrap();
    for name in ["Sunglasses", "Tank Top", "Watch", "Mug"] {
        assert!(body.contains(name), "home lists {name}");
    }

    let product = client
        .get(format!("{frontend}/product/OLJCESPC7Z"))
        .send()
        .await
        .unwrap();
    assert_eq!(product.status(), 200);
    let body = product.text().await.unwrap();
    assert!(
        body.contains("name=\"product_id\""),
        "add-to-cart form present"
    );
    assert!(body.contains("$19.99"));

    add_to_cart(&client, &frontend, "OLJCESPC7Z", 2).await;
    add_to_cart(&client, &frontend, "6E92ZMYYFZ", 1).await;

    let cart = client.get(format!("{frontend}/cart")).send().await.unwrap();
    assert_eq!(cart.status(), 200);
    let body = cart.text().await.unwrap();
    assert!(
        body.contains("Sunglasses") && body.contains("Mug"),
        "{body}"
    );
    assert!(body.contains("$39.98"), "two sunglasses priced");
    assert!(
        body.contains("name=\"credit_card_number\""),
        "checkout form present"
    );
    assert_eq!(cart_stats(&stack).await["carts"], 1);

    let currency = client
        .post(format!("{frontend}/setCurrency"))
        .header("referer", "/cart")
        .form(&[("currency_code", "EUR")])
        .send()
        .await
        .unwrap();
    assert_eq!(currency.status(), 302);
    assert_eq!(currency.headers()["location"], "/cart");
    let body = client
        .get(format!("{frontend}/cart"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        body.contains('€'),
        "prices shown in euros after setCurrency"
    );

    let order = client
        .post(format!("{frontend}/cart/checkout"))
        .form(&checkout_form())
        .send()
        .await
        .unwrap();
    assert_eq!(order.status(), 200);
    let body = order.text().await.unwrap();
    assert!(body.contains("Your order is complete"), "{body}");
    assert!(body.contains("TR-94043-"), "tracking id shown");

    let cart = client.get(format!("{frontend}/cart")).send().await.unwrap();
    let body = cart.text().await.unwrap();
    assert!(
        body.contains("Your shopping cart is empty"),
        "cart emptied after payment"
    );
    assert_eq!(cart_stats(&stack).await["carts"], 0);

    let empty = client
        .post(format!("{frontend}/cart/empty"))
        .send()
        .await
        .unwrap();
    assert_eq!(empty.status(), 302);
    assert_eq!(empty.headers()["location"], "/");
    let logout = client
        .get(format!("{frontend}/logout"))
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), 302);

    stack.shutdown().await;
}

#[tokio::test]
async fn invalid_form_input_is_a_422_and_unknown_products_404() {
    let stack = start(common::config()).await;
    let frontend = stack.url(ServiceName::Frontend);
    let client = shopper();

    for (quantity, product) in [
        ("0", "OLJCESPC7Z"),
        ("11", "OLJCESPC7Z"),
        ("two", "OLJCESPC7Z"),
        ("1", ""),
    ] {
        let response = client
            .post(format!("{frontend}/cart"))
            .form(&[("product_id", product), ("quantity", quantity)])
            .send()
            .await
            .unwrap();
        assert_eq!(
            response.status(),
            422,
            "quantity {quantity:?} product {product:?}"
        );
    }
    let unknown = client
        .post(format!("{frontend}/cart"))
        .form(&[("product_id", "NOSUCHITEM"), ("quantity", "1")])
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 422);

    let currency = client
        .post(format!("{frontend}/setCurrency"))
        .form(&[("currency_code", "XYZ")])
        .send()
        .await
        .unwrap();
    assert_eq!(currency.status(), 422);

    let mut form = checkout_form();
    form.retain(|(name, _)| *name != "email");
    let checkout = client
        .post(format!("{frontend}/cart/checkout"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(checkout.status(), 422);
    assert!(checkout.text().await.unwrap().contains("email: required"));

    let page = client
        .get(format!("{frontend}/product/NOSUCHITEM"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 404);

    stack.shutdown().await;
}

#[tokio::test]
async fn admin_endpoints_need_the_token_and_answer_outside_the_pool() {
    let stack = start(common::config()).await;
    let admin = admin();
    for service in ServiceName::ALL {
        let base = stack.url(service);
        let health = admin.get(format!("{base}/_healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200, "{service} healthz");
        let pool: serde_json::Value = admin
            .get(format!("{base}/_pool"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(pool["capacity"], 256, "{service} pool");
        let metrics = admin
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics.contains("boutique_pool_in_flight"),
            "{service} metrics"
        );
        for (name, kind, value) in [
            ("boutique_pool_capacity", "gauge", "256"),
            ("boutique_pool_queue_capacity", "gauge", "1024"),
            ("boutique_pool_rejected_total", "counter", "0"),
        ] {
            let sample = format!("# TYPE {name} {kind}\n{name}{{service=\"{service}\"}} {value}\n");
            assert!(metrics.contains(&sample), "{service} metrics: {sample}");
        }
    }
    let cart_metrics = admin
        .get(format!("{}/metrics", stack.url(ServiceName::Cart)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(cart_metrics.contains("boutique_cart_mean_items"));

    let checkout = stack.url(ServiceName::Checkout);
    let unauthorized = admin
        .put(format!("{checkout}/_admin/breakers"))
        .body("mode = \"disabled\"")
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorized.status(), 401);
    let wrong = admin
        .post(format!("{checkout}/_admin/reset"))
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    let invalid = admin
        .put(format!("{checkout}/_admin/breakers"))
        .bearer_auth(TOKEN)
        .body("[half_open]\nprobes = 0\n")
        .send()
        .await
        .unwrap();
    assert_eq!(invalid.status(), 400);
    let message = invalid.text().await.unwrap();
    assert!(message.contains("probes"), "{message}");

    let replaced = admin
        .put(format!("{checkout}/_admin/breakers"))
        .bearer_auth(TOKEN)
        .body("mode = \"forced-open\"\n")
        .send()
        .await
        .unwrap();
    assert_eq!(replaced.status(), 200);
    let snapshots: serde_json::Value = admin
        .get(format!("{checkout}/_breakers"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        snapshots
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["mode"] == "forced-open"),
        "{snapshots}"
    );

    // The game-day switch changes the mode alone: the detectors and the open window stay as configured.
    let configured = admin
        .put(format!("{checkout}/_admin/breakers"))
        .bearer_auth(TOKEN)
        .body("mode = \"enforce\"\n[trip]\nconsecutive_failures = 3\n[open]\nbase = \"7s\"\n")
        .send()
        .await
        .unwrap();
    assert_eq!(configured.status(), 200);
    let switch = |body: &'static str, token: Option<&'static str>| {
        let request = admin
            .put(format!("{checkout}/_admin/breakers/mode"))
            .header("content-type", "application/json")
            .body(body);
        let request = match token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        async move { request.send().await.unwrap() }
    };
    assert_eq!(switch(r#"{"mode":"shadow"}"#, None).await.status(), 401);
    for (body, field) in [
        (r#"{"mode":"sideways"}"#, "mode:"),
        (r#"{}"#, "mode: missing"),
        (r#"{"mode":"shadow","trip":{}}"#, "trip:"),
        ("mode = shadow", "body:"),
    ] {
        let refused = switch(body, Some(TOKEN)).await;
        assert_eq!(refused.status(), 400, "{body}");
        let message = refused.text().await.unwrap();
        assert!(message.contains(field), "{body}: {message}");
    }
    assert_eq!(
        switch(r#"{"mode":"shadow"}"#, Some(TOKEN)).await.status(),
        200
    );
    let config: serde_json::Value = admin
        .get(format!("{checkout}/_admin/breakers"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(config["config"]["mode"], "shadow", "{config}");
    assert_eq!(
        config["config"]["trip"]["consecutive_failures"], 3,
        "{config}"
    );
    assert_eq!(config["config"]["open"]["base"], "7s", "{config}");
    assert_eq!(config["lease"], serde_json::Value::Null, "{config}");

    // One breaker alone: the named one switches, the service's others keep their mode; a name the service
    // has no breaker by is refused naming `breaker`.
    let modes = || async {
        let snapshots: Vec<serde_json::Value> = admin
            .get(format!("{checkout}/_breakers"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        snapshots
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_owned(),
                    s["mode"].as_str().unwrap().to_owned(),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    assert!(modes().await.len() > 1, "checkout has several breakers");
    assert_eq!(
        switch(
            r#"{"mode":"disabled","breaker":"checkout->payment"}"#,
            Some(TOKEN)
        )
        .await
        .status(),
        200
    );
    for (name, mode) in modes().await {
        let expected = if name == "checkout->payment" {
            "disabled"
        } else {
            "shadow"
        };
        assert_eq!(mode, expected, "{name}");
    }
    let unknown = switch(
        r#"{"mode":"disabled","breaker":"checkout->nowhere"}"#,
        Some(TOKEN),
    )
    .await;
    assert_eq!(unknown.status(), 400);
    let message = unknown.text().await.unwrap();
    assert!(
        message.contains("breaker: no breaker `checkout->nowhere` in checkout")
            && message.contains("checkout->payment"),
        "{message}"
    );

    let reset = admin
        .post(format!("{checkout}/_admin/reset"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert!(reset.status().is_success());

    stack.shutdown().await;
}

#[tokio::test]
async fn one_service_runs_on_its_own_against_peer_urls() {
    let stack = start(common::config()).await;
    let peers: std::collections::BTreeMap<ServiceName, String> = ServiceName::ALL
        .into_iter()
        .map(|service| (service, stack.url(service)))
        .collect();
    let frontend = boutique::RunningService::start(ServiceName::Frontend, common::config(), peers)
        .await
        .expect("a lone frontend starts");
    let home = shopper()
        .get(format!("http://{}/", frontend.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(home.status(), 200);
    assert!(home.text().await.unwrap().contains("Sunglasses"));

    let missing = boutique::RunningService::start(
        ServiceName::Checkout,
        common::config(),
        std::collections::BTreeMap::new(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(missing, boutique::StackError::MissingPeer { .. }),
        "{missing}"
    );

    frontend.serve_until(async {}).await.unwrap();
    stack.shutdown().await;
}
