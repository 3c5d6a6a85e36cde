//! `tolerant healthcheck URL`: exit 0 when `GET URL` answers 2xx within the timeout, 1 otherwise. Container
//! images hold nothing but this binary, so their health checks run it instead of a shell and curl.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use anyhow::{Context, bail};

/// Longest time the check may take, from resolving the name to reading the status line.
const MAX_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, clap::Args)]
pub struct HealthcheckArgs {
    /// `http://HOST:PORT/PATH` (plain HTTP; HOST may be a name, resolved like any client's).
    pub url: String,
    /// How long connecting, sending and reading the answer may take (at most 60s).
    #[arg(long, default_value = "3s", value_parser = agent::api::parse_duration)]
    pub timeout: Duration,
}

/// Host, port and path of a plain `http://` URL.
fn split_url(url: &str) -> anyhow::Result<(&str, u16, &str)> {
    let rest = url
        .strip_prefix("http://")
        .with_context(|| format!("url `{url}`: only http:// URLs are checked"))?;
    let (authority, path) = match rest.find('/') {
        Some(slash) => rest.split_at(slash),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) => {
            let port = port
                .parse::<u16>()
                .with_context(|| format!("url `{url}`: `{port}` is not a port"))?;
            (host, port)
        }
        None => (authority, 80),
    };
    if host.is_empty() {
        bail!("url `{url}`: no host");
    }
    Ok((host, port, path))
}

/// The status code of `GET url`.
fn status_of(url: &str, timeout: Duration) -> anyhow::Result<u16> {
    let (host, port, path) = split_url(url)?;
    let addr = (host.trim_start_matches('[').trim_end_matches(']'), port)
        .to_socket_addrs()
        .with_context(|| format!("url `{url}`: cannot resolve `{host}`"))?
        .next()
        .with_context(|| format!("url `{url}`: `{host}` has no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("url `{url}`: cannot connect to {addr}"))?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    // One write of the whole request: a server may answer and close after the first bytes.
    let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .with_context(|| format!("url `{url}`: sending the request"))?;
    let mut head = [0u8; 64];
    let mut filled = 0;
    while filled < 12 {
        let read = stream
            .read(&mut head[filled..])
            .with_context(|| format!("url `{url}`: reading the answer"))?;
        if read == 0 {
            break;
        }
        filled += read;
    }
    let line = std::str::from_utf8(&head[..filled]).unwrap_or("");
    line.strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .with_context(|| format!("url `{url}`: the answer is not HTTP: {line:?}"))
}

pub fn run(args: HealthcheckArgs) -> anyhow::Result<()> {
    if args.timeout.is_zero() || args.timeout > MAX_TIMEOUT {
        bail!("--timeout: must be above 0 and at most 60s");
    }
    let status = status_of(&args.url, args.timeout)?;
    if !(200..300).contains(&status) {
        bail!("url `{}`: answered {status}", args.url);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_host_port_and_path() {
        assert_eq!(
            split_url("http://payment:8080/_healthz").unwrap(),
            ("payment", 8080, "/_healthz")
        );
        assert_eq!(
            split_url("http://127.0.0.1").unwrap(),
            ("127.0.0.1", 80, "/")
        );
        assert!(split_url("https://x/").is_err());
        assert!(split_url("http://x:99999/").is_err());
        assert!(split_url("http://:80/").is_err());
    }

    #[test]
    fn a_listening_server_gives_its_status_and_a_closed_port_an_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for answer in ["HTTP/1.1 200 OK\r\n\r\n", "HTTP/1.1 503 Busy\r\n\r\n"] {
                let (mut stream, _) = listener.accept().unwrap();
                let mut request = Vec::new();
                let mut chunk = [0u8; 256];
                while !request.ends_with(b"\r\n\r\n") {
                    let read = stream.read(&mut chunk).unwrap();
                    assert!(read > 0, "the request ended before its blank line");
                    request.extend_from_slice(&chunk[..read]);
                }
                assert!(request.starts_with(b"GET /_healthz HTTP/1.0\r\n"));
                stream.write_all(answer.as_bytes()).unwrap();
            }
        });
        let url = format!("http://{addr}/_healthz");
        assert_eq!(status_of(&url, Duration::from_secs(5)).unwrap(), 200);
        assert_eq!(status_of(&url, Duration::from_secs(5)).unwrap(), 503);
        server.join().unwrap();
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let closed_url = format!("http://{}/", closed.local_addr().unwrap());
        drop(closed);
        assert!(status_of(&closed_url, Duration::from_secs(5)).is_err());
    }
}
