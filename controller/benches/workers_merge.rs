//! The controller's cost of merging load workers' seconds (`controller::workers::merge::Merge`), per worker-second:
//! W workers × S seconds of records of the Online Boutique mix (its endpoints drawn as its tasks draw them, each
//! worker's own recorder keeping the outcome histograms, so each endpoint's three HDR histograms hold what a
//! worker's second holds), serialized as the wire sends them (`FromWorker::Second`, one JSON text each). Timed,
//! in this thread's CPU time (and wall time beside it): reading the JSON (`serde_json::from_str`, as the pool
//! does per frame), then `Merge::second` (its checks, the HDR decoding, the adds, and closing each second once
//! every worker sent it: summaries and the merged histogram serialized, as stored). The WebSocket framing and
//! the store are not in it. The system allocator, as in the `tolerant` binary.
//!
//! `cargo bench -p controller --bench workers_merge -- [--workers 1,4,16,64] [--requests 1000,5000]
//!  [--seconds 20] [--min-ms 1000]`
//!
//! `--requests` is what one worker completes in one second (all endpoints together); `--seconds` the seconds a
//! repetition holds (at least 320 worker-seconds: one worker runs 320); `--min-ms` how long each size is repeated
//! at least (after one repetition not counted, at least three): CPU time is summed over the repetitions, wall
//! time is their median.

use std::hint::black_box;
use std::time::{Duration, Instant};

use controller::load::{Recorder, RequestOutcome, Sample, Workload};
use controller::workers::Merge;
use controller::workers::wire::{FromWorker, WorkerSecond};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// Bounds on what the options may ask, so a typo cannot ask for hours or all the memory.
const MAX_WORKERS: usize = 1_024;
const MAX_REQUESTS: u64 = 100_000;
const MAX_SECONDS: u64 = 600;
const MAX_MIN_MS: u64 = 600_000;
/// Worker-seconds of messages one size may hold at once (each a few tens of kB of JSON).
const MAX_WORKER_SECONDS: u64 = 20_000;
/// Worker-seconds a repetition holds at least (few workers run more seconds), so each timed phase lasts tens
/// of milliseconds: the thread's CPU time is only brought up to date at the scheduler's ticks.
const MIN_WORKER_SECONDS: u64 = 320;

#[derive(Debug, Clone)]
struct Options {
    workers: Vec<usize>,
    requests: Vec<u64>,
    seconds: u64,
    min: Duration,
}

fn list<T>(flag: &str, value: &str, most: T) -> Vec<T>
where
    T: std::str::FromStr + PartialOrd + Copy + std::fmt::Display + From<u8>,
{
    value
        .split(',')
        .map(|n| {
            let parsed: T = n.trim().parse().unwrap_or_else(|_| {
                panic!("{flag}: `{n}` is not a number (comma-separated counts)")
            });
            assert!(
                parsed >= T::from(1) && parsed <= most,
                "{flag}: {parsed} is not between 1 and {most}"
            );
            parsed
        })
        .collect()
}

fn parse_options() -> Options {
    let mut options = Options {
        workers: vec![1, 4, 16, 64],
        requests: vec![1_000, 5_000],
        seconds: 20,
        min: Duration::from_millis(1_000),
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut index = 0;
    while index < args.len() {
        let flag = args[index].as_str();
        let value = args.get(index + 1).cloned().unwrap_or_default();
        let number = |most: u64| -> u64 {
            let parsed = value
                .parse()
                .unwrap_or_else(|_| panic!("{flag}: `{value}` is not a number"));
            assert!(
                (1..=most).contains(&parsed),
                "{flag}: {parsed} is not between 1 and {most}"
            );
            parsed
        };
        match flag {
            "--workers" => options.workers = list(flag, &value, MAX_WORKERS),
            "--requests" => options.requests = list(flag, &value, MAX_REQUESTS),
            "--seconds" => options.seconds = number(MAX_SECONDS),
            "--min-ms" => options.min = Duration::from_millis(number(MAX_MIN_MS)),
            // `cargo bench` passes `--bench`; anything else unknown is ignored likewise.
            _ => {
                index += 1;
                continue;
            }
        }
        index += 2;
    }
    options
}

/// A latency as the healthy compose stack answers: most around a millisecond or two, a tail to tens of ms.
fn latency(rng: &mut SmallRng) -> Duration {
    let base: f64 = rng.random_range(0.4..2.5);
    let tail = if rng.random_bool(0.05) {
        rng.random_range(2.0..20.0)
    } else {
        1.0
    };
    Duration::from_secs_f64(base * tail / 1_000.0)
}

/// One worker's `seconds` seconds as it sends them: `requests` a second, endpoints as the mix's tasks draw them,
/// 1 % failed and 0.5 % rejected. Returns one JSON text per second.
fn worker_messages(worker: u64, requests: u64, seconds: u64, endpoints: usize) -> Vec<String> {
    let prepared = Workload::OnlineBoutique
        .prepare()
        .expect("the Online Boutique mix is valid");
    let mut rng = SmallRng::seed_from_u64(0x5eed ^ worker);
    let mut recorder = Recorder::new(endpoints, Duration::ZERO, None);
    recorder.keep_outcome_histograms();
    let mut steps = Vec::new();
    for second in 0..seconds {
        let mut done = 0;
        while done < requests {
            prepared.next_task(&mut rng, &mut steps);
            for step in &steps {
                if done == requests {
                    break;
                }
                let at = Duration::from_secs(second)
                    + Duration::from_micros(done * 1_000_000 / requests);
                let roll: f64 = rng.random();
                let outcome = if roll < 0.01 {
                    RequestOutcome::Failed
                } else if roll < 0.015 {
                    RequestOutcome::Rejected
                } else {
                    RequestOutcome::Ok
                };
                Sample {
                    endpoint: step.endpoint,
                    since_start: at,
                    outcome,
                    latency: latency(&mut rng),
                    expected_interval: Duration::ZERO,
                }
                .record_into(&mut recorder);
                done += 1;
            }
        }
    }
    let (closed, _) = recorder.finish(seconds);
    closed
        .iter()
        .map(|second| {
            let message = WorkerSecond::of(1, second).expect("outcome histograms kept");
            serde_json::to_string(&FromWorker::Second(message)).expect("a second serializes")
        })
        .collect()
}

/// CPU time this thread has run, from `/proc/thread-self/schedstat` (nanoseconds, its first field; brought up
/// to date at each scheduler tick, so phases are kept long and summed over repetitions): the figure for what the
/// merge costs the controller, which on a shared machine wall time overstates.
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let nanos = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Duration::from_nanos(nanos)
}

/// Wall and CPU time of one phase.
#[derive(Debug, Clone, Copy, Default)]
struct Spent {
    wall: Duration,
    cpu: Duration,
}

#[allow(clippy::disallowed_methods)] // a bench measures wall time
fn timed<T>(work: impl FnOnce() -> T) -> (T, Spent) {
    let (wall, cpu) = (Instant::now(), thread_cpu());
    let out = work();
    let spent = Spent {
        wall: wall.elapsed(),
        cpu: thread_cpu().saturating_sub(cpu),
    };
    (out, spent)
}

/// One repetition: every message read (as the pool reads a frame), then every record merged, second by second,
/// the workers in turn. Returns the time spent reading and the time spent merging.
fn merge_once(
    messages: &[Vec<String>],
    seconds: u64,
    endpoint_names: &[String],
    task_names: &[String],
) -> (Spent, Spent) {
    let workers: Vec<(String, u32)> = (0..messages.len())
        .map(|w| (format!("worker-{w}"), 5_000))
        .collect();
    let mut merge = Merge::new(
        endpoint_names.to_vec(),
        task_names.to_vec(),
        Duration::ZERO,
        &workers,
    );
    let (records, reading) = timed(|| {
        (0..seconds as usize)
            .flat_map(|second| {
                messages.iter().enumerate().map(move |(worker, texts)| {
                    let read: FromWorker =
                        serde_json::from_str(black_box(&texts[second])).expect("reads");
                    let FromWorker::Second(record) = read else {
                        unreachable!("only seconds were written")
                    };
                    (worker, record)
                })
            })
            .collect::<Vec<_>>()
    });
    let (closed, merging) = timed(|| {
        let mut closed = 0;
        for (worker, record) in &records {
            let out = merge.second(*worker, record, seconds).expect("merges");
            closed += out.len();
            black_box(out);
        }
        closed
    });
    assert_eq!(closed as u64, seconds, "every second closed");
    (reading, merging)
}

#[allow(clippy::disallowed_methods)] // a bench measures wall time
fn main() {
    let options = parse_options();
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        println!("machine load average at start: {}", load.trim());
    }
    let endpoint_names = Workload::OnlineBoutique.endpoint_names();
    let task_names = Workload::OnlineBoutique.task_names();
    println!(
        "| workers | requests per worker-second | seconds | JSON per worker-second (bytes) | read CPU (ns per worker-second) | merge CPU (ns per worker-second) | total CPU (ns per worker-second) | median wall (ns per worker-second) | repetitions |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for &requests in &options.requests {
        for &workers in &options.workers {
            let seconds = options
                .seconds
                .max(MIN_WORKER_SECONDS.div_ceil(workers as u64));
            let worker_seconds = workers as u64 * seconds;
            if worker_seconds > MAX_WORKER_SECONDS {
                println!(
                    "| {workers} | {requests} | {seconds} | skipped: {worker_seconds} worker-seconds, more than {MAX_WORKER_SECONDS} held at once |"
                );
                continue;
            }
            let messages: Vec<Vec<String>> = (0..workers as u64)
                .map(|w| worker_messages(w, requests, seconds, endpoint_names.len()))
                .collect();
            let bytes: usize = messages.iter().flatten().map(String::len).sum();
            // One repetition first, not counted: allocator and caches warm.
            merge_once(&messages, seconds, &endpoint_names, &task_names);
            let mut runs = Vec::new();
            let started = Instant::now();
            while runs.len() < 3 || started.elapsed() < options.min {
                runs.push(merge_once(&messages, seconds, &endpoint_names, &task_names));
            }
            // CPU: summed over the repetitions (each phase's reading is a tick off at most); wall: the median.
            let all = worker_seconds as f64 * runs.len() as f64;
            let cpu = |pick: fn(&(Spent, Spent)) -> Duration| {
                runs.iter().map(pick).sum::<Duration>().as_nanos() as f64 / all
            };
            let (read_cpu, merge_cpu) = (cpu(|r| r.0.cpu), cpu(|r| r.1.cpu));
            let mut walls: Vec<Duration> = runs.iter().map(|(r, m)| r.wall + m.wall).collect();
            walls.sort();
            let wall = walls[walls.len() / 2].as_nanos() as f64 / worker_seconds as f64;
            println!(
                "| {workers} | {requests} | {seconds} | {:.0} | {read_cpu:.0} | {merge_cpu:.0} | {:.0} | {wall:.0} | {} |",
                bytes as f64 / worker_seconds as f64,
                read_cpu + merge_cpu,
                runs.len()
            );
        }
    }
}
