//! RAPL package counters through powercap, read wrap-safe.

use std::io;
use std::path::{Path, PathBuf};

/// `cur - prev`, or `(max - prev) + cur` when the counter wrapped past `max`.
pub fn wrapping_delta(previous: u64, current: u64, max_range: u64) -> u64 {
    if current >= previous {
        current - previous
    } else {
        max_range.saturating_sub(previous) + current
    }
}

/// One package zone (`intel-rapl:N`).
#[derive(Debug, Clone)]
pub struct RaplZone {
    pub name: String,
    energy_path: PathBuf,
    max_range_uj: u64,
    last_uj: u64,
}

/// Every readable package zone under a powercap root.
#[derive(Debug, Clone)]
pub struct RaplReader {
    zones: Vec<RaplZone>,
}

fn read_u64(path: &Path) -> io::Result<u64> {
    std::fs::read_to_string(path)?.trim().parse().map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

impl RaplReader {
    /// Finds the package zones (`intel-rapl:N`, not their `:M` sub-zones, which the package
    /// already counts) whose counters can be read, and takes a first reading of each.
    pub fn open(root: &Path) -> io::Result<Self> {
        let mut zones = Vec::new();
        let mut entries: Vec<PathBuf> = std::fs::read_dir(root)?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for dir in entries {
            let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let is_package = name
                .strip_prefix("intel-rapl:")
                .is_some_and(|rest| !rest.is_empty() && !rest.contains(':'));
            if !is_package {
                continue;
            }
            let energy_path = dir.join("energy_uj");
            let (Ok(last_uj), Ok(max_range_uj)) = (
                read_u64(&energy_path),
                read_u64(&dir.join("max_energy_range_uj")),
            ) else {
                continue; // unreadable (root only) or not a counter
            };
            let label = std::fs::read_to_string(dir.join("name"))
                .map(|s| s.trim().to_owned())
                .unwrap_or_else(|_| name.to_owned());
            zones.push(RaplZone {
                name: label,
                energy_path,
                max_range_uj,
                last_uj,
            });
        }
        Ok(RaplReader { zones })
    }

    pub fn zones(&self) -> &[RaplZone] {
        &self.zones
    }

    /// Joules over every zone since the previous reading.
    pub fn read_joules(&mut self) -> io::Result<f64> {
        let mut microjoules = 0u64;
        for zone in &mut self.zones {
            let current = read_u64(&zone.energy_path)?;
            microjoules += wrapping_delta(zone.last_uj, current, zone.max_range_uj);
            zone.last_uj = current;
        }
        Ok(microjoules as f64 / 1e6)
    }
}
