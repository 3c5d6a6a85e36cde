//! Panics caught where a run can still end honestly: the message of a caught panic, and a future run
//! so that its panic becomes an error value (the run is then stored as failed, its fault removed first).

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

/// The message a panic carried (`panic!("…")` gives a `&str` or a `String`), or a placeholder.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

/// The message of a task that ended by panicking; `None` for a task that returned or was cancelled.
pub fn join_panic(error: tokio::task::JoinError) -> Option<String> {
    error
        .try_into_panic()
        .ok()
        .map(|payload| panic_message(&*payload))
}

/// Polls `future` to its end; a panic on the way is returned as its message instead of unwinding
/// further. Whatever the future owned is dropped while unwinding (tasks it started are aborted by their
/// handles), so the caller only has to end what it owns itself.
pub async fn caught<F: Future>(future: F) -> Result<F::Output, String> {
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|payload| panic_message(&*payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_becomes_its_message() {
        assert_eq!(caught(async { 7 }).await, Ok(7));
        let text = caught(async { panic!("the sampler exploded") }).await;
        assert_eq!(text, Err::<(), _>("the sampler exploded".to_owned()));
        let formatted = caught(async { panic!("second {}", 3) }).await;
        assert_eq!(formatted, Err::<(), _>("second 3".to_owned()));
    }

    #[tokio::test]
    async fn a_panicked_task_gives_its_message_a_cancelled_one_none() {
        let panicked = tokio::spawn(async { panic!("user 4 panicked") }).await;
        assert_eq!(
            join_panic(panicked.unwrap_err()).as_deref(),
            Some("user 4 panicked")
        );
        let task = tokio::spawn(std::future::pending::<()>());
        task.abort();
        assert_eq!(join_panic(task.await.unwrap_err()), None);
    }
}
