//! Load driver throughput bench: one current-thread runtime (pin it with `taskset -c N`) driving
//! `--users` closed-loop users with no think time against `--target` (e.g. nginx serving 2 bytes).
//! Prints one JSON line: requests per second and latency percentiles. Driven by `bench/run.sh`.

use std::net::SocketAddr;
use std::time::Duration;

use controller::load::{LoadConfig, Workload, run};

struct Args {
    target: SocketAddr,
    path: String,
    users: u32,
    seconds: u64,
    warmup: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        target: "127.0.0.1:8099".parse().expect("constant address"),
        path: "/x".into(),
        users: 32,
        seconds: 10,
        warmup: 1,
    };
    let mut iter = std::env::args().skip(1);
    while let Some(flag) = iter.next() {
        let mut value = || iter.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--target" => args.target = value()?.parse().map_err(|e| format!("--target: {e}"))?,
            "--path" => args.path = value()?,
            "--users" => args.users = value()?.parse().map_err(|e| format!("--users: {e}"))?,
            "--seconds" => {
                args.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?
            }
            "--warmup" => args.warmup = value()?.parse().map_err(|e| format!("--warmup: {e}"))?,
            // `cargo bench` passes `--bench`; ignore flags meant for a harness.
            _ => {}
        }
    }
    Ok(args)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("load_driver bench: {message}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime builds");
    let report = runtime
        .block_on(run(
            LoadConfig {
                target: args.target,
                workload: Workload::Fixed { path: args.path },
                users: args.users,
                think_time: (Duration::ZERO, Duration::ZERO),
                rate: None,
                timeout: Duration::from_secs(5),
                warmup: Duration::from_secs(args.warmup),
                duration: Duration::from_secs(args.seconds),
                seed: 1,
            },
            None,
        ))
        .expect("valid load config");
    let endpoint = &report.endpoints[0];
    let latency = &endpoint.stats.latency;
    let outcomes = report.outcomes();
    println!(
        "{{\"requests_per_second\":{:.0},\"requests\":{},\"ok\":{},\"errors\":{},\"p50_us\":{},\"p90_us\":{},\"p99_us\":{},\"max_us\":{}}}",
        report.requests_per_second(),
        outcomes.total(),
        outcomes.ok,
        outcomes.total() - outcomes.ok,
        latency.value_at_quantile(0.50),
        latency.value_at_quantile(0.90),
        latency.value_at_quantile(0.99),
        latency.max(),
    );
}
