//! Parsers for `/proc/stat` (machine CPU times) and `/proc/<pid>/stat` (a process's CPU time).

/// Clock ticks per second of `/proc` times (`USER_HZ`, 100 on every mainstream Linux build).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// Machine CPU time in seconds, summed over CPUs, split into busy and idle.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuTimes {
    pub busy: f64,
    pub idle: f64,
}

impl CpuTimes {
    /// The difference to an earlier reading (never negative).
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            busy: (self.busy - earlier.busy).max(0.0),
            idle: (self.idle - earlier.idle).max(0.0),
        }
    }

    /// Busy share of the time, 0 to 1 (0 without any time).
    pub fn utilisation(&self) -> f64 {
        let total = self.busy + self.idle;
        if total > 0.0 { self.busy / total } else { 0.0 }
    }
}

/// The aggregate `cpu` line of `/proc/stat`: idle = idle + iowait; busy = the rest except guest
/// time (already counted in user).
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|line| line.starts_with("cpu "))?;
    let fields: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    if fields.len() < 4 {
        return None;
    }
    let field = |i: usize| fields.get(i).copied().unwrap_or(0.0);
    // user nice system idle iowait irq softirq steal guest guest_nice
    let idle = field(3) + field(4);
    let busy = field(0) + field(1) + field(2) + field(5) + field(6) + field(7);
    Some(CpuTimes {
        busy: busy / TICKS_PER_SECOND,
        idle: idle / TICKS_PER_SECOND,
    })
}

/// utime + stime of a `/proc/<pid>/stat` line, in seconds. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted from the last `)`.
pub fn parse_process_stat(text: &str) -> Option<f64> {
    let after_name = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name: state is field 3, so utime (14) and stime (15) are at 11 and 12 here.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / TICKS_PER_SECOND)
}
