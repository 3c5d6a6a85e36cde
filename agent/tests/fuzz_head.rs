//! Fuzzing the sidecar's head parser (`agent::sidecar::head`) with proptest: request and response heads as raw
//! bytes and as near-valid heads (odd methods, targets and versions, every framing and hop-by-hop field, absurd
//! lengths, more fields or bytes than allowed), whole or cut anywhere.
//!
//! Properties: nothing panics; a refused request head gets a 400, 431 or 501; an incomplete head is waited for only
//! while it is within `MAX_HEAD_BYTES`; an accepted head lies inside the input, and what goes to the next hop is a
//! complete head that parses again the same way, without hop-by-hop fields, with framing headers that say what the
//! parser decided. `cargo test` runs proptest's default 256 cases per property; `PROPTEST_CASES=100000` is the
//! long profile (FUZZING.md).

use agent::sidecar::framing::Framing;
use agent::sidecar::head::{
    HeadError, MAX_HEAD_BYTES, MAX_HEADERS, RequestHead, Rewrite, parse_request, parse_response,
};
use http::Method;
use proptest::prelude::*;
use proptest::sample::{Index, select};

const REWRITE: Rewrite<'static> = Rewrite {
    client_ip: "10.0.0.7",
    upstream_host: "127.0.0.1:8080",
};

/// Fields no forwarded head may carry (the upgrade pair aside).
const HOP_BY_HOP: [&str; 6] = [
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "connection",
];

fn header_name() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(vec![
            "Host", "host", "Content-Length", "content-length", "Transfer-Encoding", "Connection", "Upgrade",
            "Keep-Alive", "TE", "Proxy-Connection", "Proxy-Authorization", "X-Forwarded-For", "Expect", "X-Id",
            "x-secret-hop", "", " Host", "Host ", "Hö",
        ])
        .prop_map(str::to_owned),
        1 => "[!-~]{1,20}",
    ]
    .boxed()
}

fn header_value() -> BoxedStrategy<String> {
    prop_oneof![
        4 => select(vec![
            "0", "5", "10", "-1", "+5", "5, 5", "5, 6", " 7 ", "18446744073709551615", "18446744073709551616",
            "99999999999999999999", "chunked", "gzip, chunked", "chunked, gzip", "identity", "close", "keep-alive",
            "upgrade", "keep-alive, X-Secret-Hop", "Upgrade, close", "websocket", "192.0.2.1, , 192.0.2.2",
            "100-continue", "shop.example", "", "a\u{7f}b", "\u{e9}",
        ])
        .prop_map(str::to_owned),
        2 => "[ -~]{0,40}",
        1 => (0usize..(MAX_HEAD_BYTES + 100)).prop_map(|n| "v".repeat(n)),
    ]
    .boxed()
}

fn request_line() -> BoxedStrategy<String> {
    let method = prop_oneof![
        3 => select(vec!["GET", "POST", "HEAD", "PUT", "DELETE", "CONNECT", "OPTIONS", "get", "G(T", ""])
            .prop_map(str::to_owned),
        1 => "[A-Za-z!#*+.^_|~-]{1,12}",
    ];
    let target = prop_oneof![
        3 => select(vec![
            "/", "/charge?amount=5", "/a/b?c=d&e", "*", "http://shop.example/cart?x=1", "HTTP://shop.example",
            "https://a?b", "http://", "http:///x", "ftp://x/", "x", "/%00", "//evil", "",
        ])
        .prop_map(str::to_owned),
        1 => "/[!-~]{0,60}",
        1 => (0usize..(MAX_HEAD_BYTES + 10)).prop_map(|n| format!("/{}", "p".repeat(n))),
    ];
    let version = select(vec![
        "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.9", "http/1.1", "HTTP/1", "",
    ]);
    (method, target, version)
        .prop_map(|(method, target, version)| format!("{method} {target} {version}"))
        .boxed()
}

fn status_line() -> BoxedStrategy<String> {
    let code = prop_oneof![
        3 => select(vec!["100", "101", "103", "199", "200", "204", "304", "404", "500", "999", "1000", "99", "abc", ""])
            .prop_map(str::to_owned),
        1 => (0u32..1200).prop_map(|n| n.to_string()),
    ];
    let version = select(vec!["HTTP/1.1", "HTTP/1.0", "HTTP/2", "ICY"]);
    (version, code, "[ -~]{0,20}")
        .prop_map(|(version, code, reason)| format!("{version} {code} {reason}"))
        .boxed()
}

/// A head of `first` line and fields, its line ending, then perhaps a body; cut somewhere or whole.
fn head(first: BoxedStrategy<String>) -> impl Strategy<Value = Vec<u8>> {
    (
        first,
        proptest::collection::vec((header_name(), header_value()), 0..(MAX_HEADERS + 10)),
        select(vec!["\r\n", "\n"]),
        "[ -~]{0,20}",
        proptest::option::weighted(0.3, any::<Index>()),
    )
        .prop_map(|(first, fields, newline, body, cut)| {
            let mut text = first;
            text.push_str(newline);
            for (name, value) in fields {
                text.push_str(&format!("{name}: {value}{newline}"));
            }
            text.push_str(newline);
            text.push_str(&body);
            let mut bytes = text.into_bytes();
            if let Some(cut) = cut {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            bytes
        })
}

fn any_request_input() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => proptest::collection::vec(any::<u8>(), 0..600),
        4 => head(request_line()),
    ]
}

/// The fields of a complete forwarded head, as (lower-case name, value).
fn fields_of(out: &[u8], request: bool) -> Result<Vec<(String, Vec<u8>)>, TestCaseError> {
    let mut storage = [httparse::EMPTY_HEADER; MAX_HEADERS + 8];
    let status = if request {
        httparse::Request::new(&mut storage).parse(out)
    } else {
        httparse::Response::new(&mut storage).parse(out)
    };
    let text = String::from_utf8_lossy(out);
    prop_assert!(
        matches!(status, Ok(httparse::Status::Complete(length)) if length == out.len()),
        "forwarded head does not parse whole ({status:?}): {text:?}"
    );
    Ok(storage
        .iter()
        .take_while(|field| !field.name.is_empty())
        .map(|field| (field.name.to_ascii_lowercase(), field.value.to_vec()))
        .collect())
}

fn check_request(input: &[u8]) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    let mut decided = 0;
    let result = parse_request(input, &REWRITE, &mut out, |method: &Method, path: &str| {
        decided += 1;
        (method.clone(), path.to_owned())
    });
    match result {
        Err(error) => {
            prop_assert!(matches!(error.status(), 400 | 431 | 501), "{error}");
            prop_assert_eq!(decided, 0);
        }
        Ok(None) => {
            prop_assert!(input.len() <= MAX_HEAD_BYTES, "waited past the limit");
            prop_assert_eq!(decided, 0);
        }
        Ok(Some((head, (method, path)))) => {
            prop_assert_eq!(decided, 1);
            prop_assert!(head.head_len <= input.len() && head.head_len <= MAX_HEAD_BYTES);
            prop_assert!(path.starts_with('/') || path == "*", "path {path:?}");
            prop_assert!(method != Method::CONNECT);
            prop_assert!(out.ends_with(b"\r\n\r\n"));
            let fields = fields_of(&out, true)?;
            for (name, value) in &fields {
                let upgrade_pair = head.upgrade
                    && (name == "upgrade" || (name == "connection" && value == b"upgrade"));
                prop_assert!(
                    upgrade_pair || !HOP_BY_HOP.contains(&name.as_str()) && name != "upgrade",
                    "hop-by-hop {name} forwarded: {:?}",
                    String::from_utf8_lossy(&out)
                );
            }
            let lengths: Vec<&[u8]> = fields
                .iter()
                .filter(|(n, _)| n == "content-length")
                .map(|(_, v)| v.as_slice())
                .collect();
            let chunked = fields.iter().any(|(n, _)| n == "transfer-encoding");
            match head.framing {
                Framing::Chunked => prop_assert!(chunked && lengths.is_empty()),
                Framing::Length(n) => {
                    prop_assert!(!chunked && !lengths.is_empty());
                    for value in lengths {
                        for token in value.split(|b| *b == b',') {
                            let token = std::str::from_utf8(token.trim_ascii()).unwrap_or("");
                            prop_assert_eq!(token.parse::<u64>().ok(), Some(n));
                        }
                    }
                }
                Framing::Empty => prop_assert!(!chunked && lengths.is_empty()),
                Framing::UntilClose => prop_assert!(false, "a request read until close"),
            }
            prop_assert_eq!(
                fields
                    .iter()
                    .filter(|(n, _)| n == "x-forwarded-for")
                    .count(),
                1
            );
            // The next hop reads the forwarded head the way the sidecar read the client's.
            let mut again = Vec::new();
            let reread = parse_request(&out, &REWRITE, &mut again, |m: &Method, p: &str| {
                (m.clone(), p.to_owned())
            });
            let Ok(Some((second, (method2, path2)))) = reread else {
                return Err(TestCaseError::fail(format!(
                    "forwarded head refused: {reread:?}: {:?}",
                    String::from_utf8_lossy(&out)
                )));
            };
            prop_assert_eq!(
                (
                    second.framing,
                    second.keep_alive,
                    second.http10,
                    second.upgrade
                ),
                (head.framing, head.keep_alive, head.http10, head.upgrade)
            );
            prop_assert_eq!((method2, path2), (method, path));
        }
    }
    Ok(())
}

fn request_head() -> impl Strategy<Value = RequestHead> {
    (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(keep_alive, is_head_method, upgrade, http10)| RequestHead {
            head_len: 0,
            framing: Framing::Empty,
            keep_alive: keep_alive && !http10,
            is_head_method,
            upgrade: upgrade && !http10,
            http10,
        },
    )
}

fn check_response(input: &[u8], request: &RequestHead) -> Result<(), TestCaseError> {
    let mut out = Vec::new();
    match parse_response(input, request, &mut out) {
        Err(HeadError::TooLarge) | Err(HeadError::Malformed(_)) | Err(HeadError::Field { .. }) => {}
        Err(error) => prop_assert!(false, "a response refused as {error}"),
        Ok(None) => prop_assert!(input.len() <= MAX_HEAD_BYTES, "waited past the limit"),
        Ok(Some(head)) => {
            prop_assert!(head.head_len <= input.len() && head.head_len <= MAX_HEAD_BYTES);
            prop_assert!((100..=999).contains(&head.status));
            prop_assert!(out.starts_with(b"HTTP/1.1 ") && out.ends_with(b"\r\n\r\n"));
            let fields = fields_of(&out, false)?;
            for (name, value) in &fields {
                let upgrade_pair = head.upgraded
                    && (name == "upgrade" || (name == "connection" && value == b"upgrade"));
                let close = name == "connection" && value == b"close";
                prop_assert!(
                    upgrade_pair
                        || close
                        || !HOP_BY_HOP.contains(&name.as_str()) && name != "upgrade",
                    "hop-by-hop {name} forwarded: {:?}",
                    String::from_utf8_lossy(&out)
                );
            }
            prop_assert!(!head.upgraded || request.upgrade);
            prop_assert!(!head.client_keep_alive || request.keep_alive);
            if head.interim
                || head.upgraded
                || request.is_head_method
                || head.status == 204
                || head.status == 304
            {
                prop_assert_eq!(head.framing, Framing::Empty);
            }
            let says_close = fields
                .iter()
                .any(|(n, v)| n == "connection" && v == b"close");
            if !head.interim && !head.upgraded {
                prop_assert_eq!(says_close, !head.client_keep_alive);
            }
            if head.framing == Framing::Chunked {
                prop_assert!(!fields.iter().any(|(n, _)| n == "content-length"));
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn request_heads_never_panic_and_forward_what_they_decided(input in any_request_input()) {
        check_request(&input)?;
    }

    #[test]
    fn response_heads_never_panic_and_close_what_they_cannot_delimit(
        input in prop_oneof![1 => proptest::collection::vec(any::<u8>(), 0..600), 4 => head(status_line())],
        request in request_head(),
    ) {
        check_response(&input, &request)?;
    }
}
