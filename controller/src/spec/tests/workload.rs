//! `[[load.tasks]]`: a workload of your own, headers and JSON bodies, errors named.

use super::*;
use crate::test_support;

#[test]
fn a_workload_of_your_own_is_read_and_its_errors_name_the_field() {
    let spec = test_support::spec(&MINIMAL.replace(
        "users = 2",
        r#"users = 2
cookies = false
on_start = [{ method = "post", path = "/login", form = { user = "u{id}" } }]
values = { sku = ["A1", "B2"], id = { from = 1, to = 9 } }

[[load.tasks]]
name = "browse"
weight = 5
requests = [{ path = "/item/{sku}" }]

[[load.tasks]]
name = "order"
critical = true
requests = [
  { path = "/item/{sku}" },
  { method = "post", path = "/orders", name = "place order", form = { sku = "{sku}", qty = "{id}" }, expect = [201] },
]"#,
    ));
    let custom = spec.load.custom.as_ref().expect("a custom workload");
    assert_eq!(custom.tasks.len(), 2);
    assert_eq!(custom.tasks[0].weight, 5);
    assert_eq!(
        custom.endpoint_names,
        vec!["POST /login", "GET /item/{sku}", "place order"]
    );
    assert_eq!(custom.on_start.len(), 1);
    assert_eq!(custom.on_start[0].method, http::Method::POST);
    assert_eq!(custom.tasks[1].requests[1].method, http::Method::POST);
    assert_eq!(custom.tasks[1].requests[1].expect, vec![201]);
    assert_eq!(custom.critical_endpoint(), Some("place order"));
    assert!(!custom.cookies);

    let with = |tasks: &str| MINIMAL.replace("users = 2", &format!("users = 2\n{tasks}"));
    let text = with(
        "values = { sku = [\"A\"] }\n[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/x/{skew}\" }]",
    );
    let (field, line, message) = error_of(&text);
    assert_eq!(field, "load.tasks[0].requests[0].path", "{message}");
    assert_eq!(
        line,
        text.lines().position(|l| l.contains("skew")).unwrap() + 1
    );
    assert!(message.contains("sku"), "{message}");
    let text = with("[[load.tasks]]\nname = \"t\"\nweight = 0\nrequests = [{ path = \"/\" }]");
    assert_eq!(error_of(&text).0, "load.tasks[0].weight");
    let text = with("[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"x\" }]");
    assert_eq!(error_of(&text).0, "load.tasks[0].requests[0].path");
    let text = with("[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/\", expect = [999] }]");
    assert_eq!(error_of(&text).0, "load.tasks[0].requests[0].expect");
    let text = with("[[load.tasks]]\nname = \"t\"\nrequests = []");
    assert_eq!(error_of(&text).0, "load.tasks[0].requests");
    let text = with(
        "mix = \"online-boutique\"\n[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/\" }]",
    );
    assert_eq!(error_of(&text).0, "load.mix");
    let text = with("cookies = false");
    assert_eq!(error_of(&text).0, "load.cookies");
    let text = with("on_start = [{ path = \"/\" }]");
    assert_eq!(error_of(&text).0, "load.on_start");
    let text = with(
        "on_start = [{ path = \"/\" }, { path = \"/{nope}\" }]\n[[load.tasks]]\nname = \"t\"\nrequests = [{ path = \"/\" }]",
    );
    assert_eq!(error_of(&text).0, "load.on_start[1].path");
}

#[test]
fn request_headers_and_json_bodies_are_checked_and_their_errors_name_the_field() {
    let with = |request: &str| {
        MINIMAL.replace(
            "users = 2",
            &format!(
                "users = 2\nvalues = {{ sku = [\"A1\"], bad = [\"a\\nb\"] }}\n[[load.tasks]]\nname = \"t\"\nrequests = [{request}]"
            ),
        )
    };
    let spec = test_support::spec(&with(
        r#"{ method = "POST", path = "/api/orders", headers = { Authorization = "Bearer t-{sku}", "X-Trace" = "1" }, json = { sku = "{sku}", qty = 2, gift = false, tags = ["a", "{sku}"], ship = { to = "x" } } }"#,
    ));
    let request = &spec.load.custom.as_ref().unwrap().tasks[0].requests[0];
    let names: Vec<&str> = request.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, vec!["authorization", "x-trace"]);
    assert!(request.json.is_some() && request.form.is_empty());

    let cases = [
        (
            r#"{ path = "/", headers = { "Bad Name" = "x" } }"#,
            "load.tasks[0].requests[0].headers.Bad Name",
            "header name",
        ),
        (
            r#"{ path = "/", headers = { Host = "x" } }"#,
            "load.tasks[0].requests[0].headers.Host",
            "load driver",
        ),
        (
            r#"{ path = "/", headers = { "X-A" = "{nope}" } }"#,
            "load.tasks[0].requests[0].headers.X-A",
            "names no value list",
        ),
        (
            r#"{ path = "/", headers = { "X-A" = "{bad}" } }"#,
            "load.tasks[0].requests[0].headers.X-A",
            "load.values.bad",
        ),
        (
            r#"{ path = "/", headers = { "X-A" = "a\u0001b" } }"#,
            "load.tasks[0].requests[0].headers.X-A",
            "not a valid header value",
        ),
        (
            r#"{ path = "/", form = { a = "b" }, json = { a = "b" } }"#,
            "load.tasks[0].requests[0].json",
            "not both",
        ),
        (
            r#"{ path = "/", json = { a = [1, { b = "{nope}" }] } }"#,
            "load.tasks[0].requests[0].json.a[1].b",
            "names no value list",
        ),
        (
            r#"{ path = "/", json = { at = 1979-05-27 } }"#,
            "load.tasks[0].requests[0].json.at",
            "date",
        ),
    ];
    for (request, field, words) in cases {
        let (at, _, message) = error_of(&with(request));
        assert_eq!(at, field, "{request}: {message}");
        assert!(message.contains(words), "{request}: {message}");
    }
    let many: Vec<String> = (0..=crate::spec::workload::MAX_HEADERS)
        .map(|i| format!("\"X-{i}\" = \"v\""))
        .collect();
    let (at, _, message) = error_of(&with(&format!(
        "{{ path = \"/\", headers = {{ {} }} }}",
        many.join(", ")
    )));
    assert_eq!(at, "load.tasks[0].requests[0].headers", "{message}");
    let long = "v".repeat(crate::spec::workload::MAX_HEADER_VALUE + 1);
    let (at, _, message) = error_of(&with(&format!(
        "{{ path = \"/\", headers = {{ \"X-Long\" = \"{long}\" }} }}"
    )));
    assert_eq!(at, "load.tasks[0].requests[0].headers.X-Long", "{message}");
    let deep = format!("{}1{}", "[".repeat(20), "]".repeat(20));
    let (at, _, message) = error_of(&with(&format!(
        "{{ path = \"/\", json = {{ d = {deep} }} }}"
    )));
    assert!(
        at.starts_with("load.tasks[0].requests[0].json.d["),
        "{at}: {message}"
    );
    assert!(message.contains("nested"), "{message}");
}

/// A path placeholder's values must be what a request path may hold: a value that would break the request line
/// (a space, CR LF and a header after it) is an error naming `load.values.NAME`, not a request sent as `GET /`.
/// Escaped values, path separators and a query's characters are taken.
#[test]
fn a_path_placeholder_value_that_breaks_the_path_is_an_error_naming_its_values() {
    let with = |values: &str, path: &str| {
        MINIMAL.replace(
            "users = 2",
            &format!(
                "users = 2\nvalues = {{ sku = {values} }}\n[[load.tasks]]\nname = \"t\"\nrequests = [{{ path = \"{path}\" }}]"
            ),
        )
    };
    for bad in [
        r#"["ok", "a b\r\nX-Evil: 1"]"#,
        r#"["a b"]"#,
        r#"["a#b"]"#,
        r#"["50%"]"#,
        r#"["é"]"#,
    ] {
        let (field, _, message) = error_of(&with(bad, "/item/{sku}"));
        assert_eq!(field, "load.values.sku", "{bad}: {message}");
        assert!(message.contains("path"), "{bad}: {message}");
    }
    for good in [
        r#"["a%20b", "A-1_b.c~d"]"#,
        r#"["x/y", "k=v&l=w", "@:;,+*!$'()"]"#,
    ] {
        let spec = test_support::spec(&with(good, "/item/{sku}?q={sku}"));
        assert!(spec.load.custom.is_some(), "{good}");
    }
    // Values only in a form or a JSON body are not held to the path's rule.
    let form = MINIMAL.replace(
        "users = 2",
        "users = 2\nvalues = { note = [\"a b\"] }\n[[load.tasks]]\nname = \"t\"\nrequests = [{ method = \"post\", path = \"/n\", form = { text = \"{note}\" } }]",
    );
    test_support::spec(&form);
}

/// A `[load.values]` entry of the wrong shape is an error naming the entry and the two shapes it may have, not
/// serde's "did not match any variant of untagged enum".
#[test]
fn a_values_entry_of_the_wrong_shape_names_the_entry() {
    for bad in [
        r#"{ from = 1, to = "x" }"#,
        r#"{ from = 1 }"#,
        r#"{ from = -1, to = 3 }"#,
        r#"{ from = 1, to = 3, step = 2 }"#,
        r#"[1, 2]"#,
        r#""A1""#,
    ] {
        let text = MINIMAL.replace(
            "users = 2",
            &format!(
                "users = 2\nvalues = {{ id = {bad} }}\n[[load.tasks]]\nname = \"t\"\nrequests = [{{ path = \"/{{id}}\" }}]"
            ),
        );
        let (field, _, message) = error_of(&text);
        assert_eq!(field, "load.values.id", "{bad}: {message}");
        assert!(!message.contains("untagged"), "{bad}: {message}");
        assert!(
            message.contains("from") && message.contains("list"),
            "{bad}: {message}"
        );
    }
}
