//! Drives a run's load and watches its closed seconds in the run's own future (no spawned task): each second
//! goes to the live view and the stop condition, and the load ends early when the stop condition holds or
//! the run is cancelled.

use tokio_util::sync::CancellationToken;

use super::stop::StopMonitor;
use crate::load::{self, LoadConfig, LoadReport, SecondSink, SecondStats};
use crate::workers::{self, LostShare, WorkerPool, WorkersError, WorkersLoad};

/// Who drives a run's users: this process, or the load workers of a pool.
pub enum Drivers<'a> {
    InProcess,
    Workers {
        pool: &'a WorkerPool,
        load: WorkersLoad,
    },
}

/// What driving the load gave.
#[derive(Debug)]
pub struct Driven {
    pub report: LoadReport,
    /// Every closed second, warmup included.
    pub seconds: Vec<SecondStats>,
    /// The stop condition's reason, when it ended the load.
    pub stop_reason: Option<String>,
    /// The run was cancelled (an abort, Ctrl-C): the load ended early and the run is not an outcome.
    pub cancelled: bool,
    /// The load workers lost mid-run and the users missing because of it.
    pub lost: Vec<LostShare>,
}

/// Runs the load as configured; `monitor` (if any) sees every closed second and may stop it, `live` gets a
/// copy of each (a closed receiver is ignored), `cancel` stops it.
pub async fn drive_load(
    config: LoadConfig,
    drivers: Drivers<'_>,
    mut monitor: Option<StopMonitor>,
    live: Option<SecondSink>,
    cancel: &CancellationToken,
) -> Result<Driven, WorkersError> {
    let (second_sink, mut closed_seconds) = tokio::sync::mpsc::unbounded_channel::<SecondStats>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<String>();
    let watch = async move {
        let mut seconds = Vec::new();
        let mut stop_tx = Some(stop_tx);
        // Ends when the load has ended and dropped its sink.
        while let Some(second) = closed_seconds.recv().await {
            if let Some(live) = &live {
                let _ = live.send(second.clone());
            }
            if let Some(reason) = monitor.as_mut().and_then(|m| m.observe(&second))
                && let Some(stop_tx) = stop_tx.take()
            {
                let _ = stop_tx.send(reason);
            }
            seconds.push(second);
        }
        seconds
    };
    let mut stop_reason = None;
    let mut cancelled = false;
    let stop = async {
        tokio::select! {
            reason = stop_rx => match reason {
                Ok(reason) => stop_reason = Some(reason),
                // The watcher ended without a reason: never stop early (but a cancel still does).
                Err(_) => {
                    cancel.cancelled().await;
                    cancelled = true;
                }
            },
            () = cancel.cancelled() => cancelled = true,
        }
    };
    let driving = async {
        match drivers {
            Drivers::InProcess => Ok((
                load::run_until(config, Some(second_sink), stop).await,
                Vec::new(),
            )),
            Drivers::Workers { pool, load } => workers::run_until(pool, &load, second_sink, stop)
                .await
                .map(|run| (run.report, run.lost)),
        }
    };
    let (driven, seconds) = tokio::join!(driving, watch);
    let (report, lost) = driven?;
    Ok(Driven {
        report,
        seconds,
        stop_reason,
        cancelled,
        lost,
    })
}
