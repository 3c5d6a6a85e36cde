//! A compose project of the test's own on the machine's Docker Engine: the engine or a skip (a failure with `CI`
//! set), the image built from the binary under test, the project brought up and, when dropped, down with
//! everything it made.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use controller::docker::Engine;

/// The token of every admin and agent mutation in the test's stacks.
pub const TOKEN: &str = "containers-test-token";
/// The image the tests build and run (kept as the build cache).
pub const IMAGE: &str = "tolerant:test";
/// Upper bound on any one wait of these tests.
pub const WAIT_LIMIT: Duration = Duration::from_secs(60);

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `docker compose` when the plugin is there, else Debian's `docker-compose`.
pub fn compose_program() -> Option<Vec<&'static str>> {
    let works = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if works("docker", &["compose", "version"]) {
        Some(vec!["docker", "compose"])
    } else if works("docker-compose", &["version"]) {
        Some(vec!["docker-compose"])
    } else {
        None
    }
}

/// The engine and the compose program, or `None` (said on stderr) when either is missing; with `CI` set a
/// missing one fails the test instead.
pub async fn engine_and_compose() -> Option<(Engine, Vec<&'static str>)> {
    let socket = controller::docker::socket_from_env();
    let engine = match Engine::connect(&socket).await {
        Ok(engine) => engine,
        Err(error) if std::env::var_os("CI").is_some() => {
            panic!("CI is set and the Docker Engine is needed: {error}")
        }
        Err(error) => {
            eprintln!("skipped: {error}");
            return None;
        }
    };
    let Some(program) = compose_program() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set and neither `docker compose` nor `docker-compose` is installed"
        );
        eprintln!("skipped: neither `docker compose` nor `docker-compose` is installed");
        return None;
    };
    Some((engine, program))
}

/// Builds [`IMAGE`] from the binary this test build made (`scripts/images` rebuilds only when it changed).
pub fn build_image() {
    let built = Command::new("bash")
        .arg(repo().join("scripts/images"))
        .env("TOLERANT_BINARY", super::BIN)
        .env("TOLERANT_IMAGE", IMAGE)
        .output()
        .expect("run scripts/images");
    assert!(
        built.status.success(),
        "scripts/images failed ({}):\n{}{}",
        built.status,
        String::from_utf8_lossy(&built.stdout),
        String::from_utf8_lossy(&built.stderr)
    );
}

/// The compose project a test brings up, brought down (volume included) when dropped.
pub struct Project {
    pub name: String,
    pub program: Vec<&'static str>,
    pub dashboard_port: u16,
}

impl Project {
    /// A project named `tolerant-<what>-<pid>` with a free dashboard port.
    pub fn new(what: &str, program: Vec<&'static str>) -> Project {
        Project {
            name: format!("tolerant-{what}-{}", std::process::id()),
            program,
            dashboard_port: free_port(),
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.program[0]);
        command
            .args(&self.program[1..])
            .arg("-f")
            .arg(repo().join("docker-compose.yml"))
            .args(["-p", &self.name])
            .args(args)
            .env("TOLERANT_IMAGE", IMAGE)
            .env("TOLERANT_TOKEN", TOKEN)
            .env("TOLERANT_DASHBOARD_PORT", self.dashboard_port.to_string())
            .env("TOLERANT_DOCKER_GID", docker_gid().to_string())
            .stdin(Stdio::null());
        command
    }

    pub fn run(&self, args: &[&str]) {
        let output = self.command(args).output().expect("run compose");
        assert!(
            output.status.success(),
            "compose {args:?} failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Waits until the dashboard answers on its loopback port (every service healthy before it starts).
    #[allow(clippy::disallowed_methods)] // waits on real processes and sockets: wall time is what it measures
    pub async fn wait_for_dashboard(&self) {
        let dashboard = format!("http://127.0.0.1:{}/_healthz", self.dashboard_port);
        let started = Instant::now();
        while !reqwest::get(&dashboard)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            assert!(
                started.elapsed() < WAIT_LIMIT,
                "the dashboard never answered"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self
            .command(&["down", "--volumes", "--remove-orphans", "--timeout", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The group that owns the engine's socket (the compose controller joins it to reach the engine).
fn docker_gid() -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(controller::docker::socket_from_env()).map_or(65534, |meta| meta.gid())
}

/// A free loopback port for the dashboard (the listener is closed again before compose binds it).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Runs `tolerant <args>` in `dir` to the end with the stacks' token; panics with its output when it fails.
pub fn tolerant_with_token(dir: &std::path::Path, args: &[&str]) -> String {
    let output = Command::new(super::BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("TOLERANT_DB")
        .env("TOLERANT_TOKEN", TOKEN)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("run tolerant");
    let text = format!(
        "--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "tolerant {args:?} failed:\n{text}");
    text
}
