//! Wrong bearer tokens on a service's admin endpoints are throttled per client address: the 11th wrong one from
//! an address within the window is answered 429 with `Retry-After`, and the right token still goes through from
//! it (and from any other address) during the lockout.

mod common;

use std::net::IpAddr;
use std::time::Duration;

use boutique::ServiceName;

/// An admin client whose connections come from `source` (a loopback address).
fn client_from(source: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .local_address(source.parse::<IpAddr>().unwrap())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_admin_tokens_are_throttled_per_address_and_the_right_one_never_is() {
    let stack = common::start(common::config()).await;
    let reset = format!("{}/_admin/reset", stack.url(ServiceName::Checkout));
    let guesser = client_from("127.0.0.2");
    let post =
        |client: &reqwest::Client, token: &str| client.post(&reset).bearer_auth(token).send();
    for guess in 0..serving::throttle::WRONG_TOKENS_PER_WINDOW {
        let answer = post(&guesser, "guess").await.unwrap();
        assert_eq!(answer.status(), 401, "wrong token {guess}");
        assert!(answer.headers().get("retry-after").is_none());
    }
    let locked = post(&guesser, "guess").await.unwrap();
    assert_eq!(locked.status(), 429);
    let seconds: u64 = locked.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=10).contains(&seconds), "{seconds}");
    assert_eq!(post(&guesser, common::TOKEN).await.unwrap().status(), 204);
    let operator = client_from("127.0.0.1");
    assert_eq!(post(&operator, common::TOKEN).await.unwrap().status(), 204);
    assert_eq!(post(&operator, "typo").await.unwrap().status(), 401);
    stack.shutdown().await;
}
