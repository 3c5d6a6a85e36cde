//! `tolerant agent` end to end: the binary proxies to an upstream on loopback, refuses a fault put without the token,
//! injects one put with it (token read from a file), and passes traffic through again after the fault is deleted.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

mod common;

use common::Running;
use controller::test_support::TempStore;

const TOKEN: &str = "cli-agent-token";
/// Upper bound on any one wait of this test.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// An upstream answering every request with `hello` and closing; counts nothing, needs nothing.
fn start_upstream() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                match stream.read(&mut byte) {
                    Ok(1) => head.push(byte[0]),
                    _ => break,
                }
            }
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
            );
        }
    });
    address
}

/// Sends one request with `Connection: close` and returns the whole answer.
fn request(
    address: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(WAIT_LIMIT)).unwrap();
    let authorization = token.map_or(String::new(), |token| {
        format!("Authorization: Bearer {token}\r\n")
    });
    let text = format!(
        "{method} {path} HTTP/1.1\r\nHost: test\r\n{authorization}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// The address after `http://` on the line of the agent's output that starts with `prefix`.
fn address_after(line: &str, prefix: &str) -> Option<SocketAddr> {
    let rest = line.strip_prefix(prefix)?;
    rest.split(['/', ' ']).next()?.parse().ok()
}

#[test]
fn the_agent_binary_proxies_and_injects_only_with_the_token() {
    let upstream = start_upstream();
    let scratch = TempStore::new("cli-agent");
    let token_file = scratch.dir().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();

    let child = Command::new(env!("CARGO_BIN_EXE_tolerant"))
        .args([
            "agent",
            "--listen",
            "127.0.0.1:0",
            "--control",
            "127.0.0.1:0",
            "--threads",
            "2",
        ])
        .arg("--upstream")
        .arg(format!("http://{upstream}"))
        .arg("--token-file")
        .arg(&token_file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env_remove("TOLERANT_TOKEN")
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let stdout = running.0.stdout.take().unwrap();
    let (lines_sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_sender.send(line).is_err() {
                return;
            }
        }
    });
    let (mut proxy, mut control) = (None, None);
    while proxy.is_none() || control.is_none() {
        let line = lines
            .recv_timeout(WAIT_LIMIT)
            .expect("the agent did not print its addresses");
        proxy = proxy.or_else(|| address_after(&line, "tolerant agent: proxy http://"));
        control = control.or_else(|| address_after(&line, "tolerant agent: control http://"));
    }
    let (proxy, control) = (proxy.unwrap(), control.unwrap());

    let passed = request(proxy, "GET", "/checkout", None, "");
    assert!(passed.starts_with("HTTP/1.1 200 OK\r\n"), "{passed}");
    assert!(passed.ends_with("hello"), "{passed}");

    let fault = r#"{"kind":"error","status":503,"rate":1.0,"body":"injected"}"#;
    let refused = request(
        control,
        "PUT",
        "/_agent/faults/down",
        Some("wrong-token"),
        fault,
    );
    assert!(refused.starts_with("HTTP/1.1 401 "), "{refused}");
    let still_passes = request(proxy, "GET", "/checkout", None, "");
    assert!(
        still_passes.starts_with("HTTP/1.1 200 OK\r\n"),
        "{still_passes}"
    );

    let put = request(control, "PUT", "/_agent/faults/down", Some(TOKEN), fault);
    assert!(put.starts_with("HTTP/1.1 201 "), "{put}");
    let injected = request(proxy, "GET", "/checkout", None, "");
    assert!(injected.starts_with("HTTP/1.1 503 "), "{injected}");
    assert!(
        injected.contains("x-tolerant-injected: error\r\n"),
        "{injected}"
    );
    assert!(injected.ends_with("injected"), "{injected}");

    let deleted = request(control, "DELETE", "/_agent/faults/down", Some(TOKEN), "");
    assert!(deleted.starts_with("HTTP/1.1 20"), "{deleted}");
    let passes_again = request(proxy, "GET", "/checkout", None, "");
    assert!(passes_again.ends_with("hello"), "{passes_again}");

    let metrics = request(control, "GET", "/metrics", None, "");
    assert!(
        metrics.contains("tolerant_agent_faults_injected_total{kind=\"error\"} 1\n"),
        "{metrics}"
    );
}
