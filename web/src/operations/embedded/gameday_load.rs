//! The game day's background load: the controller's load driver on the Online Boutique mix against the
//! testbed's frontend, until stopped (at most [`GAME_DAY_LOAD_LIMIT`]), its seconds feeding the live view. Its
//! users must fit in this process's descriptors as an experiment's do ([`users_fit`]; the load it replaces gives
//! its own back).

use std::time::Duration;

use controller::load::{self, DescriptorLimit, LoadConfig, LoadSettings, Workload};
use tokio_util::sync::CancellationToken;

use super::{EmbeddedOperations, RunningLoad};
use crate::hub::{GameDayLoad, LiveEvent};
use crate::operations::{LoadRequest, OperationError};
use controller::clock::now_ms;

/// Longest a game day's load runs without being touched.
pub const GAME_DAY_LOAD_LIMIT: Duration = Duration::from_secs(2 * 3600);

/// Per-request client timeout of the game day's users.
const GAME_DAY_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether `users` game-day users fit in `limit` with `open` descriptors in use, `replaced` of them held by the
/// load they replace (freed first). Counted at the embedded stack's cost per user, as an experiment started from
/// the dashboard is (it cannot tell whether its targets run in its process); the error names the form's `users`.
fn users_fit(
    users: u32,
    replaced: u32,
    limit: DescriptorLimit,
    open: u64,
) -> Result<(), OperationError> {
    let cost = load::EMBEDDED_COST;
    let freed = u64::from(replaced) * cost.per_user;
    load::check_users(users, cost, limit, open.saturating_sub(freed)).map_err(|error| {
        let message = error.to_string();
        OperationError::Invalid(match message.strip_prefix("load.users: ") {
            Some(rest) => format!("users: {rest}"),
            None => message,
        })
    })
}

impl EmbeddedOperations {
    pub(super) async fn set_game_day_load(
        &self,
        request: Option<LoadRequest>,
    ) -> Result<(), OperationError> {
        if request.is_some()
            && let Some(active) = self.inner.active.lock().as_ref()
            && !active.task.is_finished()
        {
            return Err(OperationError::Conflict(format!(
                "experiment {} is running and drives its own load; abort it first",
                active.id
            )));
        }
        // Checked before the running load is touched: a refused one leaves it running.
        let config = request
            .as_ref()
            .map(|request| {
                LoadConfig::try_from(LoadSettings {
                    target: self.inner.testbed.frontend,
                    workload: Workload::OnlineBoutique,
                    users: request.users,
                    think_time: (
                        Duration::from_millis(request.think_min_ms),
                        Duration::from_millis(request.think_max_ms),
                    ),
                    rate: None,
                    timeout: GAME_DAY_TIMEOUT,
                    warmup: Duration::ZERO,
                    duration: GAME_DAY_LOAD_LIMIT,
                    seed: now_ms() as u64,
                })
            })
            .transpose()
            .map_err(|error| OperationError::Invalid(error.to_string()))?;
        if let Some(request) = &request {
            let replaced = (self.inner.game_day_load.lock().as_ref()).map_or(0, |load| load.users);
            users_fit(
                request.users,
                replaced,
                load::raise_descriptor_limit(),
                load::open_descriptors().unwrap_or(0),
            )?;
        }
        self.stop_game_day_load();
        let (Some(request), Some(config)) = (request, config) else {
            return Ok(());
        };
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let ended = cancel.clone();
        let sink = self.inner.live_seconds.clone();
        let operations = self.clone();
        tokio::spawn(async move {
            load::run_until(config, Some(sink), async move { stop.cancelled().await }).await;
            // Ended by itself (its time limit): nothing replaced it, so the slot is its own.
            if !ended.is_cancelled() {
                operations.inner.game_day_load.lock().take();
                operations.publish_load(None);
            }
        });
        *self.inner.game_day_load.lock() = Some(RunningLoad {
            cancel,
            users: request.users,
        });
        self.publish_load(Some(request));
        Ok(())
    }

    /// Stops the game day's load, if any (an experiment starting, a stop from the page, shutdown).
    pub(super) fn stop_game_day_load(&self) {
        if let Some(running) = self.inner.game_day_load.lock().take() {
            running.cancel.cancel();
            self.publish_load(None);
        }
    }

    fn publish_load(&self, request: Option<LoadRequest>) {
        self.inner.hub.publish(LiveEvent::Load(GameDayLoad {
            at_ms: now_ms() as u64,
            users: request.map_or(0, |r| r.users),
            think_min_ms: request.map_or(0, |r| r.think_min_ms),
            think_max_ms: request.map_or(0, |r| r.think_max_ms),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: DescriptorLimit = DescriptorLimit {
        soft: Some(4_096),
        hard: Some(4_096),
    };

    /// 4 096 descriptors, 2 560 kept for the process and 2 a user: 768 users with nothing else open.
    #[test]
    fn game_day_users_must_fit_in_the_descriptors_naming_users() {
        assert!(users_fit(500, 0, LIMIT, 100).is_ok());
        let Err(OperationError::Invalid(message)) = users_fit(500, 0, LIMIT, 1_000) else {
            panic!("500 users in 4 096 descriptors with 1 000 open do not fit");
        };
        assert!(
            message.starts_with("users: 500 virtual users need more file descriptors"),
            "{message}"
        );
        assert!(message.contains("at most 268 users"), "{message}");
        // The load being replaced gives its descriptors back first.
        assert!(users_fit(500, 400, LIMIT, 1_000).is_ok());
        // No limit, no refusal.
        let unlimited = DescriptorLimit {
            soft: None,
            hard: None,
        };
        assert!(users_fit(500, 0, unlimited, 1_000_000).is_ok());
    }
}
