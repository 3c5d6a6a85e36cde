//! The bounded pool the dashboard's simulations run on: [`SIMULATIONS_RUNNING`] at once, at most
//! [`SIMULATIONS_QUEUED`] waiting, a 429 beyond; each holds a blocking thread and at most [`SIMULATION_PEAK_BYTES`].

use std::sync::Arc;

use crate::error::AppError;

/// Simulations the dashboard runs at once (each holds one blocking thread and up to [`SIMULATION_PEAK_BYTES`]).
pub const SIMULATIONS_RUNNING: usize = 2;
/// Simulations that may wait for a place; one more is answered 429.
pub const SIMULATIONS_QUEUED: usize = 8;
/// Peak memory of the largest simulation the API accepts, rounded up from a measurement (`docs/wire.md`: a
/// one-hour window at 555 requests/s, hangs or errors, took 14 MB over the process's baseline, its JSON
/// included). The pool holds at most [`SIMULATIONS_RUNNING`] times this, whatever the number of requests.
pub const SIMULATION_PEAK_BYTES: u64 = 16 << 20;

/// The bounded pool every API simulation runs on: a place among the admitted (running or queued), then a place
/// among the running; both are held by the blocking task itself, so a client that leaves early does not free a
/// place its simulation still occupies.
#[derive(Debug, Clone)]
pub struct SimulationPool {
    pub(crate) admitted: Arc<tokio::sync::Semaphore>,
    running: Arc<tokio::sync::Semaphore>,
    /// Running plus queued places.
    places: usize,
}

impl Default for SimulationPool {
    fn default() -> Self {
        SimulationPool::new(SIMULATIONS_RUNNING, SIMULATIONS_QUEUED)
    }
}

impl SimulationPool {
    /// `running` at once (at least one), `queued` more waiting.
    pub fn new(running: usize, queued: usize) -> SimulationPool {
        let running = running.max(1);
        SimulationPool {
            admitted: Arc::new(tokio::sync::Semaphore::new(running + queued)),
            running: Arc::new(tokio::sync::Semaphore::new(running)),
            places: running + queued,
        }
    }

    /// Runs `job` on a blocking thread once a place is free; `TooMany` when every place is taken or waited for.
    pub async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, AppError> {
        let admitted = Arc::clone(&self.admitted)
            .try_acquire_owned()
            .map_err(|_| {
                AppError::TooMany(format!(
                    "{} simulations are running or waiting, the most the dashboard takes: try again shortly",
                    self.places
                ))
            })?;
        let running = Arc::clone(&self.running)
            .acquire_owned()
            .await
            .map_err(|_| AppError::Internal("the simulation pool closed".into()))?;
        tokio::task::spawn_blocking(move || {
            let _places = (admitted, running);
            job()
        })
        .await
        .map_err(|error| AppError::Internal(format!("the simulation did not finish: {error}")))
    }
}
