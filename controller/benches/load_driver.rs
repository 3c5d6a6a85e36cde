//! Load driver throughput bench: one current-thread runtime (pin it with `taskset -c N`) driving
//! `--users` closed-loop users with no think time against `--target` (e.g. nginx serving 2 bytes).
//! Prints one JSON line: requests per second and latency percentiles. Driven by `bench/run.sh`.
//! `--serve ADDR` runs the trivial loopback server instead (one current-thread runtime, every request
//! answered `200 ok` as soon as its head is read), for machines without nginx.

use std::net::SocketAddr;
use std::time::Duration;

use controller::load::{LoadSettings, Workload, run};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

struct Args {
    target: SocketAddr,
    path: String,
    users: u32,
    seconds: u64,
    warmup: u64,
    serve: Option<SocketAddr>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        target: "127.0.0.1:8099".parse().expect("constant address"),
        path: "/x".into(),
        users: 32,
        seconds: 10,
        warmup: 1,
        serve: None,
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
            "--serve" => args.serve = Some(value()?.parse().map_err(|e| format!("--serve: {e}"))?),
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
    if let Some(address) = args.serve {
        runtime.block_on(serve(address));
        return;
    }
    let report = runtime.block_on(run(
        LoadSettings {
            target: args.target,
            workload: Workload::Fixed { path: args.path },
            users: args.users,
            think_time: (Duration::ZERO, Duration::ZERO),
            rate: None,
            timeout: Duration::from_secs(5),
            warmup: Duration::from_secs(args.warmup),
            duration: Duration::from_secs(args.seconds),
            seed: 1,
        }
        .try_into()
        .expect("valid load config"),
        None,
    ));
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

/// Answers every request on `address` with `200 ok` until killed.
async fn serve(address: SocketAddr) {
    let listener = TcpListener::bind(address)
        .await
        .unwrap_or_else(|error| panic!("--serve {address}: {error}"));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(answer(stream));
    }
}

/// Reads request heads (no bodies: the bench sends `GET`s) and answers each at once.
async fn answer(mut stream: TcpStream) {
    const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
    let _ = stream.set_nodelay(true);
    let mut buffer = vec![0u8; 16 * 1024];
    let mut filled = 0;
    loop {
        match stream.read(&mut buffer[filled..]).await {
            Ok(0) | Err(_) => return,
            Ok(read) => filled += read,
        }
        while let Some(end) = buffer[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
            if stream.write_all(RESPONSE).await.is_err() {
                return;
            }
            buffer.copy_within(end + 4..filled, 0);
            filled -= end + 4;
        }
        if filled == buffer.len() {
            return;
        }
    }
}
