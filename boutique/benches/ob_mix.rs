//! Online Boutique task mix against the embedded stack at 100, 1,000 and 10,000 virtual users.
//!
//! Each virtual user is a tokio task with its own cookie jar, running the stock load generator's
//! tasks with a uniform 1–10 s think time. The stack runs on its own runtime (threads `stack-w`), the
//! users on another (`load-w`), so `/proc/self/task/*/stat` separates the CPU of each side.
//! Reports throughput, p50/p95/p99 of healthy (2xx) pages, and CPU per user task.
//!
//! `cargo bench -p boutique --bench ob_mix -- [--users 100,1000,10000] [--ramp 10] [--measure 30]
//!  [--think-min-ms 1000] [--think-max-ms 10000]`

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use boutique::loadgen::{RequestRecord, VirtualUser, http_client};
use boutique::services::payment::YearMonth;
use boutique::{RunningStack, ServiceName, StackConfig};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// glibc malloc was a quarter of the profile under this load; mimalloc keeps allocation off the top.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TOKEN: &str = "bench-token";
/// Requests the users may have in flight at once. Each costs two file descriptors in this process (client
/// and server side) and the sandbox caps descriptors at 20,000, so 10,000 users each holding a
/// connection, as Locust's users do, would run the process out of them.
const CONNECTION_BUDGET: usize = 4_096;
/// Clock ticks per second of `/proc/*/stat` times (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

#[derive(Debug, Clone)]
struct Options {
    users: Vec<usize>,
    ramp: Duration,
    measure: Duration,
    think_min: Duration,
    think_max: Duration,
}

fn parse_options() -> Options {
    let mut options = Options {
        users: vec![100, 1_000, 10_000],
        ramp: Duration::from_secs(10),
        measure: Duration::from_secs(30),
        think_min: Duration::from_millis(1_000),
        think_max: Duration::from_millis(10_000),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut index = 0;
    while index < args.len() {
        let value = args.get(index + 1).cloned().unwrap_or_default();
        let seconds = || Duration::from_secs(value.parse().expect("seconds"));
        let millis = || Duration::from_millis(value.parse().expect("milliseconds"));
        match args[index].as_str() {
            "--users" => {
                options.users = value
                    .split(',')
                    .map(|n| n.trim().parse().expect("--users: comma-separated counts"))
                    .collect();
            }
            "--ramp" => options.ramp = seconds(),
            "--measure" => options.measure = seconds(),
            "--think-min-ms" => options.think_min = millis(),
            "--think-max-ms" => options.think_max = millis(),
            _ => {
                index += 1;
                continue;
            }
        }
        index += 2;
    }
    options
}

/// CPU ticks (user + system) of this process's threads whose name starts with `prefix`.
fn thread_cpu_ticks(prefix: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    let mut total = 0;
    for task in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
        // After the command: state is field 3 of the line, utime 14 and stime 15 (1-based).
        let utime: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0);
        let stime: u64 = fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
        total += utime + stime;
    }
    total
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() as f64 - 1.0)).round() as usize;
    f64::from(sorted[rank.min(sorted.len() - 1)]) / 1000.0
}

#[derive(Debug, Default)]
struct UserResult {
    /// (latency µs, status, name) of requests started inside the measurement window.
    records: Vec<(u32, u16, &'static str)>,
    tasks: u64,
}

async fn run_user(
    mut user: VirtualUser,
    start_delay: Duration,
    window_start: Instant,
    window_end: Instant,
    options: Options,
) -> UserResult {
    tokio::time::sleep(start_delay).await;
    let mut result = UserResult::default();
    let keep = |records: Vec<RequestRecord>, started: Instant, result: &mut UserResult| {
        if started >= window_start && started < window_end {
            for record in records {
                let micros = u32::try_from(record.latency.as_micros()).unwrap_or(u32::MAX);
                result.records.push((micros, record.status, record.name));
            }
        }
    };
    let started = Instant::now();
    let records = user.on_start().await;
    keep(records, started, &mut result);
    loop {
        let think = user.think_time(options.think_min, options.think_max);
        if Instant::now() + think >= window_end {
            break;
        }
        tokio::time::sleep(think).await;
        let task = user.pick_task();
        let started = Instant::now();
        let records = user.run(task).await;
        if started >= window_start && started < window_end {
            result.tasks += 1;
        }
        keep(records, started, &mut result);
    }
    result
}

fn main() {
    let options = parse_options();
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("machine load average at start: {}", load.trim());
    }
    let stack_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("stack-w")
        .enable_all()
        .build()
        .expect("stack runtime");
    let load_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("load-w")
        .enable_all()
        .build()
        .expect("load runtime");

    let mut config = StackConfig {
        token: Some(TOKEN.into()),
        ..StackConfig::default()
    };
    config.agent.token = Some(TOKEN.into());
    let stack: RunningStack = stack_runtime
        .block_on(RunningStack::start(config))
        .expect("stack starts");
    let frontend = stack.url(ServiceName::Frontend);
    let cart = stack.url(ServiceName::Cart);
    let year = YearMonth::now().year;

    println!(
        "| users | requests in window | throughput (req/s) | ok % | p50 ok (ms) | p95 ok (ms) | p99 ok (ms) | load CPU per user (µs/s) | stack CPU per request (ms) | process CPU (cores) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut per_route_lines = Vec::new();
    let mut status_lines = Vec::new();
    for &users in &options.users {
        // Clear carts between sizes so each size starts from empty carts.
        load_runtime.block_on(async {
            let client = reqwest::Client::builder().no_proxy().build().unwrap();
            let _ = client
                .post(format!("{cart}/_admin/reset"))
                .bearer_auth(TOKEN)
                .send()
                .await;
        });
        let client = http_client();
        let budget = std::sync::Arc::new(tokio::sync::Semaphore::new(CONNECTION_BUDGET));
        let begin = Instant::now();
        let window_start = begin + options.ramp + options.think_max;
        let window_end = window_start + options.measure;
        let mut rng = SmallRng::seed_from_u64(users as u64);
        let mut handles = Vec::with_capacity(users);
        for index in 0..users {
            let user = VirtualUser::new(
                frontend.clone(),
                client.clone(),
                SmallRng::seed_from_u64((users as u64) << 32 | index as u64),
                year,
            )
            .with_connection_budget(budget.clone());
            let delay = Duration::from_micros(rng.random_range(0..options.ramp.as_micros() as u64));
            handles.push(load_runtime.spawn(run_user(
                user,
                delay,
                window_start,
                window_end,
                options.clone(),
            )));
        }
        // CPU sampled at the window's edges.
        std::thread::sleep(window_start.saturating_duration_since(Instant::now()));
        let load_before = thread_cpu_ticks("load-w");
        let stack_before = thread_cpu_ticks("stack-w");
        let process_before = thread_cpu_ticks("");
        std::thread::sleep(window_end.saturating_duration_since(Instant::now()));
        let load_ticks = thread_cpu_ticks("load-w") - load_before;
        let stack_ticks = thread_cpu_ticks("stack-w") - stack_before;
        let process_ticks = thread_cpu_ticks("") - process_before;

        let results: Vec<UserResult> = load_runtime.block_on(async {
            let mut results = Vec::with_capacity(handles.len());
            for handle in handles {
                results.push(handle.await.expect("user task"));
            }
            results
        });
        let mut ok_latencies = Vec::new();
        let mut by_route: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        let mut total = 0usize;
        let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
        for result in &results {
            for (micros, status, name) in &result.records {
                total += 1;
                *statuses.entry(*status).or_default() += 1;
                if (200..300).contains(status) {
                    ok_latencies.push(*micros);
                    by_route.entry(name).or_default().push(*micros);
                }
            }
        }
        ok_latencies.sort_unstable();
        let seconds = options.measure.as_secs_f64();
        let load_cpu_seconds = load_ticks as f64 / TICKS_PER_SECOND;
        let stack_cpu_seconds = stack_ticks as f64 / TICKS_PER_SECOND;
        println!(
            "| {users} | {total} | {:.0} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.3} | {:.2} |",
            total as f64 / seconds,
            100.0 * ok_latencies.len() as f64 / total.max(1) as f64,
            percentile(&ok_latencies, 50.0),
            percentile(&ok_latencies, 95.0),
            percentile(&ok_latencies, 99.0),
            1e6 * load_cpu_seconds / users as f64 / seconds,
            1e3 * stack_cpu_seconds / total.max(1) as f64,
            process_ticks as f64 / TICKS_PER_SECOND / seconds,
        );
        status_lines.push(format!(
            "| {users} | {} |",
            statuses
                .iter()
                .map(|(status, count)| format!("{status}: {count}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        for (route, latencies) in &mut by_route {
            latencies.sort_unstable();
            per_route_lines.push(format!(
                "| {users} | {route} | {} | {:.1} | {:.1} |",
                latencies.len(),
                percentile(latencies, 50.0),
                percentile(latencies, 95.0)
            ));
        }
    }
    println!();
    println!("| users | final statuses (0 = transport error) |");
    println!("|---:|---|");
    for line in status_lines {
        println!("{line}");
    }
    println!();
    println!("| users | route | ok requests | p50 (ms) | p95 (ms) |");
    println!("|---:|---|---:|---:|---:|");
    for line in per_route_lines {
        println!("{line}");
    }
    stack_runtime.block_on(stack.shutdown());
}
