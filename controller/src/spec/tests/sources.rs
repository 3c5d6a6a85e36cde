//! `[[sources]]`: foreign breakers read with their presets, errors named.

use super::*;
use crate::test_support;

#[test]
fn breaker_sources_are_read_with_their_presets() {
    let spec = test_support::spec(&format!(
        r#"{MINIMAL}
[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9000/actuator/prometheus"
preset = "resilience4j"
interval = "250ms"
service = "orders"

[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9001/metrics"
preset = "opossum"
prefix = "shop_"

[[sources]]
kind = "prometheus"
url = "http://127.0.0.1:9002/metrics"
preset = "gauge"
metric = "pybreaker_state"
label = "breaker"
values = {{ closed = 0, open = 1, "half-open" = 2 }}

[[sources]]
kind = "push"
listen = "127.0.0.1:9400"
"#
    ));
    assert_eq!(spec.sources.len(), 4);
    let SourceSpec::Prometheus(r4j) = &spec.sources[0] else {
        panic!("{:?}", spec.sources[0]);
    };
    assert_eq!(r4j.mapping, crate::sources::StateMapping::resilience4j());
    assert_eq!(r4j.interval, Duration::from_millis(250));
    assert_eq!(r4j.service, "orders");
    assert_eq!(
        r4j.source_name(),
        "prometheus:http://127.0.0.1:9000/actuator/prometheus"
    );
    let SourceSpec::Prometheus(opossum) = &spec.sources[1] else {
        panic!("{:?}", spec.sources[1]);
    };
    assert_eq!(opossum.mapping.metric(), "shop_circuit");
    assert_eq!(
        opossum.service, "127.0.0.1-9001",
        "the URL's authority as a name"
    );
    assert_eq!(opossum.interval, DEFAULT_SCRAPE_INTERVAL);
    let SourceSpec::Prometheus(gauge) = &spec.sources[2] else {
        panic!("{:?}", spec.sources[2]);
    };
    let crate::sources::StateMapping::Value {
        metric,
        breaker_label,
        values,
    } = &gauge.mapping
    else {
        panic!("{:?}", gauge.mapping);
    };
    assert_eq!(
        (metric.as_str(), breaker_label.as_str()),
        ("pybreaker_state", "breaker")
    );
    assert!(
        values.contains(&(2.0, breaker::State::HalfOpen)),
        "{values:?}"
    );
    assert_eq!(
        spec.sources[3],
        SourceSpec::Push {
            listen: Some("127.0.0.1:9400".parse().unwrap())
        }
    );
}

#[test]
fn breaker_source_errors_name_the_field_and_line() {
    let with = |source: &str| format!("{MINIMAL}\n[[sources]]\n{source}\n");
    let line_of =
        |text: &str, needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let text = with(
        "kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"resilience4j\"\ninterval = \"10ms\"",
    );
    let (field, line, _) = error_of(&text);
    assert_eq!(
        (field.as_str(), line),
        ("sources[0].interval", line_of(&text, "10ms"))
    );
    let text = with("kind = \"prometheus\"\nurl = \"ftp://h/m\"\npreset = \"gauge\"");
    let (field, line, _) = error_of(&text);
    assert_eq!(
        (field.as_str(), line),
        ("sources[0].url", line_of(&text, "ftp"))
    );
    let text = with("kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"gauge\"");
    assert_eq!(error_of(&text).0, "sources[0].metric");
    let text = with(
        "kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"gauge\"\nmetric = \"m\"\nvalues = { shut = 0 }",
    );
    assert_eq!(error_of(&text).0, "sources[0].values.shut");
    let text = with(
        "kind = \"prometheus\"\nurl = \"http://h:1/m\"\npreset = \"resilience4j\"\nmetric = \"m\"",
    );
    assert_eq!(error_of(&text).0, "sources[0].metric");
    let text = with("kind = \"prometheus\"\nurl = \"http://h:1/m\"");
    assert_eq!(error_of(&text).0, "sources[0].preset");
    let text = with("kind = \"push\"\nlisten = \"nowhere\"");
    let (field, line, _) = error_of(&text);
    assert_eq!(
        (field.as_str(), line),
        ("sources[0].listen", line_of(&text, "nowhere"))
    );
    let text = with("kind = \"push\"\nurl = \"http://h:1/m\"");
    assert_eq!(error_of(&text).0, "sources[0].url");
    let text = with("kind = \"carrier-pigeon\"");
    assert!(
        error_of(&text).0.starts_with("sources"),
        "{:?}",
        error_of(&text)
    );
}

/// The one service-name rule holds for `[[sources]].service` (a replica's label is refused as in `[targets]`), and
/// a push source listens on every interface only when the spec says so (`listen_public = true`).
#[test]
fn source_service_names_and_public_listening_are_checked() {
    let source = |lines: &str| format!("{MINIMAL}\n[[sources]]\n{lines}\n");
    let scrape = |service: &str| {
        source(&format!(
            "kind = \"prometheus\"\nurl = \"http://127.0.0.1:9000/m\"\npreset = \"resilience4j\"\nservice = \"{service}\""
        ))
    };
    for bad in ["orders svc", "a/b", "orders#2", "caf\u{e9}"] {
        let (field, _, message) = error_of(&scrape(bad));
        assert_eq!(field, "sources[0].service", "{bad}: {message}");
    }
    test_support::spec(&scrape("orders-v2.eu_1"));

    for every in ["0.0.0.0:9400", "[::]:9400"] {
        let (field, _, message) =
            error_of(&source(&format!("kind = \"push\"\nlisten = \"{every}\"")));
        assert_eq!(field, "sources[0].listen", "{every}: {message}");
        assert!(message.contains("listen_public = true"), "{message}");
        let public = test_support::spec(&source(&format!(
            "kind = \"push\"\nlisten = \"{every}\"\nlisten_public = true"
        )));
        assert!(matches!(
            public.sources[0],
            SourceSpec::Push { listen: Some(_) }
        ));
    }
    test_support::spec(&source("kind = \"push\"\nlisten = \"127.0.0.1:9400\""));
    let (field, _, _) = error_of(&source("kind = \"push\"\nlisten_public = true"));
    assert_eq!(field, "sources[0].listen_public");
}
