//! What the soak does to the stack through the dashboard, one loop so its own steps never race: Payment's fault
//! replaced every `flap_every` (error, hang or delay at a random rate), and every `mode_every` a halt with
//! requests held — a hang at rate 1, [`HELD`] charges sent straight to Payment, the halt, and a check that the
//! agent holds none 1 s later and every charge still waiting at the halt was let go by then (answered, or its
//! connection closed, which is how a released hang ends) — then the
//! breakers' mode switched.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tokio::time::{Instant, MissedTickBehavior};

use crate::config::TOKEN;
use crate::journal::{HaltRecord, Journal};
use crate::sample::agent_held;
use crate::stack::Stack;

/// The id of the flapping fault (the soak's faults all start with `soak-`; the controller's never do).
pub const FLAP_ID: &str = "soak-flap";
/// The id of the hang put before each halt.
pub const HOLD_ID: &str = "soak-hold";
/// Charges sent straight to Payment before each halt, to be held.
pub const HELD: usize = 20;
/// How long after a halt's answer the agent must hold no request, and each held charge have its answer.
pub const RELEASE_LIMIT: Duration = Duration::from_secs(1);
/// Modes switched to, in turn.
pub const MODES: [&str; 4] = ["shadow", "forced-open", "disabled", "enforce"];

/// A random fault document for Payment: error, hang or delay, rate in [0.05, 0.6], leased twice the flap period.
pub fn flapping_fault(rng: &mut SmallRng, flap_every: Duration) -> serde_json::Value {
    let rate = (rng.random_range(0.05..0.6f64) * 100.0).round() / 100.0;
    let lease = format!("{}ms", (2 * flap_every).as_millis());
    match rng.random_range(0..3) {
        0 => json!({"kind": "error", "status": 503, "rate": rate, "lease": lease}),
        1 => json!({"kind": "hang", "rate": rate, "lease": lease}),
        _ => {
            json!({"kind": "delay", "delay": "300ms", "jitter": "200ms", "rate": rate, "lease": lease})
        }
    }
}

async fn put_fault(stack: &Stack, id: &str, fault: &serde_json::Value) -> bool {
    let answer = (stack.http)
        .put(format!(
            "{}/api/faults/{id}?target=payment",
            stack.dashboard_url()
        ))
        .bearer_auth(TOKEN)
        .json(fault)
        .send()
        .await;
    answer.is_ok_and(|answer| answer.status().is_success())
}

/// Held charges, a halt, and what the agent still held after it.
async fn halt_with_held(stack: &Stack, at: Duration) -> HaltRecord {
    let mut record = HaltRecord {
        at,
        ..HaltRecord::default()
    };
    if !put_fault(
        stack,
        HOLD_ID,
        &json!({"kind": "hang", "rate": 1.0, "lease": "30s"}),
    )
    .await
    {
        record.problem = Some("the hang before the halt was refused".into());
        return record;
    }
    let mut charges = tokio::task::JoinSet::new();
    for _ in 0..HELD {
        let (http, url) = (stack.http.clone(), format!("{}/charge", stack.agent_url()));
        charges.spawn(async move {
            // Answered or closed: a released hang closes the connection without an answer (`agent::inject`).
            let _ = (http.post(url).timeout(Duration::from_secs(30)))
                .json(&json!({}))
                .send()
                .await;
        });
    }
    // Until the agent holds what is still waiting (3 s at most): a charge another fault answered (the flapping
    // one, the sweep's) was never held.
    let waited = Instant::now() + Duration::from_secs(3);
    let mut early = 0;
    while Instant::now() < waited {
        while charges.try_join_next().is_some() {
            early += 1;
        }
        record.held_before = agent_held(stack).await.unwrap_or(0);
        if record.held_before >= charges.len() as u64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    record.pending = HELD - early;
    let halted = (stack.http)
        .post(format!("{}/api/halt", stack.dashboard_url()))
        .bearer_auth(TOKEN)
        .send()
        .await;
    let halted_at = Instant::now();
    if !halted.is_ok_and(|answer| answer.status().is_success()) {
        record.problem = Some("the halt was refused".into());
    }
    let answered = std::sync::atomic::AtomicUsize::new(0);
    let _ = tokio::time::timeout_at(halted_at + RELEASE_LIMIT, async {
        while charges.join_next().await.is_some() {
            answered.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    })
    .await;
    tokio::time::sleep_until(halted_at + RELEASE_LIMIT).await;
    record.held_after = agent_held(stack).await;
    record.answered = answered.into_inner();
    record
}

async fn switch_mode(stack: &Stack, mode: &str) -> bool {
    let answer = (stack.http)
        .post(format!("{}/api/breakers", stack.dashboard_url()))
        .bearer_auth(TOKEN)
        .json(&json!({"mode": mode}))
        .send()
        .await;
    answer.is_ok_and(|answer| answer.status().is_success())
}

/// The loop, until `deadline`.
///
/// A halt takes `halts` for its length; while the sweep holds it (a kill and the watch of what the dead controller
/// left, which a halt would clear before its lease could run out) the halt waits.
pub async fn run(
    stack: Arc<Stack>,
    journal: Arc<Journal>,
    halts: Arc<tokio::sync::Mutex<()>>,
    flap_every: Duration,
    mode_every: Duration,
    seed: u64,
    deadline: Instant,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut next_flap, mut next_mode) = (started, started + mode_every);
    let (mut flaps, mut refused, mut modes) = (0u64, 0u64, 0usize);
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    while tick.tick().await < deadline {
        let now = Instant::now();
        if now >= next_mode
            && deadline - now > 2 * RELEASE_LIMIT + Duration::from_secs(3)
            && let Ok(_halting) = halts.try_lock()
        {
            next_mode += mode_every;
            journal.halted(halt_with_held(&stack, now - started).await);
            if !switch_mode(&stack, MODES[modes % MODES.len()]).await {
                journal.note(format!(
                    "the switch to {} was refused",
                    MODES[modes % MODES.len()]
                ));
            }
            modes += 1;
        }
        if now >= next_flap {
            next_flap += flap_every;
            flaps += 1;
            if !put_fault(&stack, FLAP_ID, &flapping_fault(&mut rng, flap_every)).await {
                refused += 1;
            }
        }
    }
    eprintln!(
        "chaos: {flaps} fault flaps ({refused} refused), {modes} mode switches, each after a halt"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flapping_faults_cover_every_kind_with_rates_in_range() {
        let mut rng = SmallRng::seed_from_u64(3);
        let mut kinds = std::collections::BTreeSet::new();
        for _ in 0..60 {
            let fault = flapping_fault(&mut rng, Duration::from_secs(10));
            let rate = fault["rate"].as_f64().unwrap();
            assert!((0.05..=0.6).contains(&rate), "{fault}");
            assert_eq!(fault["lease"], "20000ms");
            kinds.insert(fault["kind"].as_str().unwrap().to_owned());
        }
        assert_eq!(kinds.len(), 3, "{kinds:?}");
    }
}
