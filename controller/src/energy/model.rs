//! The CPU-time energy model (Cloud Carbon Footprint's linear power curve, Kepler's attribution).

use std::time::Duration;

use super::proc_stat::CpuTimes;

/// Cloud Carbon Footprint's average idle watts per vCPU (AWS coefficients).
pub const DEFAULT_IDLE_WATTS_PER_CPU: f64 = 0.74;
/// Cloud Carbon Footprint's average full-load watts per vCPU (AWS coefficients).
pub const DEFAULT_MAX_WATTS_PER_CPU: f64 = 3.5;

/// Machine power as a line between idle and full load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuModel {
    pub idle_watts: f64,
    pub max_watts: f64,
}

impl CpuModel {
    /// The default coefficients for a machine with `cpus` vCPUs.
    pub fn for_cpus(cpus: usize) -> Self {
        let cpus = cpus.max(1) as f64;
        CpuModel {
            idle_watts: DEFAULT_IDLE_WATTS_PER_CPU * cpus,
            max_watts: DEFAULT_MAX_WATTS_PER_CPU * cpus,
        }
    }

    /// The default coefficients for this machine.
    pub fn for_this_machine() -> Self {
        Self::for_cpus(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    /// Machine power at utilisation `u` (0 to 1).
    pub fn watts(&self, utilisation: f64) -> f64 {
        let u = utilisation.clamp(0.0, 1.0);
        self.idle_watts + u * (self.max_watts - self.idle_watts)
    }

    /// Energy of this process over `elapsed`: machine energy × the process's share of busy CPU time.
    pub fn joules(&self, elapsed: Duration, machine: CpuTimes, process_cpu_seconds: f64) -> f64 {
        if machine.busy <= 0.0 {
            return 0.0;
        }
        let share = (process_cpu_seconds / machine.busy).clamp(0.0, 1.0);
        self.watts(machine.utilisation()) * elapsed.as_secs_f64() * share
    }
}
