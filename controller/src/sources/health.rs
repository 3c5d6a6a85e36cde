//! How well a `[[sources]]` Prometheus source was seen during one run: its scrapes, the failed ones, the longest
//! gap between two answers, and the periods it was blind (from the last answer before a failed scrape to the
//! next answer, or to the end of the run). A [`ScrapeTally`] is fed each scrape's outcome with its time (an
//! argument: nothing here reads a clock) and gives a [`SourceHealth`] when the run ends, which the run stores and
//! the stats read: a source's breakers are not counted over a window it did not see.

use serde::Serialize;

/// Blind periods kept per source and run; beyond this the last one is stretched to cover the next (more blind
/// time, never less), so a source that flaps all run long costs bounded memory and storage.
pub const MAX_BLIND_PERIODS: usize = 64;

/// One period a source did not answer, Unix milliseconds `[from_ms, to_ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct BlindPeriod {
    pub from_ms: i64,
    pub to_ms: i64,
}

/// What a run saw of one source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SourceHealth {
    /// The source's name (`prometheus:<url>`), as its transitions' `source` says.
    pub source: String,
    /// Scrapes tried (the baseline included).
    pub scrapes: u64,
    /// Scrapes that got no usable answer.
    pub failures: u64,
    /// The longest time between two answers (from the start to the first answer, and from the last answer to the
    /// end, count too), milliseconds.
    pub longest_gap_ms: i64,
    /// When it was blind, in time order (at most [`MAX_BLIND_PERIODS`]).
    pub blind: Vec<BlindPeriod>,
}

impl SourceHealth {
    /// Milliseconds of `[from_ms, to_ms)` the source was blind.
    pub fn blind_ms_within(&self, from_ms: i64, to_ms: i64) -> i64 {
        self.blind
            .iter()
            .map(|period| (period.to_ms.min(to_ms) - period.from_ms.max(from_ms)).max(0))
            .sum()
    }

    /// Milliseconds the source was blind over the whole run.
    pub fn blind_ms(&self) -> i64 {
        self.blind_ms_within(i64::MIN, i64::MAX)
    }
}

/// Counts one source's scrapes as they happen; see the module documentation.
#[derive(Debug, Clone)]
pub struct ScrapeTally {
    source: String,
    scrapes: u64,
    failures: u64,
    /// The last answer, or the start while there was none.
    last_answer_ms: i64,
    longest_gap_ms: i64,
    /// Since when the source has been blind (the last answer before the first failure of the current run of
    /// them), while it is.
    blind_since: Option<i64>,
    blind: Vec<BlindPeriod>,
}

impl ScrapeTally {
    /// A tally of `source` from `start_ms` on.
    pub fn new(source: impl Into<String>, start_ms: i64) -> Self {
        ScrapeTally {
            source: source.into(),
            scrapes: 0,
            failures: 0,
            last_answer_ms: start_ms,
            longest_gap_ms: 0,
            blind_since: None,
            blind: Vec::new(),
        }
    }

    /// A scrape taken at `at_ms` was answered.
    pub fn answered(&mut self, at_ms: i64) {
        self.scrapes += 1;
        self.longest_gap_ms = self.longest_gap_ms.max(at_ms - self.last_answer_ms);
        self.last_answer_ms = self.last_answer_ms.max(at_ms);
        if let Some(from_ms) = self.blind_since.take() {
            self.close(from_ms, at_ms);
        }
    }

    /// A scrape taken at `at_ms` got no usable answer.
    pub fn failed(&mut self, _at_ms: i64) {
        self.scrapes += 1;
        self.failures += 1;
        self.blind_since.get_or_insert(self.last_answer_ms);
    }

    /// Whether the source is blind now (its last scrape failed).
    pub fn is_blind(&self) -> bool {
        self.blind_since.is_some()
    }

    /// The source's account at `end_ms` (a source blind then is blind up to it).
    pub fn health(&self, end_ms: i64) -> SourceHealth {
        let mut tally = self.clone();
        tally.longest_gap_ms = tally.longest_gap_ms.max(end_ms - tally.last_answer_ms);
        if let Some(from_ms) = tally.blind_since.take() {
            tally.close(from_ms, end_ms);
        }
        SourceHealth {
            source: tally.source,
            scrapes: tally.scrapes,
            failures: tally.failures,
            longest_gap_ms: tally.longest_gap_ms.max(0),
            blind: tally.blind,
        }
    }

    fn close(&mut self, from_ms: i64, to_ms: i64) {
        let period = BlindPeriod {
            from_ms,
            to_ms: to_ms.max(from_ms),
        };
        let full = self.blind.len() >= MAX_BLIND_PERIODS;
        match self.blind.last_mut() {
            Some(last) if full => last.to_ms = period.to_ms,
            _ => self.blind.push(period),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_healthy_source_is_never_blind() {
        let mut tally = ScrapeTally::new("prometheus:x", 1_000);
        for at in (1_000..2_000).step_by(50) {
            tally.answered(at);
        }
        let health = tally.health(2_000);
        assert_eq!((health.scrapes, health.failures), (20, 0));
        assert_eq!(health.longest_gap_ms, 50);
        assert!(health.blind.is_empty());
        assert_eq!(health.blind_ms(), 0);
    }

    #[test]
    fn a_source_that_stops_answering_after_its_baseline_is_blind_to_the_end() {
        let mut tally = ScrapeTally::new("prometheus:x", 0);
        tally.answered(10);
        for at in (60..10_000).step_by(50) {
            tally.failed(at);
        }
        assert!(tally.is_blind());
        let health = tally.health(10_000);
        assert_eq!(health.scrapes, 1 + 199);
        assert_eq!(health.failures, 199);
        assert_eq!(health.longest_gap_ms, 9_990);
        assert_eq!(
            health.blind,
            vec![BlindPeriod {
                from_ms: 10,
                to_ms: 10_000
            }]
        );
        assert_eq!(health.blind_ms_within(5_000, 7_000), 2_000);
        assert_eq!(health.blind_ms_within(20_000, 30_000), 0);
    }

    #[test]
    fn a_gap_runs_from_the_last_answer_to_the_next() {
        let mut tally = ScrapeTally::new("s", 0);
        tally.failed(0);
        tally.failed(100);
        tally.answered(200);
        tally.answered(300);
        tally.failed(400);
        tally.answered(900);
        let health = tally.health(950);
        assert_eq!((health.scrapes, health.failures), (6, 3));
        assert_eq!(health.longest_gap_ms, 600);
        assert_eq!(
            health.blind,
            vec![
                BlindPeriod {
                    from_ms: 0,
                    to_ms: 200
                },
                BlindPeriod {
                    from_ms: 300,
                    to_ms: 900
                }
            ]
        );
        assert_eq!(health.blind_ms(), 800);
    }

    #[test]
    fn blind_periods_are_bounded_and_never_undercount() {
        let mut tally = ScrapeTally::new("s", 0);
        let cycles = MAX_BLIND_PERIODS as i64 * 3;
        for cycle in 0..cycles {
            tally.failed(cycle * 100 + 10);
            tally.answered(cycle * 100 + 50);
        }
        let health = tally.health(cycles * 100);
        assert_eq!(health.blind.len(), MAX_BLIND_PERIODS);
        assert_eq!(health.failures, cycles as u64);
        // Each cycle was blind from its previous answer (50 ms before) to its own: at least that in all.
        assert!(health.blind_ms() >= 50 * (cycles - 1) + 50, "{health:?}");
        assert_eq!(health.blind.last().unwrap().to_ms, (cycles - 1) * 100 + 50);
    }
}
