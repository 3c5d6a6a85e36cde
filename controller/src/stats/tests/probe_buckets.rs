//! A run's exact probe figures from its stored 10 ms buckets: only the measured window counts, a second is any
//! 100 consecutive buckets, and a run whose buckets were not read has no such figure (not a zero).

use super::*;

#[test]
fn probe_buckets_give_the_peaks_of_the_measured_window() {
    let mut data = run_data();
    // The measured window is START_MS + 2 s .. START_MS + 12 s (warmup 2 s, duration 10 s).
    let from = START_MS + 2_000;
    data.probe_buckets = Some(vec![
        (START_MS + 1_000, 40), // warmup: not counted
        (from + 1_700, 6),
        (from + 2_300, 5), // with the 6: 11 within one second, split by the sampler's seconds
        (from + 2_310, 2),
        (from + 9_990, 3),
        (from + 10_000, 50), // past the window
    ]);
    let metrics = run_metrics(&data).unwrap();
    let get = |metric| metrics.get(&MetricKey::run(metric)).unwrap();
    close(get(MetricName::ProbesPeakPer10ms), 6.0, 0.0);
    close(get(MetricName::ProbesPeakPerSExact), 13.0, 0.0);
    let unread = run_metrics(&run_data()).unwrap();
    assert!(
        unread
            .get(&MetricKey::run(MetricName::ProbesPeakPer10ms))
            .is_none()
    );
    // Read but empty: no probe reached the agent, a measured zero.
    data.probe_buckets = Some(Vec::new());
    let quiet = run_metrics(&data).unwrap();
    close(
        quiet
            .get(&MetricKey::run(MetricName::ProbesPeakPerSExact))
            .unwrap(),
        0.0,
        0.0,
    );
}
