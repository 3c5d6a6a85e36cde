//! The long-lived processes of a soak — the ten services with the agent in Payment, and the dashboard over them —
//! started on free loopback ports, reached through one HTTP client, stopped at the end; and what every process
//! of the soak is started with (`spawn`, the binary's logs in the output folder).

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use parking_lot::Mutex;

use crate::config::{Config, TOKEN};

/// The services in `ServiceName::ALL` order: `tolerant boutique all --base-port P` gives them P, P+1, …
pub const SERVICES: [&str; 10] = [
    "frontend",
    "productcatalog",
    "cart",
    "currency",
    "payment",
    "shipping",
    "email",
    "checkout",
    "recommendation",
    "ad",
];
/// Payment's offset from the base port: the agent is there.
const PAYMENT: u16 = 4;
/// How long a process may take to answer its health check after it started.
const START_LIMIT: Duration = Duration::from_secs(120);

/// A started process, killed (SIGKILL) and reaped when dropped.
#[derive(Debug)]
pub struct Process(pub Child);

impl Process {
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `tolerant <args>` in `dir` with `env`, its output into `<log>.out` / `<log>.err` there.
pub fn spawn(
    tolerant: &Path,
    dir: &Path,
    log: &str,
    args: &[&str],
    env: &[(&str, String)],
) -> anyhow::Result<Process> {
    let out = File::create(dir.join(format!("{log}.out"))).context("log file")?;
    let err = File::create(dir.join(format!("{log}.err"))).context("log file")?;
    let mut command = Command::new(tolerant);
    command
        .args(args)
        .current_dir(dir)
        .env_remove("TOLERANT_DB")
        .env_remove("TOLERANT_TARGETS")
        .env("TOLERANT_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command
        .spawn()
        .with_context(|| format!("starting {} {args:?}", tolerant.display()))?;
    Ok(Process(child))
}

/// A free loopback port (bound and let go: free when asked, which is enough on a machine of one soak).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The first of ten consecutive free ports, searched upwards from an ephemeral one.
fn free_base_port() -> anyhow::Result<u16> {
    let start = free_port()?.clamp(20_000, 60_000);
    for base in (start..start + 2_000).step_by(10) {
        let listeners: Result<Vec<_>, _> = (base..base + 10)
            .map(|port| TcpListener::bind(("127.0.0.1", port)))
            .collect();
        if listeners.is_ok() {
            return Ok(base);
        }
    }
    bail!("no ten consecutive free ports from {start}")
}

/// The services and the dashboard, running.
#[derive(Debug)]
pub struct Stack {
    services: Mutex<Option<Process>>,
    dashboard: Mutex<Option<Process>>,
    pub service_pid: u32,
    pub dashboard_pid: u32,
    base_port: u16,
    dashboard_port: u16,
    pub http: reqwest::Client,
    pub dir: PathBuf,
}

impl Stack {
    pub async fn start(config: &Config) -> anyhow::Result<Stack> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(2))
            .build()?;
        let base_port = free_base_port()?;
        let base = base_port.to_string();
        let services = spawn(
            &config.tolerant,
            &config.out,
            "services",
            &["boutique", "all", "--base-port", &base, "--seed", "1"],
            &[],
        )?;
        let dashboard_port = free_port()?;
        let mut stack = Stack {
            service_pid: services.pid(),
            services: Mutex::new(Some(services)),
            dashboard: Mutex::new(None),
            dashboard_pid: 0,
            base_port,
            dashboard_port,
            http,
            dir: config.out.clone(),
        };
        stack.healthy(&stack.service_url("payment")).await?;
        stack.healthy(&stack.service_url("frontend")).await?;
        let targets: Vec<String> = SERVICES
            .iter()
            .map(|name| format!("{name}={}", stack.service_url(name)))
            .chain([format!("agent={}", stack.agent_url())])
            .collect();
        let dashboard = spawn(
            &config.tolerant,
            &config.out,
            "dashboard",
            &[],
            &[
                ("TOLERANT_BIND", format!("127.0.0.1:{dashboard_port}")),
                ("TOLERANT_DB", stack.dashboard_db().display().to_string()),
                ("TOLERANT_TARGETS", targets.join(",")),
            ],
        )?;
        stack.dashboard_pid = dashboard.pid();
        *stack.dashboard.lock() = Some(dashboard);
        stack.healthy(&stack.dashboard_url()).await?;
        Ok(stack)
    }

    /// Waits until `GET {base}/_healthz` answers 2xx.
    async fn healthy(&self, base: &str) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + START_LIMIT;
        while tokio::time::Instant::now() < deadline {
            let answer = self.http.get(format!("{base}/_healthz")).send().await;
            if answer.is_ok_and(|answer| answer.status().is_success()) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        bail!(
            "{base} did not answer /_healthz within {START_LIMIT:?} (logs in {})",
            self.dir.display()
        )
    }

    pub fn service_url(&self, name: &str) -> String {
        let offset = SERVICES.iter().position(|s| *s == name).unwrap_or(0);
        format!("http://127.0.0.1:{}", self.base_port + offset as u16)
    }

    /// The agent's control API: Payment's port.
    pub fn agent_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.base_port + PAYMENT)
    }

    pub fn dashboard_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.dashboard_port)
    }

    pub fn dashboard_ws(&self) -> String {
        format!("ws://127.0.0.1:{}/ws", self.dashboard_port)
    }

    pub fn dashboard_db(&self) -> PathBuf {
        self.dir.join("dashboard.db")
    }

    /// Whether both processes still run (a dead one is a finding, not a reason to stop sampling).
    pub fn alive(&self) -> bool {
        let running = |process: &Mutex<Option<Process>>| {
            process
                .lock()
                .as_mut()
                .is_some_and(|p| p.0.try_wait().ok().flatten().is_none())
        };
        running(&self.services) && running(&self.dashboard)
    }

    /// Stops the dashboard and the services (SIGKILL: nothing of theirs is judged after the soak).
    pub async fn stop(&self) {
        drop(self.dashboard.lock().take());
        drop(self.services.lock().take());
    }
}
