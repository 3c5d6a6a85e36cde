//! Tests of head parsing and rewriting: request and response lines, headers, framing, hostile heads.

use super::*;

const REWRITE: Rewrite<'static> = Rewrite {
    client_ip: "10.0.0.7",
    upstream_host: "127.0.0.1:8080",
};

/// A parsed request with the method and path the decision saw.
type Decided = Option<(RequestHead, (Method, String))>;

fn request(raw: &str) -> Result<Decided, HeadError> {
    let mut out = Vec::new();
    parse_request(raw.as_bytes(), &REWRITE, &mut out, |method, path| {
        (method.clone(), path.to_owned())
    })
}

/// The forwarded head for `raw`, as text.
fn forwarded(raw: &str) -> (RequestHead, String) {
    let mut out = Vec::new();
    let (head, ()) = parse_request(raw.as_bytes(), &REWRITE, &mut out, |_, _| ())
        .unwrap()
        .unwrap();
    (head, String::from_utf8(out).unwrap())
}

fn answered(raw: &str, request_raw: &str) -> (ResponseHead, String) {
    let (request, _) = forwarded(request_raw);
    let mut out = Vec::new();
    let head = parse_response(raw.as_bytes(), &request, &mut out)
        .unwrap()
        .unwrap();
    (head, String::from_utf8(out).unwrap())
}

#[test]
fn a_plain_request_keeps_its_fields_and_gains_forwarded_for() {
    let (head, text) =
        forwarded("GET /charge?amount=5 HTTP/1.1\r\nHost: payment\r\nX-Id: a\r\n\r\nrest");
    assert_eq!(
        text,
        "GET /charge?amount=5 HTTP/1.1\r\nHost: payment\r\nX-Id: a\r\nx-forwarded-for: 10.0.0.7\r\n\r\n"
    );
    assert_eq!(
        head.head_len,
        "GET /charge?amount=5 HTTP/1.1\r\nHost: payment\r\nX-Id: a\r\n\r\n".len()
    );
    assert_eq!(head.framing, Framing::Empty);
    assert!(head.keep_alive && !head.upgrade && !head.http10 && !head.is_head_method);
    let (_, (method, path)) = request("POST /charge?amount=5 HTTP/1.1\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!((method, path.as_str()), (Method::POST, "/charge"));
}

#[test]
fn hop_by_hop_fields_are_removed_and_forwarded_for_is_folded() {
    let (_, text) = forwarded(concat!(
        "POST /x HTTP/1.1\r\nhost: a\r\nConnection: keep-alive, X-Secret-Hop\r\nx-secret-hop: 1\r\n",
        "Keep-Alive: timeout=5\r\nTE: trailers\r\nUpgrade: websocket\r\nProxy-Authorization: x\r\n",
        "X-Forwarded-For: 192.0.2.1\r\nx-forwarded-for: 192.0.2.2, \r\nExpect: 100-continue\r\n",
        "Content-Length: 3\r\n\r\n"
    ));
    assert_eq!(
        text,
        concat!(
            "POST /x HTTP/1.1\r\nhost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n",
            "x-forwarded-for: 192.0.2.1, 192.0.2.2, 10.0.0.7\r\n\r\n"
        )
    );
}

#[test]
fn targets_become_origin_form_and_host_is_filled_in() {
    let (_, text) = forwarded("GET http://shop.example/cart?x=1 HTTP/1.1\r\nHost: other\r\n\r\n");
    assert!(
        text.starts_with("GET /cart?x=1 HTTP/1.1\r\nhost: shop.example\r\n"),
        "{text}"
    );
    // Found by tests/fuzz_head.rs: a query without a path went upstream as `GET ?b HTTP/1.1`.
    let (_, text) = forwarded("GET http://shop.example?b=1 HTTP/1.1\r\n\r\n");
    assert!(
        text.starts_with("GET /?b=1 HTTP/1.1\r\nhost: shop.example\r\n"),
        "{text}"
    );
    let (_, (_, path)) = request("GET http://shop.example?b=1 HTTP/1.1\r\n\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(path, "/");
    let (_, text) = forwarded("GET HTTP://shop.example HTTP/1.1\r\n\r\n");
    assert!(
        text.starts_with("GET / HTTP/1.1\r\nhost: shop.example\r\n"),
        "{text}"
    );
    let (head, text) = forwarded("GET / HTTP/1.0\r\n\r\n");
    assert!(
        text.starts_with("GET / HTTP/1.0\r\nhost: 127.0.0.1:8080\r\n"),
        "{text}"
    );
    assert!(head.http10 && !head.keep_alive);
    assert_eq!(
        request("GET ftp://x/ HTTP/1.1\r\n\r\n"),
        Err(HeadError::Field {
            field: "request target",
            reason: "must be /path or http://host/path"
        })
    );
}

#[test]
fn request_framing_follows_rfc_9112() {
    let (head, _) = forwarded("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\n");
    assert_eq!(head.framing, Framing::Length(10));
    let (head, text) = forwarded("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n");
    assert_eq!(head.framing, Framing::Chunked);
    assert!(text.contains("Transfer-Encoding: gzip, chunked\r\n"));
    let (head, _) = forwarded("GET / HTTP/1.1\r\nConnection: close\r\n\r\n");
    assert!(!head.keep_alive);
    let refused = [
        (
            "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            "content-length",
        ),
        (
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "content-length",
        ),
        (
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n",
            "transfer-encoding",
        ),
        (
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
            "transfer-encoding",
        ),
    ];
    for (raw, field) in refused {
        match request(raw) {
            Err(HeadError::Field { field: named, .. }) => assert_eq!(named, field, "{raw}"),
            other => panic!("{raw}: {other:?}"),
        }
    }
    assert_eq!(
        request("GET / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n")
            .unwrap()
            .unwrap()
            .0
            .framing,
        Framing::Length(5)
    );
}

#[test]
fn bad_heads_get_the_right_status() {
    assert_eq!(request("GET / HTTP/1.1\r\nHost: a\r\n").unwrap(), None);
    assert_eq!(
        request("GET / HTTP/1.1\r\nBad Name: a\r\n\r\n")
            .unwrap_err()
            .status(),
        400
    );
    assert_eq!(
        request("CONNECT a:443 HTTP/1.1\r\n\r\n")
            .unwrap_err()
            .status(),
        501
    );
    let many: String = (0..=MAX_HEADERS)
        .map(|index| format!("x-{index}: v\r\n"))
        .collect();
    assert_eq!(
        request(&format!("GET / HTTP/1.1\r\n{many}\r\n"))
            .unwrap_err()
            .status(),
        431
    );
    let long = format!("GET / HTTP/1.1\r\nx: {}", "v".repeat(MAX_HEAD_BYTES));
    assert_eq!(request(&long).unwrap_err(), HeadError::TooLarge);
    let complete_but_long = format!("{long}\r\n\r\n");
    assert_eq!(
        request(&complete_but_long).unwrap_err(),
        HeadError::TooLarge
    );
}

#[test]
fn upgrades_keep_their_fields_both_ways() {
    let ask = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
    let (head, text) = forwarded(ask);
    assert!(head.upgrade);
    assert!(
        text.contains("Upgrade: websocket\r\n") && text.ends_with("connection: upgrade\r\n\r\n"),
        "{text}"
    );
    let (answer, text) = answered(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
        ask,
    );
    assert!(answer.upgraded && !answer.upstream_keep_alive);
    assert_eq!(
        text,
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nconnection: upgrade\r\n\r\n"
    );
    let mut out = Vec::new();
    let (plain, _) = forwarded("GET / HTTP/1.1\r\n\r\n");
    assert!(
        parse_response(
            b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
            &plain,
            &mut out
        )
        .is_err()
    );
}

#[test]
fn responses_lose_hop_by_hop_fields_and_tell_the_client_when_it_closes() {
    let get = "GET / HTTP/1.1\r\n\r\n";
    let (head, text) = answered(
        "HTTP/1.1 200 OK\r\nConnection: keep-alive, x-hop\r\nx-hop: 1\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\nX-Up: y\r\n\r\nok",
        get,
    );
    assert_eq!(
        text,
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Up: y\r\n\r\n"
    );
    assert_eq!(head.framing, Framing::Length(2));
    assert!(head.upstream_keep_alive && head.client_keep_alive && !head.interim);

    let (head, text) = answered("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n", get);
    assert_eq!(head.framing, Framing::UntilClose);
    assert!(!head.upstream_keep_alive && !head.client_keep_alive);
    assert!(text.ends_with("connection: close\r\n\r\n"), "{text}");

    let (head, text) = answered(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n",
        get,
    );
    assert_eq!(head.framing, Framing::Chunked);
    assert!(!text.contains("Content-Length"), "{text}");

    let (head, _) = answered(
        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n",
        get,
    );
    assert!(!head.upstream_keep_alive && head.client_keep_alive);

    let (head, _) = answered(
        "HTTP/1.1 200 OK\r\nContent-Length: 20\r\n\r\n",
        "HEAD / HTTP/1.1\r\n\r\n",
    );
    assert_eq!(head.framing, Framing::Empty);
    for status in [204, 304] {
        let (head, _) = answered(&format!("HTTP/1.1 {status} X\r\n\r\n"), get);
        assert_eq!(head.framing, Framing::Empty);
    }
    let (head, text) = answered("HTTP/1.1 100 Continue\r\n\r\n", get);
    assert!(head.interim && head.framing == Framing::Empty);
    assert_eq!(text, "HTTP/1.1 100 Continue\r\n\r\n");
    let (head, _) = answered(
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
        "GET / HTTP/1.1\r\nConnection: close\r\n\r\n",
    );
    assert!(!head.client_keep_alive);
}

#[test]
fn own_responses_are_complete_messages() {
    let mut out = Vec::new();
    write_own_response(
        &mut out,
        503,
        &[("x-tolerant-injected", "error")],
        b"down",
        true,
    );
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        concat!(
            "HTTP/1.1 503 Service Unavailable\r\nx-tolerant-injected: error\r\n",
            "content-type: text/plain; charset=utf-8\r\ncontent-length: 4\r\n\r\ndown"
        )
    );
    write_own_response(&mut out, 599, &[], b"", false);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "HTTP/1.1 599 \r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    );
}
