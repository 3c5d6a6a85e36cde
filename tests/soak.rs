//! The 2-minute variant of `scripts/soak` (issue 26): the same driver (`soak::run`) against the built binary,
//! its intervals scaled so that everything happens at least once — the controller killed every 50 s (two kills,
//! each resumed), a halt with held requests and a mode switch every 20 s, runs of 4 s — and every criterion
//! must pass: stable RSS and descriptors after the first 40 s, no fault beyond its lease after a kill, no run
//! lost or duplicated, every halt releasing what it held, every finished experiment's stats computable; the
//! printed verdicts are kept in `verdicts.txt`.

use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_minute_soak_passes_every_criterion() {
    let out = std::env::temp_dir().join(format!("tolerant-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut config = soak::Config::minutes(env!("CARGO_BIN_EXE_tolerant").into(), out.clone(), 2.0)
        .expect("2 minutes is in range");
    config.warmup = Duration::from_secs(40);
    config.kill_every = Duration::from_secs(50);
    config.mode_every = Duration::from_secs(20);
    config.run_length = Duration::from_secs(4);
    config.users = 10;
    config.window = Some(Duration::from_secs(40));
    let outcome = soak::run(config).await.expect("the soak runs to its end");
    let report = soak::report(&outcome);
    println!("{report}");
    assert!(outcome.passed(), "a criterion failed:\n{report}");
    // Nothing was vacuous: at least the two scheduled kills (the one at the deadline may make three), and the
    // plots were drawn.
    let kills = report
        .split(" kills,")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|count| count.parse::<u32>().ok());
    assert!(kills.is_some_and(|kills| kills >= 2), "{report}");
    // The printed report is kept beside the CSV.
    let kept = std::fs::read_to_string(out.join("verdicts.txt")).expect("verdicts.txt is written");
    assert_eq!(kept.trim_end(), report);
    for plot in ["rss.svg", "fds.svg"] {
        let svg = std::fs::read_to_string(out.join(plot)).expect("the plot is written");
        assert!(svg.contains("<svg") && svg.contains("controller"), "{plot}");
    }
    let _ = std::fs::remove_dir_all(&out);
}
