//! When probes arrived, to the 10 ms: each probe ([`crate::PROBE_HEADER`]) counted in the bucket of its arrival
//! time (milliseconds since the Unix epoch / [`PROBE_BUCKET_MS`]), the last [`PROBE_BUCKETS_KEPT`] buckets' worth
//! (ten minutes) kept. Only non-empty buckets are held, in order: at most [`PROBE_BUCKETS_KEPT`] entries of 16 bytes,
//! so at most 960 kB however many probes arrive. Time is an argument: the agent passes its wall clock in.
//!
//! Served as `GET /_agent/probes?since_ms=…[&until_ms=…]` ([`ProbeBuckets`]): a reader sums the buckets of several
//! agents by their start and finds the peak per bucket or per any second (100 buckets) of its own window.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::api::InvalidFault;

/// Width of one bucket, milliseconds.
pub const PROBE_BUCKET_MS: u64 = 10;

/// Buckets kept: ten minutes of 10 ms buckets (also the most one answer holds).
pub const PROBE_BUCKETS_KEPT: usize = 60_000;

/// Latest time a window may name: the last millisecond of the year 9999 (exact in JSON's doubles).
pub const MAX_PROBE_MS: u64 = 253_402_300_799_999;

/// The window `?since_ms=…&until_ms=…` asks for, `[since_ms, until_ms)`: each at most [`MAX_PROBE_MS`], `since_ms`
/// from the start of time and `until_ms` to the end of it when left out, `until_ms` not before `since_ms`. An
/// unknown or repeated key is refused, naming it.
pub fn parse_window(query: Option<&str>) -> Result<(u64, u64), InvalidFault> {
    let (mut since, mut until) = (None, None);
    for pair in query
        .unwrap_or("")
        .split('&')
        .filter(|pair| !pair.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match key {
            "since_ms" => &mut since,
            "until_ms" => &mut until,
            _ => {
                return Err(InvalidFault::new(
                    key,
                    "unknown parameter (since_ms, until_ms)",
                ));
            }
        };
        if slot.is_some() {
            return Err(InvalidFault::new(key, "given twice"));
        }
        let millis = value
            .parse::<u64>()
            .ok()
            .filter(|millis| *millis <= MAX_PROBE_MS)
            .ok_or_else(|| {
                InvalidFault::new(
                    key,
                    format!(
                        "must be whole milliseconds since the Unix epoch, at most {MAX_PROBE_MS}"
                    ),
                )
            })?;
        *slot = Some(millis);
    }
    let (since, until) = (since.unwrap_or(0), until.unwrap_or(MAX_PROBE_MS));
    if until < since {
        return Err(InvalidFault::new("until_ms", "must not be before since_ms"));
    }
    Ok((since, until))
}

/// The answer of `GET /_agent/probes`: the non-empty buckets whose start lies in the asked window, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeBuckets {
    /// Width of a bucket, milliseconds ([`PROBE_BUCKET_MS`]).
    pub bucket_ms: u64,
    /// `[start_ms, probes]` of every non-empty bucket, ascending by start.
    pub buckets: Vec<(u64, u64)>,
}

/// The non-empty buckets of the last ten minutes, oldest first: `(bucket index, probes)`.
#[derive(Debug, Default)]
pub(crate) struct ProbeLog {
    buckets: VecDeque<(u64, u64)>,
}

impl ProbeLog {
    /// Counts one probe that arrived at `at_ms` (ms since the Unix epoch). A probe older than the newest kept bucket
    /// (a racing request) goes into its own bucket; one older than what is kept is dropped.
    pub(crate) fn record(&mut self, at_ms: u64) {
        let bucket = at_ms / PROBE_BUCKET_MS;
        match self.buckets.back_mut() {
            Some((last, count)) if *last == bucket => *count += 1,
            Some((last, _)) if *last > bucket => {
                let at = self.buckets.partition_point(|(index, _)| *index < bucket);
                let full = self.buckets.len() >= PROBE_BUCKETS_KEPT;
                match self.buckets.get_mut(at) {
                    Some((index, count)) if *index == bucket => *count += 1,
                    _ if at == 0 && full => {}
                    _ => self.buckets.insert(at, (bucket, 1)),
                }
            }
            _ => self.buckets.push_back((bucket, 1)),
        }
        let newest = self.buckets.back().map_or(bucket, |(index, _)| *index);
        while let Some((oldest, _)) = self.buckets.front() {
            let stale = newest - oldest >= PROBE_BUCKETS_KEPT as u64;
            if !stale && self.buckets.len() <= PROBE_BUCKETS_KEPT {
                break;
            }
            self.buckets.pop_front();
        }
    }

    /// The kept buckets starting in `[since_ms, until_ms)` (at most [`PROBE_BUCKETS_KEPT`]).
    pub(crate) fn window(&self, since_ms: u64, until_ms: u64) -> ProbeBuckets {
        let from = self
            .buckets
            .partition_point(|(index, _)| index * PROBE_BUCKET_MS < since_ms);
        let buckets = self
            .buckets
            .range(from..)
            .take_while(|(index, _)| index * PROBE_BUCKET_MS < until_ms)
            .map(|(index, count)| (index * PROBE_BUCKET_MS, *count))
            .collect();
        ProbeBuckets {
            bucket_ms: PROBE_BUCKET_MS,
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(log: &ProbeLog) -> Vec<(u64, u64)> {
        log.window(0, u64::MAX).buckets
    }

    #[test]
    fn windows_are_checked_and_name_the_field() {
        assert_eq!(parse_window(None).unwrap(), (0, MAX_PROBE_MS));
        assert_eq!(parse_window(Some("since_ms=5&until_ms=9")).unwrap(), (5, 9));
        let field = |query| parse_window(Some(query)).unwrap_err().field;
        assert_eq!(field("since_ms=x"), "since_ms");
        assert_eq!(field("until_ms=253402300800000"), "until_ms");
        assert_eq!(field("since_ms=9&until_ms=5"), "until_ms");
        assert_eq!(field("since_ms=1&since_ms=2"), "since_ms");
        assert_eq!(field("limit=3"), "limit");
    }

    #[test]
    fn probes_are_counted_in_the_10_ms_of_their_arrival() {
        let mut log = ProbeLog::default();
        for at_ms in [1_000, 1_009, 1_010, 1_019, 1_019, 1_050] {
            log.record(at_ms);
        }
        assert_eq!(all(&log), vec![(1_000, 2), (1_010, 3), (1_050, 1)]);
    }

    #[test]
    fn a_late_probe_goes_into_its_own_bucket_in_order() {
        let mut log = ProbeLog::default();
        for at_ms in [1_000, 1_030, 1_012, 1_001, 1_031] {
            log.record(at_ms);
        }
        assert_eq!(all(&log), vec![(1_000, 2), (1_010, 1), (1_030, 2)]);
    }

    #[test]
    fn the_window_holds_the_buckets_starting_in_it() {
        let mut log = ProbeLog::default();
        for at_ms in [990, 1_000, 1_500, 1_999, 2_000] {
            log.record(at_ms);
        }
        assert_eq!(
            log.window(1_000, 2_000).buckets,
            vec![(1_000, 1), (1_500, 1), (1_990, 1)]
        );
        assert_eq!(log.window(1_005, 1_500).buckets, Vec::<(u64, u64)>::new());
        assert_eq!(log.window(0, 1_000).bucket_ms, PROBE_BUCKET_MS);
    }

    #[test]
    fn only_the_last_ten_minutes_are_kept() {
        let mut log = ProbeLog::default();
        log.record(0);
        log.record(10);
        // Ten minutes after the second bucket: the first one is gone, the second is the oldest kept.
        let ten_minutes = PROBE_BUCKETS_KEPT as u64 * PROBE_BUCKET_MS;
        log.record(ten_minutes);
        assert_eq!(all(&log), vec![(10, 1), (ten_minutes, 1)]);
        // A probe older than anything kept is dropped rather than kept past the cap.
        log.record(5);
        assert_eq!(all(&log).len(), 2);
    }

    #[test]
    fn a_full_log_stays_at_its_cap() {
        let mut log = ProbeLog::default();
        for bucket in 0..(PROBE_BUCKETS_KEPT as u64 + 500) {
            log.record(bucket * PROBE_BUCKET_MS);
        }
        let kept = all(&log);
        assert_eq!(kept.len(), PROBE_BUCKETS_KEPT);
        assert_eq!(kept[0].0, 500 * PROBE_BUCKET_MS);
        // A late probe into a kept bucket adds to it.
        log.record(600 * PROBE_BUCKET_MS + 3);
        assert_eq!(all(&log).len(), PROBE_BUCKETS_KEPT);
        assert_eq!(log.window(6_000, 6_010).buckets, vec![(6_000, 2)]);
    }
}
