//! The game day's background load: the controller's load driver on the Online Boutique mix against the
//! testbed's frontend, until stopped (at most [`GAME_DAY_LOAD_LIMIT`]), its seconds feeding the live view.

use std::time::Duration;

use controller::load::{self, LoadConfig, LoadSettings, Workload};
use tokio_util::sync::CancellationToken;

use super::{EmbeddedOperations, RunningLoad};
use crate::hub::{GameDayLoad, LiveEvent};
use crate::operations::{LoadRequest, OperationError};
use controller::clock::now_ms;

/// Longest a game day's load runs without being touched.
pub const GAME_DAY_LOAD_LIMIT: Duration = Duration::from_secs(2 * 3600);

/// Per-request client timeout of the game day's users.
const GAME_DAY_TIMEOUT: Duration = Duration::from_secs(10);

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
        *self.inner.game_day_load.lock() = Some(RunningLoad { cancel });
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
