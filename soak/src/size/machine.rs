//! The machine during a step of the sizing ladder: a process's CPU time (`utime + stime` of `/proc/PID/stat`,
//! every thread of it) and the load average (`/proc/loadavg`), sampled with the time of each sample, and the
//! CPU share of a window computed from those samples (a pure function of them).

/// Clock ticks a second of `/proc/PID/stat`'s times: Linux's `USER_HZ`, 100 on every architecture it
/// exposes to user space the same way (`getconf CLK_TCK`).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// One sample: when (ms since the epoch, as the store's run times), the process's CPU ticks so far, the
/// 1-minute load average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub at_ms: i64,
    pub ticks: Option<u64>,
    pub load: Option<f64>,
}

/// `utime + stime` of a `/proc/PID/stat` line, in clock ticks (the fields after the command's closing
/// parenthesis, which may itself hold spaces and parentheses).
pub fn stat_ticks(stat: &str) -> Option<u64> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Field 3 (state) is the first after the command; utime and stime are fields 14 and 15.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A process's CPU ticks so far; `None` when it is gone.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    stat_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The 1-minute load average (the first field of `/proc/loadavg`).
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// A sample of `pid` and the machine taken at `at_ms`.
pub fn sample(pid: u32, at_ms: i64) -> Sample {
    Sample {
        at_ms,
        ticks: cpu_ticks(pid),
        load: load_average(),
    }
}

/// The samples that bound the window `[from_ms, to_ms]` from inside: the first at or after `from_ms` and the
/// last at or before `to_ms`, each with its ticks read.
fn bounds(samples: &[Sample], from_ms: i64, to_ms: i64) -> Option<(Sample, Sample)> {
    let inside = || {
        (samples.iter())
            .filter(move |s| s.at_ms >= from_ms && s.at_ms <= to_ms && s.ticks.is_some())
    };
    let first = *inside().next()?;
    let last = *inside().next_back()?;
    (last.at_ms > first.at_ms).then_some((first, last))
}

/// The process's CPU over `[from_ms, to_ms]` in percent of one core (200 is two cores busy), between the
/// samples closest inside the window; `None` without two such samples.
pub fn cpu_percent(samples: &[Sample], from_ms: i64, to_ms: i64) -> Option<f64> {
    let (first, last) = bounds(samples, from_ms, to_ms)?;
    let ticks = last.ticks?.checked_sub(first.ticks?)? as f64;
    let seconds = (last.at_ms - first.at_ms) as f64 / 1000.0;
    Some(100.0 * ticks / TICKS_PER_SECOND / seconds)
}

/// The load average of the last sample at or before `to_ms` that read one.
pub fn load_at(samples: &[Sample], to_ms: i64) -> Option<f64> {
    (samples.iter())
        .filter(|s| s.at_ms <= to_ms)
        .filter_map(|s| s.load)
        .next_back()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utime_and_stime_past_a_command_with_spaces() {
        let stat = "4242 (tolerant (x) y) S 1 2 3 4 5 6 7 8 9 10 150 35 0 0 20 0 9 0 100 200 300";
        assert_eq!(stat_ticks(stat), Some(185));
        assert_eq!(stat_ticks("4242 (short) S 1 2"), None);
        let own = cpu_ticks(std::process::id());
        assert!(own.is_some(), "this process's stat is readable");
        assert_eq!(cpu_ticks(u32::MAX), None);
    }

    #[test]
    fn the_cpu_share_is_taken_between_the_samples_inside_the_window() {
        let at = |at_ms, ticks| Sample {
            at_ms,
            ticks: Some(ticks),
            load: Some(at_ms as f64 / 1000.0),
        };
        // 1.5 cores busy from 1 s to 5 s; before and after the window, nothing counts.
        let samples = [
            at(0, 0),
            at(1000, 500),
            at(3000, 800),
            at(5000, 1100),
            at(9000, 9000),
        ];
        let percent = cpu_percent(&samples, 500, 5000).expect("two samples inside");
        assert!((percent - 150.0).abs() < 1e-9, "{percent}");
        assert_eq!(cpu_percent(&samples, 500, 2000), None);
        assert_eq!(load_at(&samples, 5500), Some(5.0));
        assert_eq!(load_at(&samples, -1), None);
        let gone = Sample {
            at_ms: 4000,
            ticks: None,
            load: None,
        };
        let with_gap = [at(1000, 100), gone, at(2000, 200)];
        assert_eq!(cpu_percent(&with_gap, 0, 4000), Some(100.0));
    }
}
