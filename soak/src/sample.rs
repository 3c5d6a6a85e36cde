//! The soak's one row a second: every process's RSS, open descriptors and how many of them are sockets (`/proc`),
//! its live tokio tasks (its
//! `/metrics`, `serving::runtime`), both databases' sizes, the faults active at the agent and the requests it
//! holds. A value that could not be read (the controller between a kill and its restart) is left empty.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use tokio::time::{Instant, MissedTickBehavior};

use crate::stack::Stack;

/// The CSV's header; [`Row`] writes its fields in this order.
pub const HEADER: &str = "t_s,services_rss_kib,services_fds,services_sockets,services_tasks,\
dashboard_rss_kib,dashboard_fds,dashboard_sockets,dashboard_tasks,controller_pid,controller_rss_kib,controller_fds,\
controller_sockets,controller_tasks,soak_rss_kib,soak_fds,soak_sockets,sweep_db_bytes,dashboard_db_bytes,\
agent_faults,agent_held";
/// The processes whose columns are `<name>_rss_kib`, `<name>_fds` and `<name>_sockets`, in the CSV's order.
pub const PROCESSES: [&str; 4] = ["services", "dashboard", "controller", "soak"];
/// Where the sampler finds the controller: its pid (0 while none runs), its `/metrics`, its database.
#[derive(Debug, Clone)]
pub struct ControllerWatch {
    pub pid: Arc<AtomicU32>,
    pub metrics_url: String,
    pub db: PathBuf,
}

/// How long one read of a sample may take.
const READ_LIMIT: Duration = Duration::from_millis(800);
/// The agent's gauge of requests a hang fault holds (`agent::metrics`).
pub const HELD_METRIC: &str = "tolerant_agent_requests_held";

/// A process's resident memory in KiB (`VmRSS` of `/proc/PID/status`).
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// A process's open descriptors (entries of `/proc/PID/fd`).
pub fn open_fds(pid: u32) -> Option<u64> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

/// How many of a process's open descriptors are sockets (entries of `/proc/PID/fd` linking to `socket:[…]`):
/// one per connection, so their count follows the load, where the others (files, pipes, epoll) should not move.
pub fn open_sockets(pid: u32) -> Option<u64> {
    let entries = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let sockets = (entries.flatten())
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter(|target| {
            target
                .as_os_str()
                .as_encoded_bytes()
                .starts_with(b"socket:")
        })
        .count();
    Some(sockets as u64)
}

/// A database's bytes on disk, its write-ahead log and shared memory included.
fn db_bytes(path: &Path) -> Option<u64> {
    let size = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::fs::metadata(PathBuf::from(name)).map(|m| m.len()).ok()
    };
    Some(size("")? + size("-wal").unwrap_or(0) + size("-shm").unwrap_or(0))
}

/// The value of `metric` (a line `metric VALUE`, no labels) in Prometheus text.
pub fn gauge(text: &str, metric: &str) -> Option<u64> {
    text.lines()
        .filter_map(|line| line.strip_prefix(metric)?.strip_prefix(' '))
        .find_map(|value| value.trim().parse::<f64>().ok())
        .map(|value| value as u64)
}

/// One active fault as `GET /_agent/faults` lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct ActiveFault {
    pub id: String,
    pub lease_ms: u64,
    pub expires_in_ms: u64,
}

/// The faults the agent holds now; `None` when it did not answer.
pub async fn agent_faults(stack: &Stack) -> Option<Vec<ActiveFault>> {
    let answer = (stack.http)
        .get(format!("{}/_agent/faults", stack.agent_url()))
        .timeout(READ_LIMIT)
        .send()
        .await
        .ok()?;
    answer.error_for_status().ok()?.json().await.ok()
}

/// The requests a hang fault holds at the agent now.
pub async fn agent_held(stack: &Stack) -> Option<u64> {
    let text = prometheus_text(stack, &format!("{}/_agent/metrics", stack.agent_url())).await?;
    gauge(&text, HELD_METRIC)
}

async fn prometheus_text(stack: &Stack, url: &str) -> Option<String> {
    let answer = stack.http.get(url).timeout(READ_LIMIT).send().await.ok()?;
    answer.error_for_status().ok()?.text().await.ok()
}

async fn tasks(stack: &Stack, url: &str) -> Option<u64> {
    gauge(
        &prometheus_text(stack, url).await?,
        serving::runtime::ALIVE_TASKS_METRIC,
    )
}

/// One second's values, in [`HEADER`]'s order.
struct Row(Vec<Option<u64>>);

impl Row {
    fn line(&self, t_s: f64) -> String {
        let fields: Vec<String> = (self.0.iter())
            .map(|value| value.map(|v| v.to_string()).unwrap_or_default())
            .collect();
        format!("{t_s:.1},{}\n", fields.join(","))
    }
}

async fn row(stack: &Stack, controller: &ControllerWatch) -> Row {
    let pid = controller.pid.load(Ordering::Relaxed);
    let controller_pid = (pid != 0).then_some(pid);
    let services_metrics = format!("{}/metrics", stack.agent_url());
    let dashboard_metrics = format!("{}/metrics", stack.dashboard_url());
    let (services_tasks, dashboard_tasks, controller_tasks, faults, held) = tokio::join!(
        tasks(stack, &services_metrics),
        tasks(stack, &dashboard_metrics),
        async {
            match controller_pid {
                Some(_) => tasks(stack, &controller.metrics_url).await,
                None => None,
            }
        },
        agent_faults(stack),
        agent_held(stack),
    );
    let own = std::process::id();
    Row(vec![
        rss_kib(stack.service_pid),
        open_fds(stack.service_pid),
        open_sockets(stack.service_pid),
        services_tasks,
        rss_kib(stack.dashboard_pid),
        open_fds(stack.dashboard_pid),
        open_sockets(stack.dashboard_pid),
        dashboard_tasks,
        controller_pid.map(u64::from),
        controller_pid.and_then(rss_kib),
        controller_pid.and_then(open_fds),
        controller_pid.and_then(open_sockets),
        controller_tasks,
        rss_kib(own),
        open_fds(own),
        open_sockets(own),
        db_bytes(&controller.db),
        db_bytes(&stack.dashboard_db()),
        faults.map(|faults| faults.len() as u64),
        held,
    ])
}

/// Writes a row a second into `csv` (a header first) until `deadline`.
pub async fn sample_every_second(
    stack: Arc<Stack>,
    controller: ControllerWatch,
    csv: PathBuf,
    started: Instant,
    deadline: Instant,
) -> anyhow::Result<()> {
    let mut file =
        std::fs::File::create(&csv).with_context(|| format!("creating {}", csv.display()))?;
    writeln!(file, "{HEADER}")?;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
    while tick.tick().await < deadline {
        let at = Instant::now();
        let row = row(&stack, &controller).await;
        file.write_all(row.line((at - started).as_secs_f64()).as_bytes())?;
        file.flush()?;
    }
    Ok(())
}

/// The CSV as columns by name, every value as read (`None` when empty).
pub fn read_csv(csv: &Path) -> anyhow::Result<BTreeMap<String, Vec<Option<f64>>>> {
    let text =
        std::fs::read_to_string(csv).with_context(|| format!("reading {}", csv.display()))?;
    let names: Vec<&str> = HEADER.split(',').collect();
    let mut columns: BTreeMap<String, Vec<Option<f64>>> = names
        .iter()
        .map(|name| (name.to_string(), Vec::new()))
        .collect();
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        for (index, name) in names.iter().enumerate() {
            let value = fields
                .get(index)
                .and_then(|field| field.parse::<f64>().ok());
            if let Some(column) = columns.get_mut(*name) {
                column.push(value);
            }
        }
    }
    Ok(columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_gauge_without_labels_and_not_a_longer_name() {
        let text = "# HELP x\nfoo_total 3\nfoo 12\nfoo{a=\"b\"} 9\n";
        assert_eq!(gauge(text, "foo"), Some(12));
        assert_eq!(gauge(text, "fo"), None);
        assert_eq!(gauge("foo 1.0\n", "foo"), Some(1));
    }

    #[test]
    fn this_process_has_memory_and_descriptors() {
        let own = std::process::id();
        assert!(rss_kib(own).is_some_and(|kib| kib > 0));
        assert!(open_fds(own).is_some_and(|fds| fds >= 3));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let sockets = open_sockets(own).expect("our own descriptors are readable");
        assert!(sockets >= 1 && sockets < open_fds(own).unwrap());
        drop(listener);
        assert_eq!(open_sockets(u32::MAX), None);
        assert_eq!(rss_kib(u32::MAX), None);
    }

    #[test]
    fn a_row_leaves_what_was_not_read_empty() {
        let row = Row(vec![Some(1), None, Some(3)]);
        assert_eq!(row.line(2.04), "2.0,1,,3\n");
        assert_eq!(HEADER.split(',').count(), 21);
    }
}
