//! `tolerant tune` as a user runs it: the built binary on an input file, text or JSON out (exactly the keys
//! `recommended`, `why`, `front`, `current`), a current config in a library's format, `--format`, and an input
//! error naming the field and its line with exit status 2.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_tolerant");

/// A quick input: the shipped example's profiles on a thinned grid.
const INPUT: &str = "name = \"payment\"\n[traffic]\nrate = 2.0\ntimeout = \"3s\"\n\
    [[profiles]]\nname = \"partial-25\"\nkind = \"partial\"\nrate = 0.25\nwindow = \"120s\"\n\
    [[profiles]]\nname = \"blips-3s\"\nkind = \"blips\"\nlength = \"3s\"\nevery = \"30s\"\nwindow = \"120s\"\n\
    [constraints]\ndetect_within = \"10s\"\n[search]\nmax_candidates = 400\n";

struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("tolerant-tune-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Dir(dir)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write");
        path
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tune(dir: &Dir, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("tune")
        .args(args)
        .arg("--svg")
        .arg(dir.0.join("front.svg"))
        .output()
        .expect("run tolerant tune")
}

#[test]
fn json_has_the_four_keys_and_a_pybreaker_current_config_is_placed() {
    let dir = Dir::new("json");
    let input = dir.file("input.toml", INPUT);
    let current = dir.file(
        "breaker.py",
        "db_breaker = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=30)\n",
    );
    let out = tune(
        &dir,
        &[
            input.to_str().unwrap(),
            "--current",
            current.to_str().unwrap(),
            "--json",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let keys: Vec<&String> = json.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["current", "front", "recommended", "why"]);
    assert_eq!(
        json["current"]["source"], "pybreaker",
        "recognised from the .py file"
    );
    assert!(
        json["recommended"]["trip"]
            .get("consecutive_failures")
            .is_none(),
        "{}",
        json["recommended"]
    );
    let svg = std::fs::read_to_string(dir.0.join("front.svg")).expect("the SVG is written");
    assert!(svg.starts_with("<svg"));
}

#[test]
fn format_prints_the_recommendation_in_the_library_and_text_shows_the_front() {
    let dir = Dir::new("format");
    let input = dir.file("input.toml", INPUT);
    let out = tune(&dir, &[input.to_str().unwrap(), "--format", "resilience4j"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Pareto front") && text.contains("three decisions"),
        "{text}"
    );
    assert!(
        text.contains("resilience4j.circuitbreaker:\n  instances:\n    payment:"),
        "{text}"
    );
}

#[test]
fn a_bad_input_exits_2_naming_the_field_and_its_line() {
    let dir = Dir::new("bad");
    let input = dir.file("input.toml", &INPUT.replace("rate = 0.25", "rate = 2.5"));
    let out = tune(&dir, &[input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("profiles[0].rate") && stderr.contains("line 9"),
        "{stderr}"
    );
    let current = dir.file("polly.json", "{\"BreakDurationGenerator\": \"x\"}");
    let good = dir.file("good.toml", INPUT);
    let out = tune(
        &dir,
        &[
            good.to_str().unwrap(),
            "--current",
            current.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("BreakDurationGenerator"));
}
