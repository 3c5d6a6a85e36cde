//! The load driver against a tiny axum server on a loopback ephemeral port that mimics the Online
//! Boutique frontend routes: the task mix, sessions, redirects and every outcome class.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Form, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use controller::load::{
    LoadSettings, PRODUCT_IDS, REJECTED_HEADER, RequestOutcome, Workload, endpoint, luhn_valid, run,
};
use parking_lot::Mutex;

#[derive(Default)]
struct Seen {
    /// Requests per route.
    routes: Mutex<HashMap<&'static str, u64>>,
    /// Requests that came without a session cookie.
    without_session: AtomicU64,
    /// Session ids handed out.
    sessions: AtomicU64,
    /// Forms the fake frontend refused (422).
    invalid_forms: AtomicU64,
}

impl Seen {
    fn hit(&self, route: &'static str, headers: &HeaderMap) -> Option<String> {
        *self.routes.lock().entry(route).or_default() += 1;
        let has_session = headers
            .get(header::COOKIE)
            .and_then(|c| c.to_str().ok())
            .is_some_and(|c| c.contains("shop_session-id="));
        if has_session {
            None
        } else {
            self.without_session.fetch_add(1, Ordering::Relaxed);
            let id = self.sessions.fetch_add(1, Ordering::Relaxed);
            Some(format!("shop_session-id=s{id}; Path=/"))
        }
    }

    fn count(&self, route: &str) -> u64 {
        self.routes.lock().get(route).copied().unwrap_or(0)
    }
}

fn page(set_cookie: Option<String>) -> Response {
    let mut response = "<html>ok</html>".into_response();
    if let Some(cookie) = set_cookie {
        response
            .headers_mut()
            .insert(header::SET_COOKIE, cookie.parse().unwrap());
    }
    response
}

fn fake_frontend(seen: Arc<Seen>) -> Router {
    Router::new()
        .route(
            "/",
            get(|State(seen): State<Arc<Seen>>, headers: HeaderMap| async move {
                page(seen.hit("GET /", &headers))
            }),
        )
        .route(
            "/product/{id}",
            get(
                |State(seen): State<Arc<Seen>>, Path(id): Path<String>, headers: HeaderMap| async move {
                    let cookie = seen.hit("GET /product", &headers);
                    if PRODUCT_IDS.contains(&id.as_str()) {
                        page(cookie)
                    } else {
                        StatusCode::NOT_FOUND.into_response()
                    }
                },
            ),
        )
        .route(
            "/setCurrency",
            post(
                |State(seen): State<Arc<Seen>>,
                 headers: HeaderMap,
                 Form(form): Form<HashMap<String, String>>| async move {
                    seen.hit("POST /setCurrency", &headers);
                    if form.get("currency_code").is_none_or(|c| c.len() != 3) {
                        seen.invalid_forms.fetch_add(1, Ordering::Relaxed);
                        return StatusCode::UNPROCESSABLE_ENTITY.into_response();
                    }
                    Redirect::to("/").into_response()
                },
            ),
        )
        .route(
            "/cart",
            get(|State(seen): State<Arc<Seen>>, headers: HeaderMap| async move {
                page(seen.hit("GET /cart", &headers))
            })
            .post(
                |State(seen): State<Arc<Seen>>,
                 headers: HeaderMap,
                 Form(form): Form<HashMap<String, String>>| async move {
                    seen.hit("POST /cart", &headers);
                    let quantity: u32 = form
                        .get("quantity")
                        .and_then(|q| q.parse().ok())
                        .unwrap_or(0);
                    let product_ok = form
                        .get("product_id")
                        .is_some_and(|id| PRODUCT_IDS.contains(&id.as_str()));
                    if !product_ok || !(1..=10).contains(&quantity) {
                        seen.invalid_forms.fetch_add(1, Ordering::Relaxed);
                        return StatusCode::UNPROCESSABLE_ENTITY.into_response();
                    }
                    Redirect::to("/cart").into_response()
                },
            ),
        )
        .route(
            "/cart/checkout",
            post(
                |State(seen): State<Arc<Seen>>,
                 headers: HeaderMap,
                 Form(form): Form<HashMap<String, String>>| async move {
                    seen.hit("POST /cart/checkout", &headers);
                    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or("");
                    let year: u32 = field("credit_card_expiration_year").parse().unwrap_or(0);
                    let month: u32 = field("credit_card_expiration_month").parse().unwrap_or(0);
                    let valid = field("email").contains('@')
                        && !field("street_address").is_empty()
                        && !field("zip_code").is_empty()
                        && !field("city").is_empty()
                        && !field("state").is_empty()
                        && !field("country").is_empty()
                        && field("credit_card_number").starts_with('4')
                        && luhn_valid(field("credit_card_number"))
                        && year * 12 + month > 2026 * 12 + 11
                        && field("credit_card_cvv").len() == 3;
                    if !valid {
                        seen.invalid_forms.fetch_add(1, Ordering::Relaxed);
                        return StatusCode::UNPROCESSABLE_ENTITY.into_response();
                    }
                    page(None)
                },
            ),
        )
        // Outcome-class routes for the fixed workload.
        .route("/ok", get(|| async { "ok" }))
        .route(
            "/fail",
            get(|| async { StatusCode::SERVICE_UNAVAILABLE }),
        )
        .route(
            "/invalid",
            get(|| async { StatusCode::UNPROCESSABLE_ENTITY }),
        )
        .route(
            "/rejected",
            get(|| async {
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(REJECTED_HEADER, "frontend->checkout")],
                    "circuit breaker frontend->checkout is open",
                )
            }),
        )
        .route(
            "/hang",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
        .with_state(seen)
}

async fn serve(seen: Arc<Seen>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, fake_frontend(seen)).await.unwrap();
    });
    addr
}

fn config(target: SocketAddr, workload: Workload) -> LoadSettings {
    LoadSettings {
        target,
        workload,
        users: 2,
        think_time: (Duration::ZERO, Duration::ZERO),
        rate: None,
        timeout: Duration::from_secs(2),
        warmup: Duration::ZERO,
        duration: Duration::from_millis(400),
        seed: 7,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boutique_mix_follows_weights_with_one_session_per_user() {
    let seen = Arc::new(Seen::default());
    let addr = serve(Arc::clone(&seen)).await;
    let users = 20;
    let report = run(
        LoadSettings {
            users,
            think_time: (Duration::from_micros(100), Duration::from_millis(2)),
            duration: Duration::from_millis(1500),
            warmup: Duration::from_millis(500),
            ..config(addr, Workload::OnlineBoutique)
        }
        .try_into()
        .expect("valid load config"),
        None,
    )
    .await;

    // Task proportions follow the weights 1:2:10:2:3:1 (of 19), within 4.5 standard errors of a
    // binomial share (the count depends on the machine's speed, the tolerance follows the count).
    let tasks: u64 = report.tasks.iter().map(|(_, n)| n).sum();
    assert!(tasks >= 200, "only {tasks} tasks");
    for ((name, count), weight) in report.tasks.iter().zip([1.0, 2.0, 10.0, 2.0, 3.0, 1.0]) {
        let share = *count as f64 / tasks as f64;
        let expected = weight / 19.0;
        let tolerance = 4.5 * (expected * (1.0 - expected) / tasks as f64).sqrt();
        assert!(
            (share - expected).abs() <= tolerance,
            "{name}: {share:.3} vs {expected:.3} ± {tolerance:.3} over {tasks} tasks"
        );
    }

    // Every request valid and answered: all ok, no client errors.
    let outcomes = report.outcomes();
    assert_eq!(outcomes.total(), outcomes.ok, "{outcomes:?}");
    assert_eq!(seen.invalid_forms.load(Ordering::Relaxed), 0);

    // Each user got one session on its first request and kept it.
    assert_eq!(
        seen.without_session.load(Ordering::Relaxed),
        u64::from(users)
    );

    // Redirects were followed: POST /cart → GET /cart, POST /setCurrency → GET /.
    let posts_to_cart = seen.count("POST /cart");
    assert!(seen.count("GET /cart") >= posts_to_cart);
    let set_currency = seen.count("POST /setCurrency");
    assert!(set_currency > 0);
    assert!(seen.count("GET /") >= set_currency + u64::from(users));

    // Checkout = addToCart then checkout: the product page and cart post precede every checkout.
    assert!(posts_to_cart >= seen.count("POST /cart/checkout"));
    assert!(seen.count("POST /cart/checkout") > 0);

    // Endpoint histograms hold the requests, in microseconds.
    let product = report.endpoint(endpoint::NAMES[endpoint::PRODUCT]).unwrap();
    let summary = product.summary();
    assert_eq!(summary.count, product.stats.outcomes.total());
    assert!(
        summary.p50_us > 0 && summary.p50_us < 1_000_000,
        "{summary:?}"
    );
    assert!(summary.p50_us <= summary.p95_us && summary.p95_us <= summary.p99_us);

    // Seconds: warmup included, the totals exclude it.
    assert_eq!(report.seconds.len(), 2);
    assert!(report.seconds[0].warmup && !report.seconds[1].warmup);
    let in_seconds: u64 = report.seconds.iter().map(|s| s.outcomes().total()).sum();
    assert!(
        in_seconds > outcomes.total(),
        "warmup requests only in the seconds"
    );
}

async fn outcomes_of(
    addr: SocketAddr,
    path: &str,
    timeout: Duration,
) -> controller::load::OutcomeCounts {
    let report = run(
        LoadSettings {
            timeout,
            ..config(
                addr,
                Workload::Fixed {
                    path: path.to_owned(),
                },
            )
        }
        .try_into()
        .expect("valid load config"),
        None,
    )
    .await;
    report.outcomes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_outcome_class_is_classified() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen).await;
    let second = Duration::from_secs(1);

    for (path, outcome) in [
        ("/ok", RequestOutcome::Ok),
        ("/fail", RequestOutcome::Failed),
        ("/invalid", RequestOutcome::ClientError),
        ("/rejected", RequestOutcome::Rejected),
    ] {
        let counts = outcomes_of(addr, path, second).await;
        assert!(counts.total() > 0, "{path}: {counts:?}");
        assert_eq!(counts.get(outcome), counts.total(), "{path}: {counts:?}");
    }

    // A hang beyond the client timeout: 2 users × 400 ms / 100 ms ≈ 8 timeouts.
    let counts = outcomes_of(addr, "/hang", Duration::from_millis(100)).await;
    assert!(counts.timeout >= 2, "{counts:?}");
    assert_eq!(counts.timeout, counts.total(), "{counts:?}");

    // Nothing listening: connection errors.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let counts = outcomes_of(closed, "/ok", second).await;
    assert!(counts.connection_error > 0, "{counts:?}");
    assert_eq!(counts.connection_error, counts.total(), "{counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_model_keeps_the_arrival_rate() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen).await;
    let report = run(
        LoadSettings {
            users: 4,
            rate: Some(200.0),
            duration: Duration::from_secs(1),
            ..config(addr, Workload::Fixed { path: "/ok".into() })
        }
        .try_into()
        .expect("valid load config"),
        None,
    )
    .await;
    let tasks = report.tasks[0].1;
    // 200 per second for one second, paced: the schedule caps the count (a loaded machine may
    // fall somewhat behind it, never ahead).
    assert!((150..=204).contains(&tasks), "{tasks} tasks");
    assert_eq!(report.outcomes().ok, report.outcomes().total());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_signal_ends_the_load_early() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen).await;
    let planned = Duration::from_secs(30);
    let report = controller::load::run_until(
        LoadSettings {
            duration: planned,
            ..config(addr, Workload::Fixed { path: "/ok".into() })
        }
        .try_into()
        .expect("valid load config"),
        None,
        tokio::time::sleep(Duration::from_millis(300)),
    )
    .await;
    assert!(report.measured < planned, "{:?}", report.measured);
    assert!(report.seconds.len() < 30, "{}", report.seconds.len());
    assert!(report.outcomes().ok > 0);
}

/// The extremes a config can be made with (absurd ones are refused naming the field, see the unit tests)
/// saturate instead of panicking on float-to-duration conversion or instant overflow: the slowest rate, the
/// longest think time, an unbounded duration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extreme_rates_and_durations_do_not_panic() {
    let seen = Arc::new(Seen::default());
    let addr = serve(seen).await;
    let year = Duration::from_secs(366 * 24 * 3600);
    for (rate, think_time, duration) in [
        (
            Some(0.01),
            (Duration::ZERO, Duration::ZERO),
            Duration::from_millis(200),
        ),
        (Some(0.01), (Duration::ZERO, Duration::ZERO), Duration::MAX),
        (None, (year, year), Duration::MAX),
    ] {
        let report = controller::load::run_until(
            LoadSettings {
                rate,
                think_time,
                duration,
                ..config(addr, Workload::Fixed { path: "/ok".into() })
            }
            .try_into()
            .expect("valid load config"),
            None,
            tokio::time::sleep(Duration::from_millis(200)),
        )
        .await;
        assert!(
            report.measured <= Duration::from_secs(60),
            "{:?}",
            report.measured
        );
    }
}
