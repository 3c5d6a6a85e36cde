//! The merge against one recorder of every worker's samples: the same seconds, histograms byte for byte, the
//! same totals; a lost worker's users missing from exactly the seconds it did not send.

use std::time::Duration;

use crate::load::{
    LatencySummary, Recorder, RequestOutcome, Sample, SecondStats, deserialize_histogram,
    new_histogram,
};
use crate::workers::merge::{LostShare, Merge};
use crate::workers::wire::{WorkerSecond, WorkerTotals};

const OUTCOMES: [RequestOutcome; 4] = [
    RequestOutcome::Ok,
    RequestOutcome::Failed,
    RequestOutcome::Rejected,
    RequestOutcome::Timeout,
];
const ENDPOINTS: usize = 3;
const SECONDS: u64 = 6;

/// Worker `worker`'s `n`-th sample: completion times spread over the run, latencies far apart per worker so
/// a wrong merge moves the percentiles.
fn sample(worker: u64, n: u64) -> Sample {
    Sample {
        endpoint: ((worker + n) % ENDPOINTS as u64) as usize,
        since_start: Duration::from_micros((n * 61_001 + worker * 7_919) % (SECONDS * 1_000_000)),
        outcome: OUTCOMES[((worker * 5 + n) % 4) as usize],
        latency: Duration::from_micros(200 + worker * 40_000 + (n * 7_717) % 9_000),
        expected_interval: if n % 7 == 0 {
            Duration::from_millis(3)
        } else {
            Duration::ZERO
        },
    }
}

fn samples(worker: u64, count: u64) -> Vec<Sample> {
    let mut all: Vec<Sample> = (0..count).map(|n| sample(worker, n)).collect();
    all.sort_by_key(|s| s.since_start);
    all
}

fn names(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}{i}")).collect()
}

/// One worker's seconds and totals as it would send them: its own recorder, outcome histograms kept.
fn worker_records(
    samples: &[Sample],
    warmup: Duration,
) -> (Vec<SecondStats>, Vec<crate::load::EndpointStats>) {
    let mut recorder = Recorder::new(ENDPOINTS, warmup, None);
    recorder.keep_outcome_histograms();
    for sample in samples {
        sample.record_into(&mut recorder);
    }
    recorder.finish(SECONDS)
}

fn totals_message(
    run: i64,
    totals: Vec<crate::load::EndpointStats>,
    measured: Duration,
) -> WorkerTotals {
    WorkerTotals::of(
        run,
        &crate::load::LoadReport {
            endpoints: names("e", ENDPOINTS)
                .into_iter()
                .zip(totals)
                .map(|(name, stats)| crate::load::EndpointReport { name, stats })
                .collect(),
            seconds: Vec::new(),
            tasks: vec![("t".to_owned(), 3)],
            measured,
            driver_failures: Default::default(),
        },
    )
}

/// Three workers' seconds, merged in any arrival order, equal the seconds and totals one recorder of all their
/// samples makes: counts summed, every histogram the same bytes, so the merged p95 is the p95 of one histogram
/// of all samples.
#[test]
fn merged_seconds_equal_one_recorder_of_every_workers_samples() {
    let warmup = Duration::from_secs(1);
    let per_worker = [(0u64, 150u64), (1, 220), (2, 90)];
    let mut one = Recorder::new(ENDPOINTS, warmup, None);
    let mut everything: Vec<Sample> = per_worker
        .iter()
        .flat_map(|&(w, n)| samples(w, n))
        .collect();
    everything.sort_by_key(|s| s.since_start);
    for sample in &everything {
        sample.record_into(&mut one);
    }
    let (one_seconds, one_totals) = one.finish(SECONDS);

    let workers: Vec<(String, u32)> = names("w", 3).into_iter().map(|n| (n, 10)).collect();
    let mut merge = Merge::new(
        names("e", ENDPOINTS),
        vec!["t".to_owned()],
        warmup,
        &workers,
    );
    let records: Vec<_> = per_worker
        .iter()
        .map(|&(w, n)| worker_records(&samples(w, n), warmup))
        .collect();
    let mut closed = Vec::new();
    // Arrival interleaved and out of step: worker 2 runs two seconds behind the others.
    for step in 0..SECONDS as usize + 2 {
        for (worker, (seconds, _)) in records.iter().enumerate() {
            let at = if worker == 2 {
                step.checked_sub(2)
            } else {
                Some(step)
            };
            if let Some(second) = at.and_then(|at| seconds.get(at)) {
                let message = WorkerSecond::of(7, second).expect("outcome histograms kept");
                closed.extend(merge.second(worker, &message, SECONDS).unwrap());
            }
        }
        // Nothing closes before the slowest worker sent it.
        assert!(
            closed.len() <= step.saturating_sub(1),
            "step {step}: {}",
            closed.len()
        );
    }
    for (worker, (_, totals)) in records.into_iter().enumerate() {
        let message = totals_message(7, totals, Duration::from_secs(SECONDS - 1));
        closed.extend(merge.done(worker, &message).unwrap());
    }
    let (rest, report, lost, shares) = merge.finish(SECONDS);
    closed.extend(rest);

    assert_eq!(closed, one_seconds, "seconds, histograms byte for byte");
    assert!(lost.is_empty());
    let counts: Vec<u64> = shares.iter().map(|s| s.in_seconds).collect();
    assert_eq!(counts, vec![150, 220, 90]);
    let measured: u64 = shares.iter().map(|s| s.requests).sum();
    assert_eq!(measured, report.outcomes().total());
    let requests: u64 = closed.iter().map(|s| s.outcomes().total()).sum();
    assert_eq!(requests, everything.len() as u64);
    for (merged, single) in report.endpoints.iter().zip(&one_totals) {
        assert_eq!(merged.stats.outcomes, single.outcomes);
        assert_eq!(
            LatencySummary::of(&merged.stats.latency),
            LatencySummary::of(&single.latency)
        );
        assert_eq!(merged.stats.latency_ok, single.latency_ok);
    }
    // The merged p95 per endpoint is the p95 of one histogram built from the raw samples (no recorder).
    for endpoint in 0..ENDPOINTS {
        let mut raw = new_histogram();
        for s in everything
            .iter()
            .filter(|s| s.endpoint == endpoint && s.since_start >= warmup)
        {
            let interval = crate::load::latency_us(s.expected_interval);
            raw.record_correct(
                crate::load::latency_us(s.latency),
                if interval == 0 { 0 } else { interval.max(1) },
            )
            .unwrap();
        }
        assert_eq!(
            report.endpoints[endpoint].summary().p95_us,
            raw.value_at_quantile(0.95)
        );
        let second_sum = closed
            .iter()
            .filter(|s| !s.warmup)
            .flat_map(|s| &s.endpoints)
            .filter(|e| e.endpoint == endpoint)
            .fold(new_histogram(), |mut sum, e| {
                sum.add(deserialize_histogram(&e.histogram_v2).unwrap())
                    .unwrap();
                sum
            });
        assert_eq!(
            second_sum.value_at_quantile(0.95),
            raw.value_at_quantile(0.95)
        );
    }
    assert_eq!(report.tasks, vec![("t".to_owned(), 9)]);
}

/// A worker lost after its second 2: its users are missing from second 3 to the end, what it had not sent is
/// not counted, what it sent is (the seconds and the totals alike), and the others' seconds still close.
#[test]
fn a_lost_worker_leaves_its_users_missing_in_exactly_the_seconds_it_did_not_send() {
    let warmup = Duration::ZERO;
    let workers = vec![("a".to_owned(), 4), ("b".to_owned(), 6)];
    let mut merge = Merge::new(
        names("e", ENDPOINTS),
        vec!["t".to_owned()],
        warmup,
        &workers,
    );
    let (a_seconds, a_totals) = worker_records(&samples(0, 200), warmup);
    let (b_seconds, _) = worker_records(&samples(1, 300), warmup);
    let mut closed = Vec::new();
    for second in &b_seconds[..3] {
        closed.extend(
            merge
                .second(1, &WorkerSecond::of(1, second).unwrap(), SECONDS)
                .unwrap(),
        );
    }
    assert!(closed.is_empty(), "a has sent nothing yet");
    closed.extend(merge.lost(1));
    for second in &a_seconds {
        closed.extend(
            merge
                .second(0, &WorkerSecond::of(1, second).unwrap(), SECONDS)
                .unwrap(),
        );
    }
    closed.extend(
        merge
            .done(
                0,
                &totals_message(1, a_totals, Duration::from_secs(SECONDS)),
            )
            .unwrap(),
    );
    let (rest, report, lost, shares) = merge.finish(SECONDS);
    closed.extend(rest);

    assert_eq!(
        lost,
        vec![LostShare {
            worker: "b".to_owned(),
            users: 6,
            from_second: 3,
            to_second: SECONDS
        }]
    );
    assert_eq!(closed.len() as u64, SECONDS);
    assert_eq!((shares[0].requests, shares[0].in_seconds), (200, 200));
    assert_eq!(shares[1].requests, shares[1].in_seconds);
    for (second, merged) in closed.iter().enumerate() {
        let b = if second < 3 {
            b_seconds[second].outcomes().total()
        } else {
            0
        };
        assert_eq!(
            merged.outcomes().total(),
            a_seconds[second].outcomes().total() + b,
            "second {second}"
        );
    }
    let counted: u64 = report
        .endpoints
        .iter()
        .map(|e| e.stats.outcomes.total())
        .sum();
    let b_sent: u64 = b_seconds[..3].iter().map(|s| s.outcomes().total()).sum();
    assert_eq!(counted, 200 + b_sent);
    // Its messages after the loss are refused; so is a second out of order or past the run.
    assert!(merge_refuses_late_and_out_of_order());
}

fn merge_refuses_late_and_out_of_order() -> bool {
    let workers = vec![("a".to_owned(), 1)];
    let mut merge = Merge::new(
        names("e", ENDPOINTS),
        vec!["t".to_owned()],
        Duration::ZERO,
        &workers,
    );
    let (seconds, _) = worker_records(&samples(0, 50), Duration::ZERO);
    let message = |i: usize| WorkerSecond::of(1, &seconds[i]).unwrap();
    merge.second(0, &message(1), SECONDS).unwrap();
    let again = merge.second(0, &message(1), SECONDS).unwrap_err();
    let past = merge.second(0, &message(5), 4).unwrap_err();
    let mut bad = message(2);
    bad.endpoints[0].histograms.latency[20] ^= 0xff;
    let corrupt = merge.second(0, &bad, SECONDS).unwrap_err();
    merge.lost(0);
    let after = merge.second(0, &message(3), SECONDS).unwrap_err();
    again.contains("out of order")
        && past.contains("past the run")
        && corrupt.contains("bounds")
        && after.contains("after its end")
}
