//! A replay of the stock Online Boutique load generator (Locust `locustfile.py`): the same task weights,
//! requests, form fields and redirect following, one virtual user per task with its own cookie jar.
//! Used by the task-mix test and the benchmark; the controller brings the full load driver.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rand::Rng;
use rand::rngs::SmallRng;
use rand::seq::IndexedRandom;

use crate::client::REJECTED_HEADER;
use crate::cookies::CookieJar;
use crate::data::{LOAD_GENERATOR_CURRENCIES, PRODUCT_IDS};

/// Redirects followed per request at most (Locust's FastHttpUser follows them).
const MAX_REDIRECTS: usize = 5;
/// A request not answered within this is recorded with status 0 (Locust's FastHttpUser gives up too).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The shared HTTP client of every virtual user (keep-alive pool, no cookies: each user keeps its own).
pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// A keep-alive HTTP/1 client for the load generator.
pub fn http_client() -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(agent::serve::CLIENT_IDLE_TIMEOUT)
        .build(connector)
}

/// The stock load generator's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Task {
    Index,
    SetCurrency,
    BrowseProduct,
    AddToCart,
    ViewCart,
    Checkout,
}

/// Task weights of the stock locustfile: index 1, setCurrency 2, browseProduct 10, addToCart 2,
/// viewCart 3, checkout 1.
pub const TASK_WEIGHTS: [(Task, u32); 6] = [
    (Task::Index, 1),
    (Task::SetCurrency, 2),
    (Task::BrowseProduct, 10),
    (Task::AddToCart, 2),
    (Task::ViewCart, 3),
    (Task::Checkout, 1),
];

/// One HTTP request as the user experienced it (redirects included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestRecord {
    /// Locust-style name, e.g. `POST /cart` or `GET /product/{id}`.
    pub name: &'static str,
    /// Status of the final response (0 when the request failed at the transport level).
    pub status: u16,
    pub latency: Duration,
    /// The breaker named in `x-tolerant-rejected`, if any.
    pub rejected_by: Option<String>,
}

impl RequestRecord {
    /// Whether the user got a page (2xx after redirects).
    pub fn is_ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// `application/x-www-form-urlencoded` encoding of `pairs`.
pub fn encode_form(pairs: &[(&str, String)]) -> String {
    fn encode(text: &str, out: &mut String) {
        for byte in text.bytes() {
            match byte {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                    out.push(byte as char);
                }
                b' ' => out.push('+'),
                other => out.push_str(&format!("%{other:02X}")),
            }
        }
    }
    let mut out = String::new();
    for (index, (name, value)) in pairs.iter().enumerate() {
        if index > 0 {
            out.push('&');
        }
        encode(name, &mut out);
        out.push('=');
        encode(value, &mut out);
    }
    out
}

/// A 16-digit VISA number passing Luhn, like Faker's `credit_card_number(card_type="visa")`.
pub fn visa_number(rng: &mut impl Rng) -> String {
    let mut digits: Vec<u8> = vec![4];
    while digits.len() < 15 {
        digits.push(rng.random_range(0..10));
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(position, digit)| {
            let digit = u32::from(*digit);
            if position % 2 == 0 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    digits.push(((10 - sum % 10) % 10) as u8);
    digits.iter().map(|d| char::from(b'0' + d)).collect()
}

const CITIES: [&str; 6] = [
    "Lake Jennifer",
    "New Michaelside",
    "Port Sarah",
    "East Kevin",
    "South Amanda",
    "Williamsberg",
];
const STATES: [&str; 6] = ["CA", "NY", "TX", "WA", "OR", "MA"];
const COUNTRIES: [&str; 6] = [
    "United States of America",
    "Korea, Republic of",
    "Saint Vincent and the Grenadines",
    "Germany",
    "Japan",
    "Turkey",
];
const STREETS: [&str; 4] = [
    "Main Street",
    "Oak Avenue",
    "Pine Road Suite 920",
    "Elm Court Apt. 2",
];

/// A virtual user of the stock task mix: its own cookies and random source, a shared HTTP client.
#[derive(Debug)]
pub struct VirtualUser {
    base_url: String,
    client: HttpClient,
    cookies: CookieJar,
    rng: SmallRng,
    /// The year the load generator considers current (expiry years start after it).
    current_year: i32,
    /// Shared cap on requests in flight (so connections) across users, if any.
    connection_budget: Option<std::sync::Arc<tokio::sync::Semaphore>>,
}

impl VirtualUser {
    /// A user of the shop at `base_url` (e.g. `http://127.0.0.1:8080`).
    pub fn new(
        base_url: impl Into<String>,
        client: HttpClient,
        rng: SmallRng,
        current_year: i32,
    ) -> Self {
        VirtualUser {
            base_url: base_url.into(),
            client,
            cookies: CookieJar::default(),
            rng,
            current_year,
            connection_budget: None,
        }
    }

    /// Shares `budget` with other users: at most that many requests (so connections) in flight at once;
    /// the wait for a slot counts in the recorded latency.
    pub fn with_connection_budget(
        mut self,
        budget: std::sync::Arc<tokio::sync::Semaphore>,
    ) -> Self {
        self.connection_budget = Some(budget);
        self
    }

    /// The user's cookies.
    pub fn cookies(&self) -> &CookieJar {
        &self.cookies
    }

    /// Draws the next task by the stock weights.
    pub fn pick_task(&mut self) -> Task {
        let total: u32 = TASK_WEIGHTS.iter().map(|(_, weight)| weight).sum();
        let mut draw = self.rng.random_range(0..total);
        for (task, weight) in TASK_WEIGHTS {
            if draw < weight {
                return task;
            }
            draw -= weight;
        }
        Task::BrowseProduct
    }

    /// Draws a think time uniformly in `[min, max]`.
    pub fn think_time(&mut self, min: Duration, max: Duration) -> Duration {
        if max <= min {
            return min;
        }
        let span = (max - min).as_micros() as u64;
        min + Duration::from_micros(self.rng.random_range(0..=span))
    }

    /// `on_start`: visits `/`.
    pub async fn on_start(&mut self) -> Vec<RequestRecord> {
        vec![self.get("GET /", "/").await]
    }

    /// Runs one task, returning one record per HTTP request it made.
    pub async fn run(&mut self, task: Task) -> Vec<RequestRecord> {
        match task {
            Task::Index => vec![self.get("GET /", "/").await],
            Task::SetCurrency => {
                let code = *LOAD_GENERATOR_CURRENCIES
                    .choose(&mut self.rng)
                    .unwrap_or(&"USD");
                vec![
                    self.post(
                        "POST /setCurrency",
                        "/setCurrency",
                        &[("currency_code", code.to_owned())],
                    )
                    .await,
                ]
            }
            Task::BrowseProduct => {
                let product = self.random_product();
                vec![
                    self.get("GET /product/{id}", &format!("/product/{product}"))
                        .await,
                ]
            }
            Task::ViewCart => vec![self.get("GET /cart", "/cart").await],
            Task::AddToCart => self.add_to_cart().await,
            Task::Checkout => {
                let mut records = self.add_to_cart().await;
                let form = self.checkout_form();
                records.push(
                    self.post("POST /cart/checkout", "/cart/checkout", &form)
                        .await,
                );
                records
            }
        }
    }

    fn random_product(&mut self) -> &'static str {
        PRODUCT_IDS
            .choose(&mut self.rng)
            .copied()
            .unwrap_or(PRODUCT_IDS[0])
    }

    async fn add_to_cart(&mut self) -> Vec<RequestRecord> {
        let product = self.random_product();
        let quantity: u32 = self.rng.random_range(1..=10);
        let page = self
            .get("GET /product/{id}", &format!("/product/{product}"))
            .await;
        let add = self
            .post(
                "POST /cart",
                "/cart",
                &[
                    ("product_id", product.to_owned()),
                    ("quantity", quantity.to_string()),
                ],
            )
            .await;
        vec![page, add]
    }

    /// The checkout form exactly as the stock locustfile fills it (Faker values replaced by seeded ones).
    pub fn checkout_form(&mut self) -> Vec<(&'static str, String)> {
        let rng = &mut self.rng;
        let user: u32 = rng.random_range(0..1_000_000);
        let email = format!("user{user}@example.org");
        let street = format!(
            "{} {}",
            rng.random_range(1..10_000),
            STREETS.choose(rng).copied().unwrap_or(STREETS[0])
        );
        let zip = format!("{:05}", rng.random_range(0..100_000));
        let city = CITIES.choose(rng).copied().unwrap_or(CITIES[0]).to_owned();
        let state = STATES.choose(rng).copied().unwrap_or(STATES[0]).to_owned();
        let country = COUNTRIES
            .choose(rng)
            .copied()
            .unwrap_or(COUNTRIES[0])
            .to_owned();
        let card = visa_number(rng);
        let month: u32 = rng.random_range(1..=12);
        let first_year = self.current_year + 1;
        let year: i32 = rng.random_range(first_year..=first_year + 70);
        let cvv: u32 = rng.random_range(100..=999);
        vec![
            ("email", email),
            ("street_address", street),
            ("zip_code", zip),
            ("city", city),
            ("state", state),
            ("country", country),
            ("credit_card_number", card),
            ("credit_card_expiration_month", month.to_string()),
            ("credit_card_expiration_year", year.to_string()),
            ("credit_card_cvv", cvv.to_string()),
        ]
    }

    async fn get(&mut self, name: &'static str, path: &str) -> RequestRecord {
        self.send(name, Method::GET, path, None).await
    }

    async fn post(
        &mut self,
        name: &'static str,
        path: &str,
        form: &[(&str, String)],
    ) -> RequestRecord {
        self.send(name, Method::POST, path, Some(encode_form(form)))
            .await
    }

    async fn send(
        &mut self,
        name: &'static str,
        method: Method,
        path: &str,
        form: Option<String>,
    ) -> RequestRecord {
        let started = Instant::now();
        let mut method = method;
        let mut path = path.to_owned();
        let mut form = form;
        for _ in 0..=MAX_REDIRECTS {
            let budget = self.connection_budget.clone();
            let exchange = async {
                let _slot = match &budget {
                    Some(budget) => Some(budget.acquire().await.map_err(|_| ())?),
                    None => None,
                };
                self.exchange(&method, &path, form.take()).await
            };
            let response = match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
                Ok(Ok(response)) => response,
                Ok(Err(())) | Err(_) => {
                    return RequestRecord {
                        name,
                        status: 0,
                        latency: started.elapsed(),
                        rejected_by: None,
                    };
                }
            };
            let (status, location, rejected_by) = response;
            if status.is_redirection() {
                if let Some(location) = location {
                    path = location;
                    method = Method::GET;
                    continue;
                }
            }
            return RequestRecord {
                name,
                status: status.as_u16(),
                latency: started.elapsed(),
                rejected_by,
            };
        }
        RequestRecord {
            name,
            status: 0,
            latency: started.elapsed(),
            rejected_by: None,
        }
    }

    /// One request/response; stores cookies and drains the body.
    async fn exchange(
        &mut self,
        method: &Method,
        path: &str,
        form: Option<String>,
    ) -> Result<(StatusCode, Option<String>, Option<String>), ()> {
        let path = if path.starts_with("http://") {
            path.split_once("://")
                .and_then(|(_, rest)| rest.find('/').map(|slash| rest[slash..].to_owned()))
                .unwrap_or_else(|| "/".to_owned())
        } else {
            path.to_owned()
        };
        let mut request = Request::builder()
            .method(method.clone())
            .uri(format!("{}{}", self.base_url, path));
        if let Some(cookies) = self.cookies.header() {
            request = request.header(header::COOKIE, cookies.clone());
        }
        let body = match form {
            Some(form) => {
                request = request.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
                Full::new(Bytes::from(form))
            }
            None => Full::new(Bytes::new()),
        };
        let request = request.body(body).map_err(|_| ())?;
        let response = self.client.request(request).await.map_err(|_| ())?;
        let status = response.status();
        self.cookies.store(response.headers());
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let rejected_by = response
            .headers()
            .get(REJECTED_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        response.into_body().collect().await.map_err(|_| ())?;
        Ok((status, location, rejected_by))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::payment::luhn_valid;
    use rand::SeedableRng;

    #[test]
    fn generated_visa_numbers_pass_luhn() {
        let mut rng = SmallRng::seed_from_u64(1);
        for _ in 0..200 {
            let number = visa_number(&mut rng);
            let digits: Vec<u8> = number.bytes().map(|b| b - b'0').collect();
            assert_eq!(digits.len(), 16);
            assert_eq!(digits[0], 4);
            assert!(luhn_valid(&digits), "{number}");
        }
    }

    #[test]
    fn form_encoding_escapes_like_a_browser() {
        let encoded = encode_form(&[
            ("country", "Korea, Republic of".into()),
            ("a", "x&y".into()),
        ]);
        assert_eq!(encoded, "country=Korea%2C+Republic+of&a=x%26y");
    }

    #[test]
    fn task_draws_follow_the_weights() {
        let client = http_client();
        let mut user = VirtualUser::new(
            "http://127.0.0.1:1",
            client,
            SmallRng::seed_from_u64(3),
            2026,
        );
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..19_000 {
            *counts.entry(user.pick_task()).or_insert(0u32) += 1;
        }
        // Expected 1000 per unit of weight; allow a generous band.
        for (task, weight) in TASK_WEIGHTS {
            let count = counts[&task];
            let expected = 1000 * weight;
            assert!(
                count > expected * 8 / 10 && count < expected * 12 / 10,
                "{task:?}: {count}"
            );
        }
    }
}
