//! `[targets]`: targets of your own and what they offer.

use super::*;

#[test]
fn targets_of_your_own_say_what_they_offer() {
    let spec = ExperimentSpec::parse(
        &format!(
            r#"{MINIMAL}
[fault]
target = "upstream"
rates = [1.0]

[targets]
shop = {{ url = "http://127.0.0.1:9000", offers = [] }}
upstream = {{ url = "http://127.0.0.1:9001", offers = ["pool", "reset"] }}
agent = "http://127.0.0.1:9002"
"#
        )
        .replace("users = 2", "users = 2\ntarget = \"shop\""),
    )
    .unwrap();
    assert_eq!(spec.load.target, "shop");
    assert_eq!(spec.offers_of("shop"), Offers::default());
    assert_eq!(spec.offers_of("upstream").offered(), vec!["reset", "pool"]);
    assert!(!spec.offers.contains_key("agent"));
    assert_eq!(spec.targets["shop"], "http://127.0.0.1:9000");
    assert_eq!(spec.fault.target, "upstream");
    // The embedded stack offers everything a Tolerant service does.
    let embedded = ExperimentSpec::parse(MINIMAL).unwrap();
    assert!(embedded.offers_of("payment").breaker_stream);
    assert!(embedded.offers_of("cart").cart_metrics);
    assert!(!embedded.offers_of("payment").cart_metrics);

    let with_targets = |targets: &str, load: &str| {
        format!(
            "{}\n[targets]\n{targets}\n",
            MINIMAL.replace("users = 2", &format!("users = 2\n{load}"))
        )
    };
    let text = with_targets("shop = \"http://127.0.0.1:9000\"", "target = \"shop\"");
    let (field, line, message) = error_of(&text);
    assert_eq!(field, "targets.shop", "{message}");
    assert_eq!(
        line,
        text.lines().position(|l| l.starts_with("shop")).unwrap() + 1
    );
    assert!(message.contains("offers = []"), "{message}");
    let text = with_targets(
        "shop = { url = \"http://127.0.0.1:9000\", offers = [\"teleport\"] }",
        "target = \"shop\"",
    );
    let (field, _, message) = error_of(&text);
    assert_eq!(field, "targets.shop.offers[0]", "{message}");
    let text = with_targets(
        "shop = { url = \"http://127.0.0.1:9000\" }",
        "target = \"store\"",
    );
    assert_eq!(error_of(&text).0, "load.target");
    let text = with_targets("Shop! = { url = \"http://127.0.0.1:9000\" }", "");
    assert_eq!(error_of(&text).0, "targets.Shop!");
}
