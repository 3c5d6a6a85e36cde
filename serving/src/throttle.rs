//! Wrong bearer tokens throttled per client address, on every API and control port of the stack (the
//! dashboard's API and login form, the agent's fault API on its control port and the sidecar's, the services'
//! admin endpoints): after [`WRONG_TOKENS_PER_WINDOW`] wrong tokens from one address within a
//! [`THROTTLE_WINDOW`] that began with the first of them, that address is locked for the rest of the window —
//! answered `429 Too Many Requests` with `Retry-After` — and a fresh window starts after it.
//!
//! - **A right token is never throttled** on the API and control ports ([`TokenThrottle::bearer`]): the token is
//!   compared first and a right one goes through even from a locked address, so a guesser on the operator's own
//!   machine (same loopback address as the controller) cannot lock the controller out of removing its faults.
//!   The login form is stricter ([`TokenThrottle::locked`] before the comparison): a locked address is refused
//!   without the token being looked at.
//! - **Addresses.** IPv4 addresses count one by one, IPv6 ones by their /64 (one host's share of a network).
//!   A request whose peer address is unknown (a router driven in-process, without [`crate::serve`]) counts
//!   under the unspecified address.
//! - **Memory.** At most [`MAX_TRACKED_ADDRESSES`] addresses are tracked; a new one beyond that evicts the one
//!   whose window began first (windows that ended are dropped first).
//!
//! The core ([`WrongTokens`]) is pure: time is an argument. [`TokenThrottle`] is its shared shell.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::ErrorBody;

/// Wrong tokens one address may send within a window before it is locked.
pub const WRONG_TOKENS_PER_WINDOW: u32 = 10;
/// The window the wrong tokens are counted in, from the first of them; the lockout lasts its rest.
pub const THROTTLE_WINDOW: Duration = Duration::from_secs(10);
/// Most client addresses tracked at once (each a few dozen bytes).
pub const MAX_TRACKED_ADDRESSES: usize = 4_096;

/// One address's window.
#[derive(Debug, Clone, Copy)]
struct Window {
    began: Instant,
    wrong: u32,
}

/// The pure core: wrong tokens per address within their window. Every method takes the time.
#[derive(Debug)]
pub struct WrongTokens {
    per_window: u32,
    window: Duration,
    cap: usize,
    windows: HashMap<IpAddr, Window>,
}

impl WrongTokens {
    /// `per_window` wrong tokens allowed per `window`, at most `cap` addresses tracked (both at least 1).
    pub fn new(per_window: u32, window: Duration, cap: usize) -> Self {
        WrongTokens {
            per_window: per_window.max(1),
            window,
            cap: cap.max(1),
            windows: HashMap::new(),
        }
    }

    /// The documented numbers ([`WRONG_TOKENS_PER_WINDOW`], [`THROTTLE_WINDOW`], [`MAX_TRACKED_ADDRESSES`]).
    pub fn documented() -> Self {
        WrongTokens::new(
            WRONG_TOKENS_PER_WINDOW,
            THROTTLE_WINDOW,
            MAX_TRACKED_ADDRESSES,
        )
    }

    /// How long `address` stays locked from `now`, if it is: once it went over its allowance in its window.
    pub fn locked(&self, address: IpAddr, now: Instant) -> Option<Duration> {
        let window = self.windows.get(&bucket(address))?;
        let ends = window.began + self.window;
        (window.wrong > self.per_window && now < ends).then(|| ends - now)
    }

    /// Counts one wrong token from `address` at `now`; returns how long the address is locked from now when this
    /// one is over the allowance (the 11th of 10 and every later one in the window), `None` while it is within.
    pub fn wrong(&mut self, address: IpAddr, now: Instant) -> Option<Duration> {
        let key = bucket(address);
        let window_length = self.window;
        if let Some(retry_after) = self.locked(address, now) {
            return Some(retry_after);
        }
        if !self.windows.contains_key(&key) && self.windows.len() >= self.cap {
            self.make_room(now);
        }
        let window = self.windows.entry(key).or_insert(Window {
            began: now,
            wrong: 0,
        });
        if now >= window.began + window_length {
            *window = Window {
                began: now,
                wrong: 0,
            };
        }
        window.wrong = window.wrong.saturating_add(1);
        if window.wrong > self.per_window {
            Some(window.began + window_length - now)
        } else {
            None
        }
    }

    /// Addresses tracked now.
    pub fn tracked(&self) -> usize {
        self.windows.len()
    }

    /// Drops the windows that ended; if none had, the one that began first.
    fn make_room(&mut self, now: Instant) {
        let window = self.window;
        self.windows.retain(|_, w| now < w.began + window);
        if self.windows.len() >= self.cap
            && let Some(oldest) = (self.windows.iter())
                .min_by_key(|(_, w)| w.began)
                .map(|(address, _)| *address)
        {
            self.windows.remove(&oldest);
        }
    }
}

/// The key an address counts under: itself for IPv4 (and IPv4-mapped IPv6), its /64 for IPv6.
fn bucket(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let segments = v6.segments();
                IpAddr::V6(Ipv6Addr::new(
                    segments[0],
                    segments[1],
                    segments[2],
                    segments[3],
                    0,
                    0,
                    0,
                    0,
                ))
            }
        },
    }
}

/// A bearer token refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Wrong, within the allowance: 401.
    Wrong,
    /// Wrong and over the allowance, or from a locked address: 429 with `Retry-After`.
    Throttled { retry_after: Duration },
}

/// The shared throttle of one server (cheap to share behind an `Arc`).
#[derive(Debug)]
pub struct TokenThrottle {
    core: Mutex<WrongTokens>,
}

impl Default for TokenThrottle {
    fn default() -> Self {
        TokenThrottle::new(WrongTokens::documented())
    }
}

impl TokenThrottle {
    pub fn new(core: WrongTokens) -> Self {
        TokenThrottle {
            core: Mutex::new(core),
        }
    }

    /// The API and control ports' rule: `right` (the token matched) passes, always; a wrong token is counted and
    /// refused, throttled once over the allowance.
    pub fn bearer(&self, address: IpAddr, right: bool, now: Instant) -> Result<(), Refused> {
        if right {
            return Ok(());
        }
        match self.core.lock().wrong(address, now) {
            Some(retry_after) => Err(Refused::Throttled { retry_after }),
            None => Err(Refused::Wrong),
        }
    }

    /// How long `address` stays locked, if it is (the login form refuses it before looking at the token).
    pub fn locked(&self, address: IpAddr, now: Instant) -> Option<Duration> {
        self.core.lock().locked(address, now)
    }

    /// Counts a wrong token from `address` (see [`WrongTokens::wrong`]).
    pub fn wrong(&self, address: IpAddr, now: Instant) -> Option<Duration> {
        self.core.lock().wrong(address, now)
    }
}

/// The client's address as [`crate::serve`] recorded it in the request's extensions; the unspecified address
/// when there is none (a router driven in-process).
pub fn client_address(extensions: &http::Extensions) -> IpAddr {
    extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED), |info| info.0.ip())
}

/// Whole seconds a client is told to wait (`Retry-After`), rounded up, at least 1.
pub fn retry_after_seconds(retry_after: Duration) -> u64 {
    (retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0)).max(1)
}

/// Puts `Retry-After` on a 429 answer.
pub fn set_retry_after(response: &mut Response, retry_after: Duration) {
    response.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(retry_after_seconds(retry_after)),
    );
}

/// The 429 answer of a throttled address: the one error body, naming the header, and `Retry-After`.
pub fn throttled_response(retry_after: Duration) -> Response {
    let seconds = retry_after_seconds(retry_after);
    let mut response = ErrorBody::new(format!(
        "too many wrong tokens from this address: try again in {seconds} s"
    ))
    .with_field("Authorization")
    .into_response_with(StatusCode::TOO_MANY_REQUESTS);
    set_retry_after(&mut response, retry_after);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_eleventh_wrong_token_in_a_window_locks_the_address_for_the_rest_of_it() {
        let t0 = Instant::now();
        let mut core = WrongTokens::new(10, 10 * S, 16);
        let guesser = ip("10.0.0.1");
        for n in 0..10 {
            assert_eq!(core.wrong(guesser, t0 + n * S / 2), None, "wrong token {n}");
        }
        assert_eq!(core.locked(guesser, t0 + 5 * S), None);
        assert_eq!(core.wrong(guesser, t0 + 6 * S), Some(4 * S));
        assert_eq!(core.locked(guesser, t0 + 7 * S), Some(3 * S));
        assert_eq!(core.wrong(guesser, t0 + 9 * S), Some(S));
        // Another address is not affected.
        assert_eq!(core.locked(ip("10.0.0.2"), t0 + 7 * S), None);
        assert_eq!(core.wrong(ip("10.0.0.2"), t0 + 7 * S), None);
        // The window ended: a fresh one.
        assert_eq!(core.locked(guesser, t0 + 10 * S), None);
        assert_eq!(core.wrong(guesser, t0 + 10 * S), None);
    }

    #[test]
    fn a_right_token_is_never_throttled() {
        let t0 = Instant::now();
        let throttle = TokenThrottle::new(WrongTokens::new(2, 10 * S, 16));
        let guesser = ip("127.0.0.1");
        assert_eq!(throttle.bearer(guesser, false, t0), Err(Refused::Wrong));
        assert_eq!(throttle.bearer(guesser, false, t0), Err(Refused::Wrong));
        assert_eq!(
            throttle.bearer(guesser, false, t0 + S),
            Err(Refused::Throttled { retry_after: 9 * S })
        );
        assert_eq!(throttle.bearer(guesser, true, t0 + S), Ok(()));
        assert_eq!(throttle.locked(guesser, t0 + S), Some(9 * S));
    }

    #[test]
    fn ipv6_counts_by_its_64_and_mapped_ipv4_as_itself() {
        let t0 = Instant::now();
        let mut core = WrongTokens::new(1, 10 * S, 16);
        assert_eq!(core.wrong(ip("2001:db8:1:2::1"), t0), None);
        assert_eq!(core.wrong(ip("2001:db8:1:2::ffff"), t0), Some(10 * S));
        assert_eq!(core.locked(ip("2001:db8:1:3::1"), t0), None);
        assert_eq!(core.wrong(ip("192.0.2.7"), t0), None);
        assert_eq!(core.locked(ip("::ffff:192.0.2.7"), t0), None);
        assert_eq!(core.wrong(ip("::ffff:192.0.2.7"), t0), Some(10 * S));
    }

    #[test]
    fn memory_is_bounded_and_the_oldest_window_goes_first() {
        let t0 = Instant::now();
        let mut core = WrongTokens::new(1, 10 * S, 3);
        core.wrong(ip("10.0.0.1"), t0);
        core.wrong(ip("10.0.0.1"), t0);
        core.wrong(ip("10.0.0.2"), t0 + S);
        core.wrong(ip("10.0.0.3"), t0 + 2 * S);
        assert!(core.locked(ip("10.0.0.1"), t0 + 3 * S).is_some());
        core.wrong(ip("10.0.0.4"), t0 + 3 * S);
        assert_eq!(core.tracked(), 3);
        assert_eq!(core.locked(ip("10.0.0.1"), t0 + 3 * S), None, "evicted");
        for n in 0..10_000u32 {
            core.wrong(IpAddr::from(n.to_be_bytes()), t0 + 4 * S);
        }
        assert_eq!(core.tracked(), 3);
        // Ended windows make room before a live one is evicted.
        let mut core = WrongTokens::new(1, 10 * S, 2);
        core.wrong(ip("10.0.0.1"), t0);
        core.wrong(ip("10.0.0.2"), t0 + 5 * S);
        core.wrong(ip("10.0.0.2"), t0 + 5 * S);
        core.wrong(ip("10.0.0.3"), t0 + 11 * S);
        assert!(core.locked(ip("10.0.0.2"), t0 + 11 * S).is_some());
    }

    #[test]
    fn retry_after_is_whole_seconds_rounded_up() {
        assert_eq!(retry_after_seconds(Duration::ZERO), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_seconds(S), 1);
        assert_eq!(retry_after_seconds(Duration::from_millis(9_001)), 10);
        let response = throttled_response(Duration::from_millis(2_500));
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::RETRY_AFTER], "3");
    }
}
