//! Online Boutique task mix against the embedded stack at 100, 1,000 and 10,000 virtual users, driven by the
//! controller's load driver (`controller::load::run` with `Workload::OnlineBoutique`).
//!
//! Each virtual user has its own cookie jar and connection, running the mix with a uniform 1–10 s think time.
//! The stack runs on its own runtime (threads `stack-w`), the users on another (`load-w`), so
//! `/proc/self/task/*/stat` separates the CPU of each side. A size whose users do not fit in the process's
//! descriptors (`controller::load::check_descriptor_budget`, the stack being in this process) is skipped with
//! the reason. Reports throughput, p50/p95/p99 of ok pages, and CPU per user.
//!
//! `cargo bench -p controller --bench ob_mix -- [--users 100,1000,10000] [--ramp 10] [--measure 30]
//!  [--think-min-ms 1000] [--think-max-ms 10000]`

use std::time::{Duration, Instant};

use boutique::{RawStackConfig, RunningStack, ServiceName};
use controller::load::{
    LatencySummary, LoadSettings, OutcomeCounts, Workload, check_descriptor_budget, new_histogram,
    run,
};
use controller::testbed::AdminClient;

/// glibc malloc was a quarter of the profile under this load; mimalloc keeps allocation off the top.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TOKEN: &str = "bench-token";
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

fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

#[allow(clippy::disallowed_methods)] // a bench measures wall time
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

    let config = RawStackConfig::default()
        .with_token(TOKEN)
        .and_then(RawStackConfig::build)
        .expect("a valid stack config");
    let stack: RunningStack = stack_runtime
        .block_on(RunningStack::start(config))
        .expect("stack starts");
    let frontend = stack.addrs()[&ServiceName::Frontend];
    let cart = stack.url(ServiceName::Cart);
    let admin = AdminClient::new(TOKEN);

    println!(
        "| users | requests in window | throughput (req/s) | ok % | p50 ok (ms) | p95 ok (ms) | p99 ok (ms) | load CPU per user (µs/s) | stack CPU per request (ms) | process CPU (cores) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut per_route_lines = Vec::new();
    let mut status_lines = Vec::new();
    for &users in &options.users {
        let Ok(users_u32) = u32::try_from(users) else {
            println!("| {users} | skipped: more users than the driver takes |");
            continue;
        };
        if let Err(error) = check_descriptor_budget(users_u32, true) {
            println!("| {users} | skipped: {error} |");
            continue;
        }
        // Clear carts between sizes so each size starts from empty carts.
        if let Err(error) = load_runtime.block_on(admin.reset(&cart)) {
            println!("cart reset failed: {error}");
        }
        let begin = Instant::now();
        // The driver spreads first visits over the think-time maximum; the ramp is left out of the figures.
        let warmup = options.ramp + options.think_max;
        let window_start = begin + warmup;
        let window_end = window_start + options.measure;
        let load = load_runtime.spawn(run(
            LoadSettings {
                target: frontend,
                workload: Workload::OnlineBoutique,
                users: users_u32,
                think_time: (options.think_min, options.think_max),
                rate: None,
                timeout: Duration::from_secs(30),
                warmup,
                duration: options.measure,
                seed: users as u64,
            }
            .try_into()
            .expect("valid load config"),
            None,
        ));
        // CPU sampled at the window's edges.
        std::thread::sleep(window_start.saturating_duration_since(Instant::now()));
        let load_before = thread_cpu_ticks("load-w");
        let stack_before = thread_cpu_ticks("stack-w");
        let process_before = thread_cpu_ticks("");
        std::thread::sleep(window_end.saturating_duration_since(Instant::now()));
        let load_ticks = thread_cpu_ticks("load-w") - load_before;
        let stack_ticks = thread_cpu_ticks("stack-w") - stack_before;
        let process_ticks = thread_cpu_ticks("") - process_before;

        let report = load_runtime.block_on(load).expect("load task");
        let mut outcomes = OutcomeCounts::default();
        let mut ok_latency = new_histogram();
        for endpoint in &report.endpoints {
            outcomes.merge(&endpoint.stats.outcomes);
            ok_latency
                .add(&endpoint.stats.latency_ok)
                .expect("histograms of one driver have the same bounds");
            let route = LatencySummary::of(&endpoint.stats.latency_ok);
            per_route_lines.push(format!(
                "| {users} | {} | {} | {:.1} | {:.1} |",
                endpoint.name,
                route.count,
                ms(route.p50_us),
                ms(route.p95_us)
            ));
        }
        let ok = LatencySummary::of(&ok_latency);
        let total = outcomes.total();
        let seconds = options.measure.as_secs_f64();
        let load_cpu_seconds = load_ticks as f64 / TICKS_PER_SECOND;
        let stack_cpu_seconds = stack_ticks as f64 / TICKS_PER_SECOND;
        println!(
            "| {users} | {total} | {:.0} | {:.2} | {:.1} | {:.1} | {:.1} | {:.1} | {:.3} | {:.2} |",
            total as f64 / seconds,
            100.0 * outcomes.ok as f64 / total.max(1) as f64,
            ms(ok.p50_us),
            ms(ok.p95_us),
            ms(ok.p99_us),
            1e6 * load_cpu_seconds / users as f64 / seconds,
            1e3 * stack_cpu_seconds / total.max(1) as f64,
            process_ticks as f64 / TICKS_PER_SECOND / seconds,
        );
        status_lines.push(format!("| {users} | {outcomes:?} |"));
    }
    println!();
    println!("| users | outcomes |");
    println!("|---:|---|");
    for line in status_lines {
        println!("{line}");
    }
    println!();
    println!("| users | endpoint | ok requests | p50 (ms) | p95 (ms) |");
    println!("|---:|---|---:|---:|---:|");
    for line in per_route_lines {
        println!("{line}");
    }
    stack_runtime.block_on(stack.shutdown());
}
