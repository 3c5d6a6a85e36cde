//! The load workers of an experiment started from the dashboard: a spec with `[load] workers` gets a pool at its
//! `workers_listen` (the dashboard's token is the workers' token) for as long as the experiment runs, and the
//! live page's panel is published once a second (and once more at the end); a spec without them is said to run
//! its users in-process.

use std::future::Future;
use std::time::Duration;

use controller::clock::now_ms;
use controller::spec::ExperimentSpec;
use controller::workers::WorkerPool;

use super::EmbeddedOperations;
use crate::hub::{Hub, LiveEvent, LoadWorkers};
use crate::operations::OperationError;

/// How often the workers panel is published while the experiment runs.
const PANEL_PERIOD: Duration = Duration::from_secs(1);
/// How long the workers get to hear that the experiment is over before the pool is dropped.
const FINISH_GRACE: Duration = Duration::from_secs(5);

impl EmbeddedOperations {
    /// The pool a spec with `[load] workers` runs its users on, listening at its `workers_listen`; `None`
    /// without. A listen that fails names `load.workers_listen`.
    pub(super) async fn workers_pool(
        &self,
        spec: &ExperimentSpec,
    ) -> Result<Option<WorkerPool>, OperationError> {
        let Some(wanted) = spec.load.workers else {
            return Ok(None);
        };
        let token = self.inner.testbed.token.clone();
        let pool = WorkerPool::listen(wanted.listen, wanted.count as usize, token)
            .await
            .map_err(|error| {
                OperationError::Invalid(format!(
                    "load.workers_listen: cannot listen at {}: {error}",
                    wanted.listen
                ))
            })?;
        tracing::info!(
            "experiment waits for {} load worker(s) at {} (tolerant load-worker --controller {} --token …)",
            wanted.count,
            pool.url(),
            pool.url()
        );
        Ok(Some(pool))
    }
}

/// The panel of experiment `experiment` now: `pool`'s workers, or in-process without one.
pub fn panel(experiment: i64, pool: Option<&WorkerPool>, at_ms: u64) -> LoadWorkers {
    LoadWorkers {
        at_ms,
        experiment_id: experiment,
        pool: pool.map(WorkerPool::view),
    }
}

/// Runs `experiment` while publishing its workers panel into `hub`: at once, every [`PANEL_PERIOD`] while a
/// pool is there, and once more at the end, after the workers were told the experiment is over.
pub async fn publishing_panel<T>(
    hub: &Hub,
    experiment: i64,
    pool: Option<WorkerPool>,
    run: impl Future<Output = T>,
) -> T {
    let publish = |pool: Option<&WorkerPool>| {
        hub.publish(LiveEvent::Workers(panel(experiment, pool, now_ms() as u64)));
    };
    publish(pool.as_ref());
    let ended = match &pool {
        None => run.await,
        Some(pool) => {
            tokio::pin!(run);
            let mut tick = tokio::time::interval(PANEL_PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tokio::select! {
                    ended = &mut run => break ended,
                    _ = tick.tick() => publish(Some(pool)),
                }
            }
        }
    };
    if let Some(pool) = &pool {
        pool.finish_and_wait(FINISH_GRACE).await;
        publish(Some(pool));
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::HubConfig;

    #[tokio::test(start_paused = true)]
    async fn the_panel_is_published_at_once_every_second_and_at_the_end() {
        let hub = Hub::new(HubConfig::default());
        let pool = WorkerPool::listen("127.0.0.1:0".parse().unwrap(), 2, "t".repeat(20))
            .await
            .unwrap();
        let url = pool.url();
        let ran = publishing_panel(&hub, 7, Some(pool), async {
            tokio::time::sleep(Duration::from_millis(3_500)).await;
            "done"
        })
        .await;
        assert_eq!(ran, "done");
        let mut subscription = hub.subscribe();
        let snapshot: serde_json::Value =
            serde_json::from_str(subscription.snapshot.text.as_str()).unwrap();
        // Nothing was flushed yet: the events are pending.
        assert!(snapshot["state"]["workers"].is_null(), "{snapshot}");
        hub.flush();
        let Some(crate::hub::Next::Frame(frame)) = subscription.try_next() else {
            panic!("a frame")
        };
        let frame: serde_json::Value = serde_json::from_str(frame.text.as_str()).unwrap();
        let events = frame["events"].as_array().unwrap();
        // At once, at 1, 2 and 3 s, and at the end.
        assert_eq!(events.len(), 5, "{frame}");
        for event in events {
            assert_eq!(event["type"], "workers");
            assert_eq!(event["experiment_id"], 7);
            assert_eq!(event["pool"]["url"], url);
            assert_eq!(event["pool"]["wanted"], 2);
            assert_eq!(event["pool"]["connected"], 0);
        }
        assert_eq!(hub.workers().unwrap().pool.unwrap().wanted, 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connected_worker_is_in_the_panel_with_its_capacity() {
        let token = "t".repeat(20);
        let pool = WorkerPool::listen("127.0.0.1:0".parse().unwrap(), 2, token.clone())
            .await
            .unwrap();
        let options = controller::workers::WorkerOptions {
            controller: pool.url(),
            token,
            name: "w1".into(),
            capacity: 40,
            target: None,
        };
        let worker = tokio::spawn(async move { controller::workers::run_worker(&options).await });
        let connected = async {
            while pool.statuses().is_empty() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), connected)
            .await
            .unwrap();
        let panel = panel(4, Some(&pool), 1_000).pool.unwrap();
        assert_eq!((panel.wanted, panel.connected), (2, 1));
        let only = &panel.workers[0];
        assert_eq!(
            (
                only.name.as_str(),
                only.capacity,
                only.users,
                only.lost_from_second
            ),
            ("w1", 40, 0, None)
        );
        pool.finish();
        worker.await.unwrap().unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn without_workers_the_panel_says_in_process_once() {
        let hub = Hub::new(HubConfig::default());
        let mut subscription = hub.subscribe();
        publishing_panel(&hub, 3, None, tokio::time::sleep(Duration::from_secs(5))).await;
        hub.flush();
        let Some(crate::hub::Next::Frame(frame)) = subscription.try_next() else {
            panic!("a frame")
        };
        let frame: serde_json::Value = serde_json::from_str(frame.text.as_str()).unwrap();
        assert_eq!(frame["events"].as_array().unwrap().len(), 1, "{frame}");
        let workers = hub.workers().unwrap();
        assert_eq!((workers.experiment_id, workers.pool), (3, None));
        let state: serde_json::Value =
            serde_json::from_str(hub.subscribe().snapshot.text.as_str()).unwrap();
        assert_eq!(state["state"]["workers"]["experiment_id"], 3);
        assert!(state["state"]["workers"]["pool"].is_null(), "{state}");
    }
}
