//! Energy: RAPL counters through powercap when readable, otherwise a CPU-time model; every figure
//! says which (`measured` or `modelled`).
//!
//! RAPL (`/sys/class/powercap/intel-rapl:N/energy_uj`) counts package energy in µJ and wraps at
//! `max_energy_range_uj`; deltas are taken wrap-safe. It is machine-wide. VMs (like the machines
//! this project runs on) do not expose it, so the fallback is the Cloud Carbon Footprint linear
//! model `W = W_idle + u · (W_max − W_idle)` with `u` the machine's CPU utilisation, attributed to
//! this process by its share of the busy CPU time (Kepler's ratio).

mod model;
mod proc_stat;
mod rapl;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::time::Duration;

pub use model::{CpuModel, DEFAULT_IDLE_WATTS_PER_CPU, DEFAULT_MAX_WATTS_PER_CPU};
pub use proc_stat::{CpuTimes, parse_proc_stat, parse_process_stat};
pub use rapl::{RaplReader, RaplZone, wrapping_delta};

pub use crate::store::EnergySource;

/// Where powercap lives on Linux.
pub const POWERCAP_ROOT: &str = "/sys/class/powercap";

/// Energy over one interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnergyReading {
    pub joules: f64,
    pub source: EnergySource,
    /// CPU seconds this process used in the interval (user + system).
    pub cpu_seconds: f64,
}

/// Reads energy since its previous reading.
#[derive(Debug)]
pub enum EnergyMeter {
    Rapl { rapl: RaplReader, cpu: CpuClock },
    Model { model: CpuModel, cpu: CpuClock },
}

impl EnergyMeter {
    /// RAPL when at least one package zone is readable under `powercap_root`, else the model.
    pub fn detect(powercap_root: &Path, model: CpuModel) -> Self {
        let cpu = CpuClock::default();
        match RaplReader::open(powercap_root) {
            Ok(rapl) if !rapl.zones().is_empty() => EnergyMeter::Rapl { rapl, cpu },
            _ => EnergyMeter::Model { model, cpu },
        }
    }

    pub fn source(&self) -> EnergySource {
        match self {
            EnergyMeter::Rapl { .. } => EnergySource::Measured,
            EnergyMeter::Model { .. } => EnergySource::Modelled,
        }
    }

    /// Energy used since the previous call (or since the meter was made), `elapsed` being the wall
    /// time of that interval.
    pub fn sample(&mut self, elapsed: Duration) -> std::io::Result<EnergyReading> {
        match self {
            EnergyMeter::Rapl { rapl, cpu } => {
                let (process, _) = cpu.advance()?;
                Ok(EnergyReading {
                    joules: rapl.read_joules()?,
                    source: EnergySource::Measured,
                    cpu_seconds: process,
                })
            }
            EnergyMeter::Model { model, cpu } => {
                let (process, machine) = cpu.advance()?;
                Ok(EnergyReading {
                    joules: model.joules(elapsed, machine, process),
                    source: EnergySource::Modelled,
                    cpu_seconds: process,
                })
            }
        }
    }
}

/// This process's and the machine's CPU time, as deltas between readings of `/proc`.
#[derive(Debug, Default)]
pub struct CpuClock {
    last_process: Option<f64>,
    last_machine: Option<CpuTimes>,
}

impl CpuClock {
    /// (process CPU seconds, machine times) since the previous call.
    pub fn advance(&mut self) -> std::io::Result<(f64, CpuTimes)> {
        let process = parse_process_stat(&std::fs::read_to_string("/proc/self/stat")?)
            .ok_or_else(|| std::io::Error::other("/proc/self/stat: unexpected format"))?;
        let machine = parse_proc_stat(&std::fs::read_to_string("/proc/stat")?)
            .ok_or_else(|| std::io::Error::other("/proc/stat: unexpected format"))?;
        let process_delta = process - self.last_process.replace(process).unwrap_or(process);
        let machine_delta = machine.since(&self.last_machine.replace(machine).unwrap_or(machine));
        Ok((process_delta.max(0.0), machine_delta))
    }
}
