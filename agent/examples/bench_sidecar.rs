//! The sidecar as `tolerant agent` runs it (same `Sidecar::bind` + `serve_threaded`), without the rest of the CLI,
//! so the benchmark does not need the whole workspace to build.
//! Usage: `bench_sidecar LISTEN UPSTREAM_URL CONTROL [THREADS]` (THREADS default: one per CPU).

use std::num::NonZeroUsize;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bench_sidecar LISTEN UPSTREAM_URL CONTROL [THREADS]";
    let listen = args.next().ok_or(usage)?.parse()?;
    let upstream = args.next().ok_or(usage)?;
    let control = args.next().ok_or(usage)?.parse()?;
    let threads = match args.next() {
        Some(text) => text.parse()?,
        None => std::thread::available_parallelism().unwrap_or(NonZeroUsize::MIN),
    };
    let agent = agent::Agent::new(agent::AgentConfig::default());
    let sidecar = agent::sidecar::Sidecar::bind(agent, listen, &upstream, control).await?;
    println!(
        "bench sidecar: proxy http://{} -> {upstream}, control http://{}, {threads} thread(s)",
        sidecar.proxy_address()?,
        sidecar.control_address()?
    );
    sidecar.serve_threaded(threads).await?;
    Ok(())
}
