//! The shopper's session: the `shop_session-id` and `shop_currency` cookies, created on first visit.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::data;

/// Cookie holding the session id (Online Boutique's name).
pub const SESSION_COOKIE: &str = "shop_session-id";
/// Cookie holding the chosen currency.
pub const CURRENCY_COOKIE: &str = "shop_currency";
/// Lifetime of the cookies, 48 h like Online Boutique.
const COOKIE_MAX_AGE_SECONDS: u32 = 48 * 60 * 60;

/// The session of the current request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShopperSession {
    pub id: String,
    pub currency: String,
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

/// Session ids end up in internal URL paths (`/carts/{id}`), so only plain tokens are accepted; anything
/// else gets a fresh session.
pub fn is_valid_session_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// A `Set-Cookie` value for `name=value` on the whole site.
pub fn set_cookie(name: &str, value: &str) -> HeaderValue {
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; Max-Age={COOKIE_MAX_AGE_SECONDS}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A `Set-Cookie` value that deletes cookie `name`.
pub fn expire_cookie(name: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("{name}=; Path=/; Max-Age=0"))
        .unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Middleware: attaches a [`ShopperSession`] to the request, creating the session cookie when it is missing.
pub async fn ensure_session(mut request: Request, next: Next) -> Response {
    let headers = request.headers();
    let existing = cookie(headers, SESSION_COOKIE)
        .filter(|id| is_valid_session_id(id))
        .map(str::to_owned);
    let currency = cookie(headers, CURRENCY_COOKIE)
        .filter(|code| data::is_supported_currency(code))
        .unwrap_or(data::DEFAULT_CURRENCY)
        .to_owned();
    let (id, fresh) = match existing {
        Some(id) => (id, false),
        None => (uuid::Uuid::new_v4().to_string(), true),
    };
    request.extensions_mut().insert(ShopperSession {
        id: id.clone(),
        currency,
    });
    let mut response = next.run(request).await;
    if fresh {
        response
            .headers_mut()
            .append(header::SET_COOKIE, set_cookie(SESSION_COOKIE, &id));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_cookies_among_several() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; shop_session-id=abc; shop_currency=EUR"),
        );
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, CURRENCY_COOKIE), Some("EUR"));
        assert_eq!(cookie(&headers, "missing"), None);
    }

    #[test]
    fn session_ids_that_could_escape_a_url_path_are_refused() {
        assert!(is_valid_session_id("7c9e6679-7425-40de-944b-e07fc1f90ae7"));
        assert!(!is_valid_session_id("../carts/other"));
        assert!(!is_valid_session_id("a b"));
        assert!(!is_valid_session_id(""));
    }
}
