//! The push-ingest client at the documented maximum rate of `POST /api/breaker-events` (100 events a second):
//! a batch of [`BATCH`] events every 100 ms to the dashboard, breakers flipping between open and closed.

use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

use crate::config::TOKEN;

/// Events per request.
pub const BATCH: usize = 10;
/// Requests a second: [`BATCH`] × this is the documented maximum of 100 events a second.
const PER_SECOND: u32 = 10;
/// Breakers the events name.
const BREAKERS: usize = 5;

/// One batch: event `n` onwards, each breaker taking the other state than at its previous event.
pub fn batch(first: u64) -> serde_json::Value {
    let events: Vec<serde_json::Value> = (first..first + BATCH as u64)
        .map(|n| {
            let breaker = n % BREAKERS as u64;
            let open = (n / BREAKERS as u64) % 2 == 0;
            let (from, to) = if open { ("closed", "open") } else { ("open", "closed") };
            serde_json::json!({
                "service": "pushed", "breaker": format!("p{breaker}"), "from": from, "to": to, "source": "soak",
            })
        })
        .collect();
    serde_json::Value::Array(events)
}

/// Pushes until `deadline`; prints how many batches were taken, throttled (429) and refused otherwise.
pub async fn run(dashboard: String, deadline: Instant) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let mut tick = tokio::time::interval(Duration::from_secs(1) / PER_SECOND);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let (mut taken, mut throttled, mut refused, mut next) = (0u64, 0u64, 0u64, 0u64);
    while tick.tick().await < deadline {
        let answer = http
            .post(format!("{dashboard}/api/breaker-events"))
            .bearer_auth(TOKEN)
            .json(&batch(next))
            .send()
            .await;
        next += BATCH as u64;
        match answer.map(|answer| answer.status().as_u16()) {
            Ok(200..=299) => taken += 1,
            Ok(429) => throttled += 1,
            _ => refused += 1,
        }
    }
    eprintln!("push: {taken} batches of {BATCH} taken, {throttled} throttled, {refused} refused");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_breaker_alternates_between_batches() {
        let first = batch(0);
        let second = batch(BATCH as u64);
        assert_eq!(first[0]["to"], "open");
        assert_eq!(second[0]["to"], "open");
        assert_eq!(first[5]["to"], "closed");
        assert_eq!(first[0]["breaker"], first[5]["breaker"]);
    }
}
