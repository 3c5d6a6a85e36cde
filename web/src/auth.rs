//! Who may change things: viewing is open, every mutation needs the token.
//!
//! Two ways in:
//!
//! * **API**: `Authorization: Bearer <token>`. Browsers never attach it on their own, so it needs no CSRF
//!   protection.
//! * **Browser**: `POST /login` with the token sets an `HttpOnly; SameSite=Strict` session cookie. Every
//!   mutation made with that cookie must also carry the session's CSRF token — a hidden `csrf` form field
//!   or an `x-csrf-token` header — compared in constant time, and, when the browser sends an `Origin`, it
//!   must be this server's own (`http://<Host>`). A page on another origin can neither read the CSRF token
//!   nor forge the Origin.
//!
//! Wrong tokens are throttled per client address, the login form's and the API's bearer tokens counted together
//! by the stack's one throttle ([`serving::throttle`]): after 10 wrong ones from an address within 10 s, it is
//! answered 429 with `Retry-After` for the rest of the window. A right bearer token always goes through; a login
//! from a locked address is refused without the token being looked at (right or wrong, so guesses cannot be tested
//! through the form meanwhile).

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use http::HeaderMap;
use http::header::{AUTHORIZATION, COOKIE, HOST, ORIGIN};
use parking_lot::Mutex;
use subtle::ConstantTimeEq;
use tokio::time::Instant;

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "tolerant_session";
/// Header carrying the CSRF token on `fetch` calls.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// Most sessions kept at once (the oldest is forgotten beyond this).
const MAX_SESSIONS: usize = 1_000;

/// Why a mutation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("this action needs the token: log in, or send `Authorization: Bearer <token>`")]
    Missing,
    #[error("the token is wrong")]
    WrongToken,
    #[error("the form's CSRF token is missing or does not match the session")]
    Csrf,
    #[error("the request comes from another origin")]
    Origin,
    #[error("too many wrong tokens from this address: try again in {} s", serving::throttle::retry_after_seconds(*retry_after))]
    Throttled { retry_after: Duration },
}

/// A logged-in browser session.
#[derive(Debug, Clone)]
pub struct LoginSession {
    pub id: String,
    pub csrf: String,
}

/// The token and the live sessions.
#[derive(Debug)]
pub struct Auth {
    token: String,
    sessions: Mutex<HashMap<String, (u64, String)>>,
    next_order: Mutex<u64>,
    /// Wrong tokens (logins and bearer tokens) per client address.
    throttle: serving::throttle::TokenThrottle,
}

fn random_hex(bytes: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..bytes)
        .map(|_| format!("{:02x}", rng.random::<u8>()))
        .collect()
}

fn equal(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The value of cookie `name` in the request, if any.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

impl Auth {
    /// `token` must not be empty.
    pub fn new(token: impl Into<String>) -> Auth {
        Auth {
            token: token.into(),
            sessions: Mutex::new(HashMap::new()),
            next_order: Mutex::new(0),
            throttle: serving::throttle::TokenThrottle::default(),
        }
    }

    /// A fresh random token (64 hex digits).
    pub fn random_token() -> String {
        random_hex(32)
    }

    pub fn token_matches(&self, offered: &str) -> bool {
        !self.token.is_empty() && equal(offered, &self.token)
    }

    /// Checks the token offered from `client` and opens a session. A locked address is refused before the token
    /// is looked at (see the module docs).
    pub fn login(&self, offered: &str, client: IpAddr) -> Result<LoginSession, AuthError> {
        let now = Instant::now();
        if let Some(retry_after) = self.throttle.locked(client, now) {
            return Err(AuthError::Throttled { retry_after });
        }
        if !self.token_matches(offered) {
            return Err(match self.throttle.wrong(client, now) {
                Some(retry_after) => AuthError::Throttled { retry_after },
                None => AuthError::WrongToken,
            });
        }
        let session = LoginSession {
            id: random_hex(24),
            csrf: random_hex(24),
        };
        let mut sessions = self.sessions.lock();
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, (order, _))| *order)
                .map(|(id, _)| id.clone())
        {
            sessions.remove(&oldest);
        }
        let order = {
            let mut next = self.next_order.lock();
            *next += 1;
            *next
        };
        sessions.insert(session.id.clone(), (order, session.csrf.clone()));
        Ok(session)
    }

    pub fn logout(&self, headers: &HeaderMap) {
        if let Some(id) = cookie(headers, SESSION_COOKIE) {
            self.sessions.lock().remove(id);
        }
    }

    /// The request's session, if its cookie names a live one.
    pub fn session(&self, headers: &HeaderMap) -> Option<LoginSession> {
        let id = cookie(headers, SESSION_COOKIE)?;
        let sessions = self.sessions.lock();
        sessions.get(id).map(|(_, csrf)| LoginSession {
            id: id.to_owned(),
            csrf: csrf.clone(),
        })
    }

    /// Whether a mutation from `client` may go ahead: a correct bearer token (a wrong one is counted against
    /// `client`), or a session cookie with the matching CSRF token (from the form, else the `x-csrf-token`
    /// header) and a same-origin `Origin` if one is sent.
    pub fn authorize(
        &self,
        headers: &HeaderMap,
        client: IpAddr,
        form_csrf: Option<&str>,
    ) -> Result<(), AuthError> {
        if let Some(value) = headers.get(AUTHORIZATION) {
            let offered = value
                .to_str()
                .ok()
                .and_then(|value| value.strip_prefix("Bearer "))
                .ok_or(AuthError::WrongToken)?;
            let right = self.token_matches(offered.trim());
            return (self.throttle)
                .bearer(client, right, Instant::now())
                .map_err(|refused| match refused {
                    serving::throttle::Refused::Wrong => AuthError::WrongToken,
                    serving::throttle::Refused::Throttled { retry_after } => {
                        AuthError::Throttled { retry_after }
                    }
                });
        }
        let session = self.session(headers).ok_or(AuthError::Missing)?;
        check_origin(headers)?;
        let offered = form_csrf
            .filter(|token| !token.is_empty())
            .or_else(|| headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok()))
            .ok_or(AuthError::Csrf)?;
        if equal(offered, &session.csrf) {
            Ok(())
        } else {
            Err(AuthError::Csrf)
        }
    }

    /// Whether a reader (`/ws`) from `client` is someone: a live session, or a correct bearer token (a wrong one
    /// is counted against `client` and refused). `Ok(false)`: anonymous.
    pub fn reader(&self, headers: &HeaderMap, client: IpAddr) -> Result<bool, AuthError> {
        if headers.contains_key(AUTHORIZATION) {
            return self.authorize(headers, client, None).map(|()| true);
        }
        Ok(self.session(headers).is_some())
    }

    /// The `Set-Cookie` value for a new session.
    pub fn session_cookie(session: &LoginSession) -> String {
        format!(
            "{SESSION_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/",
            session.id
        )
    }

    /// The `Set-Cookie` value that ends a session.
    pub fn expired_cookie() -> String {
        format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
    }
}

/// A browser's `Origin`, when one is sent, must be this server's own (`http://<Host>`): the forms' rule, and the
/// one `/ws` applies to its handshake. No `Origin` (not a browser) passes.
pub fn check_origin(headers: &HeaderMap) -> Result<(), AuthError> {
    let Some(origin) = headers.get(ORIGIN) else {
        return Ok(());
    };
    let host = headers.get(HOST).and_then(|host| host.to_str().ok());
    match origin.to_str() {
        Ok(origin) if serving::origin::is_same_origin(origin, host) => Ok(()),
        _ => Err(AuthError::Origin),
    }
}
