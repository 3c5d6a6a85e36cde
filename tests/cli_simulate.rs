//! `tolerant simulate` as a user runs it: the built binary, flags in, text or JSON out, errors naming the flag.

use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tolerant");

fn simulate(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("simulate")
        .args(args)
        .output()
        .expect("run tolerant simulate")
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = simulate(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

const KEYS: [&str; 12] = [
    "model",
    "reached",
    "never_made",
    "slow_failures",
    "fast_failures",
    "failed_with_breaker",
    "failed_without_breaker",
    "successful",
    "rejected_after_recovery_s",
    "caller_seconds_with",
    "caller_seconds_without",
    "seconds",
];

// The hand-computed long outage of `breaker::sim::tests`, through the flags: one request a second, calls in
// [10, 40) hang 2 s, 3 consecutive failures trip, 10 s open, every arrival probes, 2 successes close.
#[test]
fn json_has_exactly_the_named_keys_and_the_hand_computed_totals() {
    let doc = json(&[
        "--window",
        "60",
        "--outage-start",
        "10s",
        "--outage",
        "30",
        "--threshold",
        "3",
        "--open-window",
        "10",
        "--successes-to-close",
        "2",
        "--rate",
        "1",
        "--timeout",
        "2s",
        "--half-open",
        "every-arrival",
        "--failure-rate",
        "1",
        "--instances",
        "1",
        "--jitter",
        "0",
    ]);
    let object = doc.as_object().expect("an object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let mut expected = KEYS.to_vec();
    expected.sort_unstable();
    assert_eq!(keys, expected);
    let totals: Vec<f64> = KEYS[1..11]
        .iter()
        .map(|k| doc[k].as_f64().expect("a number"))
        .collect();
    assert_eq!(
        totals,
        [30.0, 30.0, 8.0, 30.0, 38.0, 30.0, 22.0, 8.0, 16.0, 60.0]
    );
    let seconds = doc["seconds"].as_array().expect("per-second series");
    assert_eq!(seconds.len(), 60);
    assert_eq!(seconds[20]["state"], "open");
    assert_eq!(seconds[24]["state"], "half_open");
    assert_eq!(seconds[5]["state"], "closed");
    assert_eq!(seconds[20]["never_made"], 1);
}

// With one probe at a time (the breaker's real policy) the same outage rejects two more calls.
#[test]
fn the_real_half_open_policy_is_a_flag() {
    let base = [
        "--threshold",
        "3",
        "--open-window",
        "10",
        "--rate",
        "1",
        "--timeout",
        "2",
    ];
    let mut probes = base.to_vec();
    probes.extend(["--half-open", "probes:1"]);
    let every = json(&base);
    let one = json(&probes);
    assert_eq!(every["never_made"], 30);
    assert_eq!(one["never_made"], 32);
}

#[test]
fn text_output_shows_the_timeline_and_both_columns() {
    let out = simulate(&["--threshold", "3", "--open-window", "10", "--rate", "1"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert!(text.contains("with breaker"), "{text}");
    assert!(text.contains("without"), "{text}");
    let timeline = text
        .lines()
        .find(|l| l.trim_start().starts_with(".........."))
        .expect("a timeline line");
    assert_eq!(timeline.trim().len(), 60);
    assert!(
        timeline.contains('O') && timeline.contains('h'),
        "{timeline}"
    );
}

#[test]
fn errors_name_the_flag_and_exit_2() {
    let cases: [(&[&str], &str); 8] = [
        (&["--rate", "0"], "--rate"),
        (&["--rate", "1e9"], "--rate"),
        (&["--window", "0"], "--window"),
        (&["--window", "3d"], "--window"),
        (&["--failure-rate", "1.5"], "--failure-rate"),
        (&["--half-open", "probes:0"], "--half-open"),
        (&["--instances", "100000"], "--instances"),
        (
            &["--outage-start", "120", "--window", "60"],
            "--outage-start",
        ),
    ];
    for (args, flag) in cases {
        let out = simulate(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} printed a result");
    }
}

// `--model published` alone: the published simulator's model and defaults, and exactly its totals (derived by hand
// in `breaker::sim::tests`); without `--model`, today's model.
#[test]
fn the_published_model_prints_the_published_totals() {
    let doc = json(&["--model", "published"]);
    assert_eq!(doc["model"], "published");
    let counts: Vec<u64> = [
        "reached",
        "never_made",
        "slow_failures",
        "fast_failures",
        "failed_with_breaker",
        "failed_without_breaker",
        "successful",
    ]
    .iter()
    .map(|key| doc[key].as_u64().expect(key))
    .collect();
    assert_eq!(counts, [802, 398, 6, 398, 404, 360, 796]);
    assert_eq!(doc["rejected_after_recovery_s"], 2.2);
    assert_eq!(doc["caller_seconds_with"], 18.0);
    assert_eq!(doc["caller_seconds_without"], 1080.0);
    let text = String::from_utf8(simulate(&["--model", "published"]).stdout).unwrap();
    assert!(text.starts_with("model: published"), "{text}");
    assert!(text.contains("calls reached 802, never made 398"), "{text}");
    assert_eq!(json(&[])["model"], "at-timeout");
    assert!(!simulate(&["--model", "instant"]).status.success());
}
