//! [`CookieJar`]: one shopper's cookies, taken from `Set-Cookie` and sent back on every request like a browser's.
//! Shared by the boutique's own load generator and the controller's load driver.

use http::HeaderMap;
use http::header::{self, HeaderValue};

/// Cookies a shopper holds (name → value, in the order first set), and the `Cookie` header they make.
#[derive(Debug, Default, Clone)]
pub struct CookieJar {
    cookies: Vec<(String, String)>,
    /// The `Cookie` header value, rebuilt only when a cookie changes.
    header: Option<HeaderValue>,
}

impl CookieJar {
    /// Takes every `Set-Cookie` header of a response into the jar. A cookie with `Max-Age` zero or negative, or
    /// with an empty value, is removed.
    pub fn store(&mut self, headers: &HeaderMap) {
        let mut changed = false;
        for value in headers.get_all(header::SET_COOKIE) {
            let Ok(value) = value.to_str() else { continue };
            let mut parts = value.split(';');
            let Some((name, cookie_value)) = parts.next().and_then(|pair| pair.split_once('='))
            else {
                continue;
            };
            let (name, cookie_value) = (name.trim(), cookie_value.trim());
            let expired = parts.any(|attribute| {
                attribute
                    .trim()
                    .to_ascii_lowercase()
                    .strip_prefix("max-age=")
                    .is_some_and(|age| age.trim().starts_with('0') || age.trim().starts_with('-'))
            });
            match self
                .cookies
                .iter_mut()
                .find(|(existing, _)| existing == name)
            {
                _ if expired || cookie_value.is_empty() => {
                    self.cookies.retain(|(existing, _)| existing != name);
                }
                Some((_, existing)) => cookie_value.clone_into(existing),
                None => self
                    .cookies
                    .push((name.to_owned(), cookie_value.to_owned())),
            }
            changed = true;
        }
        if changed {
            self.header = (!self.cookies.is_empty()).then(|| {
                let joined = self
                    .cookies
                    .iter()
                    .map(|(name, value)| format!("{name}={value}"))
                    .collect::<Vec<_>>()
                    .join("; ");
                HeaderValue::from_str(&joined).unwrap_or(HeaderValue::from_static(""))
            });
        }
    }

    /// The value of one cookie.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(existing, _)| existing == name)
            .map(|(_, value)| value.as_str())
    }

    /// The `Cookie` header to send, if any cookie is set.
    pub fn header(&self) -> Option<&HeaderValue> {
        self.header.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_cookies(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::SET_COOKIE, HeaderValue::from_static(value));
        }
        headers
    }

    #[test]
    fn cookies_are_kept_updated_and_removed_like_a_browser_does() {
        let mut jar = CookieJar::default();
        assert_eq!(jar.header(), None);
        jar.store(&set_cookies(&[
            "shop_session-id=abc; Path=/; Max-Age=172800",
            "shop_currency=EUR; Path=/",
        ]));
        assert_eq!(jar.get("shop_session-id"), Some("abc"));
        assert_eq!(
            jar.header().unwrap(),
            "shop_session-id=abc; shop_currency=EUR"
        );

        // A new value replaces the old one in place; Max-Age=0 and an empty value remove.
        jar.store(&set_cookies(&["shop_currency=JPY"]));
        assert_eq!(
            jar.header().unwrap(),
            "shop_session-id=abc; shop_currency=JPY"
        );
        jar.store(&set_cookies(&["shop_session-id=; Max-Age=0"]));
        assert_eq!(jar.get("shop_session-id"), None);
        assert_eq!(jar.header().unwrap(), "shop_currency=JPY");
        jar.store(&set_cookies(&["shop_currency=; Path=/"]));
        assert_eq!(jar.get("shop_currency"), None);
        assert_eq!(jar.header(), None);

        // A response without cookies changes nothing.
        jar.store(&set_cookies(&["a=1"]));
        jar.store(&HeaderMap::new());
        assert_eq!(jar.header().unwrap(), "a=1");
    }
}
