//! The advisor's search on one core: every candidate of the grid against three profiles (a 25 % partial
//! failure, 3 s blips, a 2 % baseline) on `breaker::sim`, priced and ranked — the wall time of `advise` (the
//! passes without a breaker, once per profile, included). Two traffic levels: 5 and 20 calls a second reaching
//! the dependency over two-minute windows (600 and 2,400 calls per simulation). Five repetitions each; best and
//! median printed.
//!
//! Run: `taskset -c 1 cargo bench -p controller --bench advisor_search` (the target: ≥ 10,000 candidates × 3
//! profiles in under 10 s on one core; figures in `controller/BENCHMARKS.md`).

use std::time::{Duration, Instant};

use controller::advisor::{self, AdviseOptions, TuneInput};

fn input(rate: f64) -> TuneInput {
    TuneInput::parse(&format!(
        r#"
name = "bench"
[traffic]
rate = {rate}
timeout = "1s"
latency = "20ms"
[[profiles]]
name = "partial-25"
kind = "partial"
rate = 0.25
window = "120s"
[[profiles]]
name = "blips-3s"
kind = "blips"
length = "3s"
every = "30s"
window = "120s"
[[profiles]]
name = "baseline-2"
kind = "baseline"
rate = 0.02
window = "120s"
[constraints]
detect_within = "10s"
false_trips_per_hour = 0
"#
    ))
    .expect("the bench input is valid")
}

#[allow(clippy::disallowed_methods)] // a bench measures wall time
fn main() {
    for rate in [5.0, 20.0] {
        let input = input(rate);
        let candidates = advisor::candidates(&input).len();
        let mut times: Vec<Duration> = Vec::new();
        let mut recommended = String::new();
        for _ in 0..5 {
            let began = Instant::now();
            let advice = advisor::advise(&input, None, &AdviseOptions::default()).expect("search");
            times.push(began.elapsed());
            recommended = advice.recommended.label.clone();
        }
        times.sort();
        println!(
            "rate {rate}/s: {candidates} candidates × {} profiles = {} simulations; best {:.2} s, median {:.2} s ({:.0} µs a simulation at the best); recommended {recommended}",
            input.profiles.len(),
            candidates * input.profiles.len(),
            times[0].as_secs_f64(),
            times[times.len() / 2].as_secs_f64(),
            times[0].as_secs_f64() * 1e6 / (candidates * input.profiles.len()) as f64,
        );
    }
}
