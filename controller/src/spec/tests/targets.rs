//! `[targets]`: targets of your own and what they offer.

use super::*;
use crate::test_support;

#[test]
fn targets_of_your_own_say_what_they_offer() {
    let spec = test_support::spec(
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
    );
    assert_eq!(spec.load.target, "shop");
    assert_eq!(spec.offers_of("shop"), Offers::default());
    assert_eq!(spec.offers_of("upstream").offered(), vec!["reset", "pool"]);
    assert!(!spec.offers.contains_key("agent"));
    assert_eq!(spec.targets["shop"], "http://127.0.0.1:9000");
    assert_eq!(spec.fault.target, "upstream");
    // The embedded stack offers everything a Tolerant service does.
    let embedded = test_support::spec(MINIMAL);
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

#[test]
fn every_name_a_spec_gives_a_service_is_checked_by_the_one_service_id_rule() {
    let with_targets = |targets: &str, load: &str| {
        format!(
            "{}\n[targets]\n{targets}\n",
            MINIMAL.replace("users = 2", &format!("users = 2\n{load}"))
        )
    };
    let shop =
        |name: &str| format!("\"{name}\" = {{ url = \"http://127.0.0.1:9000\", offers = [] }}");

    let long = "s".repeat(crate::target::MAX_SERVICE_ID_BYTES + 1);
    let (field, _, message) = error_of(&with_targets(&shop(&long), ""));
    assert_eq!(field, format!("targets.{long}"), "{message}");
    assert!(message.contains("at most 64"), "{message}");

    let (field, _, message) = error_of(&with_targets(&shop("my shop"), ""));
    assert_eq!(field, "targets.my shop", "{message}");
    assert!(message.contains("has ` `"), "{message}");

    let (field, _, message) = error_of(&with_targets(&shop("shop#2"), ""));
    assert_eq!(field, "targets.shop#2", "{message}");
    assert!(message.contains("replica's label"), "{message}");
    assert!(
        message.contains("--compose, --swarm or --kubernetes"),
        "every way replicas are found is named: {message}"
    );

    let (field, _, message) = error_of(&with_targets(&shop("shop"), "target = \"\""));
    assert_eq!(field, "load.target", "{message}");
    assert!(message.contains("must not be empty"), "{message}");

    let fault =
        |target: &str| format!("{MINIMAL}\n[fault]\ntarget = \"{target}\"\nrates = [1.0]\n");
    let (field, _, message) = error_of(&fault("pay/ment"));
    assert_eq!(field, "fault.target", "{message}");
    assert!(message.contains("has `/`"), "{message}");

    let services =
        format!("{MINIMAL}[breaker]\nmodes = [\"enforce\"]\nservices = [\"checkout#2\"]\n");
    let (field, _, message) = error_of(&services);
    assert_eq!(field, "breaker.services[0]", "{message}");
    assert!(message.contains("replica's label"), "{message}");

    // Upper case and dots are names too, as compose and `TOLERANT_TARGETS` spell them.
    let spec = test_support::spec(&with_targets(&shop("Shop.api"), "target = \"Shop.api\""));
    assert_eq!(spec.load.target, "Shop.api");
    assert_eq!(spec.targets["Shop.api"], "http://127.0.0.1:9000");
}

/// A container fault may name one replica (`checkout#2`, on an orchestrator); the service must still be one.
#[test]
fn a_fault_may_target_one_replica_of_a_known_service() {
    let fault = |target: &str| {
        format!("{MINIMAL}\n[fault]\ntarget = \"{target}\"\nkind = \"kill\"\nrates = [1.0]\n")
    };
    let spec = ExperimentSpec::parse(&fault("checkout#2")).unwrap();
    assert_eq!(spec.fault.target.as_str(), "checkout#2");
    let (field, _, message) = error_of(&fault("nosuch#2"));
    assert_eq!(field, "fault.target", "{message}");
    assert!(message.contains("unknown target `nosuch#2`"), "{message}");
}
