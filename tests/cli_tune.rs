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
        stderr.contains("profiles[0].rate") && stderr.contains("line 8"),
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

/// The boutique the verification runs on in `verify_spec_runs_the_verification_on_its_own_targets`, started in
/// this process; its breakers start on a config neither candidate has (17 consecutive failures).
const STACK: &str = "name = \"own\"\nduration = \"10s\"\n[load]\nusers = 1\n[fault]\ntarget = \"payment\"\n\
    rates = [1.0]\n[breaker]\nmodes = [\"enforce\"]\n[breaker.trip]\nconsecutive_failures = 17\n";

/// `verify.spec` naming a spec whose `[targets]` are a boutique on loopback (started here, not by the binary):
/// the binary starts no stack of its own, every candidate's config reaches the targets' breakers (watched on
/// Checkout's `GET /_admin/breakers` while the experiment runs), the load reaches the
/// targets' frontend, and every candidate comes back measured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_spec_runs_the_verification_on_its_own_targets() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    let (stack, testbed) =
        controller::testbed::start_embedded_stack(&controller::test_support::spec(STACK))
            .await
            .expect("the boutique starts");
    let url = |name: &str| {
        (testbed.services.iter())
            .find(|(id, _)| id.as_str() == name)
            .map(|(_, url)| url.clone())
            .expect("a service of the stack")
    };
    let dir = Dir::new("verify-own");
    dir.file(
        "shop.toml",
        &format!(
            "name = \"shop\"\nduration = \"10s\"\n[targets]\nfrontend = \"{}\"\ncheckout = \"{}\"\n\
             payment = \"{}\"\nagent = \"{}\"\n[fault]\ntarget = \"payment\"\nrates = [0.5]\n\
             [load]\nmix = \"online-boutique\"\nusers = 20\nthink_time = [\"10ms\", \"50ms\"]\n",
            url("frontend"),
            url("checkout"),
            url("payment"),
            testbed.agent,
        ),
    );
    let input = dir.file(
        "tune.toml",
        &INPUT
            .replace("window = \"120s\"", "window = \"20s\"")
            .replace(
                "[[profiles]]\nname = \"blips-3s\"\nkind = \"blips\"\nlength = \"3s\"\nevery = \"30s\"\nwindow = \"20s\"\n",
                "",
            )
            .replace(
                "[search]",
                "[verify]\ntop = 1\nrounds = 2\ntime_scale = 4.0\nspec = \"shop.toml\"\n[search]",
            ),
    );
    let current = dir.file(
        "current.toml",
        "[trip]\nconsecutive_failures = 5\n[open]\nbase = \"30s\"\nmax = \"30s\"\n",
    );
    let db = controller::test_support::TempStore::new("verify-own");

    // Checkout's running config, watched while the binary runs the experiment.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn({
        let done = Arc::clone(&done);
        let admin = controller::testbed::AdminClient::new(testbed.token.clone());
        let checkout = url("checkout");
        async move {
            let mut seen: Vec<breaker::TripConfig> = Vec::new();
            while !done.load(Ordering::Relaxed) {
                if let Ok(view) = admin.breaker_config(&checkout).await {
                    if !seen.contains(view.config.trip()) {
                        seen.push(view.config.trip().clone());
                    }
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            seen
        }
    });
    let args: Vec<String> = [
        input.to_str().unwrap(),
        "--current",
        current.to_str().unwrap(),
        "--verify",
        "--json",
        "--db",
        &db.location(),
        "--token",
        &testbed.token,
        "--svg",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([dir.0.join("front.svg").display().to_string()])
    .collect();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .arg("tune")
            .args(args)
            .env_remove("TOLERANT_DB")
            .env_remove("TOLERANT_TOKEN")
            .env("RUST_LOG", "warn")
            .output()
            .expect("run tolerant tune")
    })
    .await
    .expect("joined");
    done.store(true, Ordering::Relaxed);
    let seen = watcher.await.expect("the watcher ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let verification = &json["why"]["verification"];
    let candidates = verification["candidates"].as_array().expect("candidates");
    let names: Vec<&str> = candidates
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["current", "recommended"], "{verification}");
    for candidate in candidates {
        assert!(
            candidate["measured"]["mean"].is_number(),
            "every candidate measured on the targets: {verification}"
        );
    }

    // The candidates' configs reached the targets' breakers: the current one (5 in a row) and the recommended
    // one (no consecutive detector), besides the startup config (17 in a row) the runs' ends restore.
    let consecutive: Vec<Option<u32>> = seen.iter().map(|t| t.consecutive_failures()).collect();
    assert!(consecutive.contains(&Some(17)), "{seen:?}");
    assert!(
        consecutive.contains(&Some(5)),
        "the current config: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|t| t.consecutive_failures().is_none() && t.failure_rate().is_some()),
        "the recommended config: {seen:?}"
    );

    // The experiment was stored with the targets, and every run finished.
    let store = db.open().await;
    let experiment = store.experiments().await.unwrap().pop().expect("stored");
    assert!(
        experiment.spec_toml.contains(&url("checkout")),
        "{}",
        experiment.spec_toml
    );
    let runs = store.runs(experiment.id).await.unwrap();
    assert_eq!(runs.len(), 2 * 2, "2 configs × 1 profile × 2 rounds");
    for run in &runs {
        assert_eq!(run.status, controller::store::Status::Finished, "{run:?}");
        let outcomes = run.outcomes.as_ref().expect("outcomes");
        assert!(outcomes.ok > 0, "the load reached the targets: {run:?}");
    }
    store.close().await;
    drop(stack);
}
