//! The process's own tokio runtime as Prometheus text: how many tasks are alive, so a long run (`scripts/soak`)
//! can tell a task leak from a memory leak. Every `/metrics` of Tolerant's own processes appends it.

use std::fmt::Write as _;

/// The gauge's name.
pub const ALIVE_TASKS_METRIC: &str = "tolerant_tokio_alive_tasks";

/// Tasks alive in the runtime this is called from (0 outside one).
pub fn alive_tasks() -> usize {
    tokio::runtime::Handle::try_current()
        .map(|handle| handle.metrics().num_alive_tasks())
        .unwrap_or(0)
}

/// Appends the [`ALIVE_TASKS_METRIC`] gauge, with its help and type lines, to `out`.
pub fn render_alive_tasks(out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP {ALIVE_TASKS_METRIC} Tokio tasks alive in this process.\n\
         # TYPE {ALIVE_TASKS_METRIC} gauge\n\
         {ALIVE_TASKS_METRIC} {}",
        alive_tasks()
    );
}

/// `GET /metrics` of a process with nothing else to expose: the [`ALIVE_TASKS_METRIC`] gauge alone.
pub async fn alive_tasks_exposition() -> ([(http::HeaderName, &'static str); 1], String) {
    let mut out = String::new();
    render_alive_tasks(&mut out);
    (
        [(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_a_spawned_task_while_it_lives() {
        let before = alive_tasks();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = stopped.await;
        });
        assert_eq!(alive_tasks(), before + 1);
        let mut text = String::new();
        render_alive_tasks(&mut text);
        assert!(
            text.contains(&format!("{ALIVE_TASKS_METRIC} {}\n", before + 1)),
            "{text}"
        );
        stop.send(()).unwrap();
        task.await.unwrap();
        assert_eq!(alive_tasks(), before);
    }
}
