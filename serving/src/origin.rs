//! Who may open a read-only stream from a browser: the `Origin` rule shared by the agent's `/_agent/stream`, the
//! services' `/_breakers/stream` and (same-origin part) the dashboard's forms and `/ws`.
//!
//! A websocket is not bound by the browser's same-origin policy: any page the operator opens elsewhere can
//! connect to `ws://127.0.0.1:…` and read what it sends, unless the server looks at `Origin`, which a browser
//! always sends on a websocket handshake and a page cannot forge. So the streams check `Origin` rather than the
//! address they are bound to: a bound-address check cannot tell the operator's browser from a hostile page on the
//! same machine (both come from loopback), and would refuse the controller in the compose stack, which reaches
//! the services over the container network. Clients that are not browsers (the controller, `websocat`) send no
//! `Origin` and are let in; a browser is let in only from a loopback page or the server's own origin.

use http::HeaderMap;
use http::header::{HOST, ORIGIN};

/// Whether `origin` is this server's own origin (`http://<Host>` or `https://<Host>`).
pub fn is_same_origin(origin: &str, host: Option<&str>) -> bool {
    host.is_some_and(|host| {
        origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            == Some(host)
    })
}

/// Whether `origin` is a page served from this machine's loopback (`localhost`, `127.0.0.0/8`, `[::1]`), any
/// port, http or https.
pub fn is_loopback_origin(origin: &str) -> bool {
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match authority.strip_prefix('[') {
        Some(bracketed) => match bracketed.split_once(']') {
            Some((host, rest)) if rest.is_empty() || rest.starts_with(':') => host,
            _ => return false,
        },
        None => authority.split(':').next().unwrap_or(""),
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|address| address.is_loopback())
}

/// Whether a stream's handshake may go ahead: no `Origin` (not a browser), or a loopback or same-host one.
pub fn stream_origin_allowed(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let host = headers.get(HOST).and_then(|host| host.to_str().ok());
    is_loopback_origin(origin) || is_same_origin(origin, host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, host.parse().unwrap());
        if let Some(origin) = origin {
            headers.insert(ORIGIN, origin.parse().unwrap());
        }
        headers
    }

    #[test]
    fn browsers_are_let_in_only_from_loopback_or_the_same_host() {
        let host = "10.0.0.5:8081";
        for allowed in [
            None,
            Some("http://127.0.0.1:8080"),
            Some("http://localhost:8080"),
            Some("https://LOCALHOST"),
            Some("http://[::1]:8080"),
            Some("http://127.1.2.3"),
            Some("http://10.0.0.5:8081"),
        ] {
            assert!(
                stream_origin_allowed(&headers(allowed, host)),
                "{allowed:?}"
            );
        }
        for refused in [
            "https://evil.example",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://10.0.0.5:9999",
            "null",
            "file://",
            "http://[::1].evil.example",
        ] {
            assert!(
                !stream_origin_allowed(&headers(Some(refused), host)),
                "{refused}"
            );
        }
    }
}
