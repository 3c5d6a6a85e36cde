//! The sizing ladder of `scripts/soak --find-size` (issue 26), tiny: sizes of 2 and 4 users with 5-second steps
//! over the soak's stack and background traffic, against the built binary. Each step must have its figures in
//! `size.csv`, a verdict, and the ladder must go on past a healthy size and stop at an unhealthy one.

use soak::size::judge::CSV_HEADER;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_ladder_writes_a_row_and_a_verdict_per_size() {
    let out = std::env::temp_dir().join(format!("tolerant-soak-size-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let config =
        soak::size::SizeConfig::new(env!("CARGO_BIN_EXE_tolerant").into(), out.clone(), "2,4", 5)
            .expect("the flags are in range");
    let ladder = soak::size::find_size(config)
        .await
        .expect("the ladder runs");
    let conclusion = soak::size::conclusion(&ladder);
    println!("{conclusion}");
    let csv = std::fs::read_to_string(out.join("size.csv")).expect("size.csv is written");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(CSV_HEADER));
    let rows: Vec<Vec<&str>> = lines.map(|line| line.split(',').collect()).collect();
    // Past a healthy first size the ladder goes on to the second; an unhealthy one ends it.
    let first_healthy = rows.first().is_some_and(|row| row[8] == "true");
    assert_eq!(rows.len(), if first_healthy { 2 } else { 1 }, "{csv}");
    for (row, users) in rows.iter().zip(["2", "4"]) {
        assert_eq!(row[0], users, "{csv}");
        // Throughput, per user, availability and the worst p95 were measured, and the CPU over the window.
        for field in [1, 2, 3, 4, 6] {
            assert!(row[field].parse::<f64>().is_ok(), "field {field}: {csv}");
        }
        assert!(row[8] == "true" || row[8] == "false", "{csv}");
        assert_eq!(row[8] == "false", !row[9].is_empty(), "{csv}");
    }
    match ladder.largest_healthy() {
        Some(users) => assert!(
            conclusion.contains(&format!("bash scripts/soak 30 --users {users}")),
            "{conclusion}"
        ),
        None => assert!(!first_healthy && conclusion.contains("no healthy size")),
    }
    let _ = std::fs::remove_dir_all(&out);
}
