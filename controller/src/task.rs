//! Background tasks that end with their owner: a run's (also when the run's future is dropped part-way — an abort
//! from the dashboard cancels the run's task, and nothing it started may outlive it), a lease's renewal, the
//! observer's followers and sampler.

use tokio::task::JoinHandle;

/// A spawned task that is aborted when this handle is dropped.
#[derive(Debug)]
pub struct OwnedTask<T>(JoinHandle<T>);

impl<T> OwnedTask<T> {
    pub fn spawn(future: impl Future<Output = T> + Send + 'static) -> Self
    where
        T: Send + 'static,
    {
        OwnedTask(tokio::spawn(future))
    }

    pub fn is_finished(&self) -> bool {
        self.0.is_finished()
    }

    /// Waits until the task ends by itself; returns the panic's message if it ended by panicking.
    pub async fn join(mut self) -> Option<String> {
        match (&mut self.0).await {
            Ok(_) => None,
            Err(error) => crate::panic::join_panic(error),
        }
    }

    /// Aborts the task and waits until it has stopped; returns the panic's message if it had ended by
    /// panicking (a run that lost a collector that way is not a measurement).
    pub async fn stop(mut self) -> Option<String> {
        self.0.abort();
        match (&mut self.0).await {
            Ok(_) => None,
            Err(error) => crate::panic::join_panic(error),
        }
    }
}

impl<T> Drop for OwnedTask<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::OwnedTask;

    /// Sets its flag when dropped: the task's future was torn down.
    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// A task that never ends by itself, and the flag set when its future is torn down.
    fn pending_task() -> (OwnedTask<()>, Arc<AtomicBool>) {
        let ended = Arc::new(AtomicBool::new(false));
        let flag = Flag(Arc::clone(&ended));
        let task = OwnedTask::spawn(async move {
            let _flag = flag;
            std::future::pending::<()>().await;
        });
        (task, ended)
    }

    #[tokio::test(start_paused = true)]
    async fn dropping_the_handle_ends_the_task() {
        let (task, ended) = pending_task();
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!ended.load(Ordering::SeqCst));
        drop(task);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(ended.load(Ordering::SeqCst));
    }

    #[tokio::test(start_paused = true)]
    async fn stop_waits_for_the_task_to_end() {
        let (task, ended) = pending_task();
        assert_eq!(task.stop().await, None);
        assert!(ended.load(Ordering::SeqCst));
    }

    #[tokio::test(start_paused = true)]
    async fn stop_says_why_a_task_panicked() {
        let task = OwnedTask::spawn(async { panic!("the sampler divided by zero") });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(
            task.stop().await.as_deref(),
            Some("the sampler divided by zero")
        );
    }
}
