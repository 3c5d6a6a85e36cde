//! `tolerant` with no arguments: the whole embedded stack — ten services, the agent in Payment, the
//! controller and the dashboard — on loopback. Ctrl-C stops it with every fault cleared.
//!
//! Settings come from the environment: `TOLERANT_BIND` (default `127.0.0.1:8080`), `TOLERANT_DB` (default
//! `tolerant.db` in the working directory, or a `postgres://` URL) and `TOLERANT_TOKEN` (default: a fresh
//! random token, printed).

use std::net::SocketAddr;

use anyhow::Context;
use web::{DashboardConfig, RunningDashboard};

pub async fn run() -> anyhow::Result<()> {
    let mut config = DashboardConfig::default();
    if let Ok(bind) = std::env::var("TOLERANT_BIND") {
        config.bind = bind.parse::<SocketAddr>().with_context(|| {
            format!("TOLERANT_BIND: `{bind}` is not an address like 127.0.0.1:8080")
        })?;
    }
    if let Ok(database) = std::env::var("TOLERANT_DB") {
        config.database = database;
    }
    config.token = std::env::var("TOLERANT_TOKEN")
        .ok()
        .filter(|token| !token.is_empty());
    let token_from_env = config.token.is_some();

    let dashboard = RunningDashboard::start(config)
        .await
        .context("starting the embedded stack and dashboard")?;
    println!("Tolerant dashboard: {}", dashboard.url());
    if token_from_env {
        println!("Token: from TOLERANT_TOKEN");
    } else {
        println!("Token (log in with it to act): {}", dashboard.token());
    }
    println!("Ctrl-C stops everything and clears every fault.");

    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    println!("Stopping: clearing faults, closing the dashboard and the services…");
    dashboard.shutdown().await;
    println!("Stopped.");
    Ok(())
}
