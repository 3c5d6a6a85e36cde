//! The probe storm at the agent's resolution: 10 ms buckets of half-open probes (`GET /_agent/probes`), summed
//! over agents, and their peaks in a run's measured window — per bucket, and per any second (a sliding window of
//! 100 buckets), so a storm is not split or smoothed by where the sampler's seconds fall.

use std::collections::BTreeMap;

/// One second, in milliseconds: the sliding window of [`peak_per_second`].
const SECOND_MS: i64 = 1_000;

/// The buckets of several agents summed by their start, ascending.
pub fn sum_over_agents<'a>(answers: impl IntoIterator<Item = &'a [(i64, u64)]>) -> Vec<(i64, u64)> {
    let mut sums: BTreeMap<i64, u64> = BTreeMap::new();
    for buckets in answers {
        for &(start_ms, count) in buckets {
            *sums.entry(start_ms).or_default() += count;
        }
    }
    sums.into_iter().collect()
}

/// The buckets starting in `[from_ms, to_ms)`.
fn within(buckets: &[(i64, u64)], from_ms: i64, to_ms: i64) -> impl Iterator<Item = (i64, u64)> {
    buckets
        .iter()
        .copied()
        .filter(move |(start_ms, _)| (from_ms..to_ms).contains(start_ms))
}

/// Most probes in one bucket starting in `[from_ms, to_ms)`; 0 when there is none.
pub fn peak_per_bucket(buckets: &[(i64, u64)], from_ms: i64, to_ms: i64) -> u64 {
    within(buckets, from_ms, to_ms)
        .map(|(_, count)| count)
        .max()
        .unwrap_or(0)
}

/// Most probes in the buckets starting in any `[t, t + 1 s)` inside `[from_ms, to_ms)`; 0 when there is none.
/// `buckets` ascending by start (as the agent answers and [`sum_over_agents`] gives them).
pub fn peak_per_second(buckets: &[(i64, u64)], from_ms: i64, to_ms: i64) -> u64 {
    let inside: Vec<(i64, u64)> = within(buckets, from_ms, to_ms).collect();
    let (mut first, mut sum, mut peak) = (0, 0, 0);
    for &(start_ms, count) in &inside {
        sum += count;
        while inside[first].0 <= start_ms - SECOND_MS {
            sum -= inside[first].1;
            first += 1;
        }
        peak = peak.max(sum);
    }
    peak
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_are_summed_per_bucket() {
        let one = [(0, 1), (10, 2)];
        let two = [(10, 3), (20, 1)];
        assert_eq!(
            sum_over_agents([&one[..], &two[..]]),
            vec![(0, 1), (10, 5), (20, 1)]
        );
    }

    #[test]
    fn the_peak_bucket_is_the_fullest_in_the_window() {
        let buckets = [(990, 9), (1_000, 2), (1_500, 4), (2_000, 7)];
        assert_eq!(peak_per_bucket(&buckets, 1_000, 2_000), 4);
        assert_eq!(peak_per_bucket(&buckets, 3_000, 4_000), 0);
    }

    #[test]
    fn the_peak_second_slides_over_the_buckets() {
        // 3 + 4 lie within one second (1.6 s .. 2.5 s) though a sampler's seconds [1, 2) and [2, 3) split them.
        let buckets = [(1_000, 1), (1_600, 3), (2_500, 4), (3_600, 2)];
        assert_eq!(peak_per_second(&buckets, 0, 10_000), 7);
        // Exactly one second apart is two seconds: 1 s after 1.6 s the 3 are out.
        let apart = [(1_600, 3), (2_600, 4)];
        assert_eq!(peak_per_second(&apart, 0, 10_000), 4);
        // Only buckets inside the window count.
        assert_eq!(peak_per_second(&buckets, 2_000, 10_000), 4);
        assert_eq!(peak_per_second(&[], 0, 10_000), 0);
    }
}
