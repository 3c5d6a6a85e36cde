//! Energy tests: the RAPL reader on a fake powercap tree (wraparound included), the `/proc` parsers
//! and the model's arithmetic.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::*;

struct FakePowercap(PathBuf);

impl FakePowercap {
    fn new() -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let root = std::env::temp_dir().join(format!(
            "tolerant-powercap-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&root).unwrap();
        FakePowercap(root)
    }

    fn zone(&self, dir: &str, name: &str, energy_uj: u64, max_uj: u64) {
        let zone = self.0.join(dir);
        std::fs::create_dir_all(&zone).unwrap();
        std::fs::write(zone.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(zone.join("max_energy_range_uj"), format!("{max_uj}\n")).unwrap();
        self.set(dir, energy_uj);
    }

    fn set(&self, dir: &str, energy_uj: u64) {
        std::fs::write(self.0.join(dir).join("energy_uj"), format!("{energy_uj}\n")).unwrap();
    }
}

impl Drop for FakePowercap {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn wrapping_delta_handles_the_wrap() {
    assert_eq!(wrapping_delta(100, 250, 1_000), 150);
    assert_eq!(wrapping_delta(900, 50, 1_000), 150);
    assert_eq!(wrapping_delta(0, 0, 1_000), 0);
}

#[test]
fn rapl_reads_package_zones_only_and_survives_a_wrap() {
    let powercap = FakePowercap::new();
    powercap.zone("intel-rapl:0", "package-0", 999_000_000, 1_000_000_000);
    powercap.zone("intel-rapl:1", "package-1", 5_000_000, 1_000_000_000);
    // A sub-zone (core) is already counted in its package.
    powercap.zone("intel-rapl:0:0", "core", 1_000, 1_000_000_000);
    let mut reader = RaplReader::open(&powercap.0).unwrap();
    let names: Vec<&str> = reader.zones().iter().map(|z| z.name.as_str()).collect();
    assert_eq!(names, vec!["package-0", "package-1"]);

    // Package 0 wraps: 999 J → 3 J on a 1000 J counter is 4 J; package 1 adds 2.5 J.
    powercap.set("intel-rapl:0", 3_000_000);
    powercap.set("intel-rapl:1", 7_500_000);
    powercap.set("intel-rapl:0:0", 9_000_000);
    let joules = reader.read_joules().unwrap();
    assert!((joules - 6.5).abs() < 1e-9, "{joules}");
    assert_eq!(reader.read_joules().unwrap(), 0.0, "no change, no energy");
}

#[test]
fn meter_uses_rapl_when_readable_and_the_model_otherwise() {
    let powercap = FakePowercap::new();
    let model = CpuModel::for_cpus(2);
    let meter = EnergyMeter::detect(&powercap.0, model);
    assert_eq!(meter.source(), EnergySource::Modelled, "no zones");
    let missing = EnergyMeter::detect(&powercap.0.join("absent"), model);
    assert_eq!(missing.source(), EnergySource::Modelled);

    powercap.zone("intel-rapl:0", "package-0", 10, 1_000_000);
    let mut meter = EnergyMeter::detect(&powercap.0, model);
    assert_eq!(meter.source(), EnergySource::Measured);
    powercap.set("intel-rapl:0", 2_000_010);
    let reading = meter.sample(Duration::from_secs(1)).unwrap();
    assert_eq!(reading.source, EnergySource::Measured);
    assert!((reading.joules - 2.0).abs() < 1e-9, "{reading:?}");
}

#[test]
fn proc_stat_parsers_read_known_lines() {
    let stat = "cpu  1000 50 250 8000 200 10 20 30 0 0\ncpu0 500 25 125 4000 100 5 10 15 0 0\n";
    let times = parse_proc_stat(stat).unwrap();
    assert!((times.busy - 13.6).abs() < 1e-9, "{times:?}");
    assert!((times.idle - 82.0).abs() < 1e-9, "{times:?}");
    assert!(parse_proc_stat("intr 1 2 3").is_none());

    // A command name with spaces and parentheses; utime 150, stime 50 ticks.
    let process =
        "4242 (tolerant (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 8 0 1000 0 0";
    assert!((parse_process_stat(process).unwrap() - 2.0).abs() < 1e-9);
    assert!(parse_process_stat("garbage").is_none());
}

#[test]
fn model_is_linear_in_utilisation_and_attributes_by_cpu_share() {
    let model = CpuModel {
        idle_watts: 10.0,
        max_watts: 30.0,
    };
    assert_eq!(model.watts(0.0), 10.0);
    assert_eq!(model.watts(0.5), 20.0);
    assert_eq!(model.watts(2.0), 30.0, "clamped");
    // Half busy (20 W) for 2 s, this process used a quarter of the busy time: 10 J.
    let machine = CpuTimes {
        busy: 4.0,
        idle: 4.0,
    };
    assert!((model.joules(Duration::from_secs(2), machine, 1.0) - 10.0).abs() < 1e-9);
    assert_eq!(
        model.joules(Duration::from_secs(2), CpuTimes::default(), 1.0),
        0.0
    );
    let defaults = CpuModel::for_cpus(2);
    assert!((defaults.idle_watts - 1.48).abs() < 1e-9);
    assert!((defaults.max_watts - 7.0).abs() < 1e-9);
}

#[test]
fn modelled_meter_reads_this_process() {
    let mut meter = EnergyMeter::detect(
        &PathBuf::from("/nonexistent-powercap"),
        CpuModel::for_this_machine(),
    );
    // Burn a little CPU so the process has CPU time to attribute.
    let mut x = 0u64;
    for i in 0..2_000_000u64 {
        x = x.wrapping_mul(31).wrapping_add(i);
    }
    assert_ne!(x, 1);
    let reading = meter.sample(Duration::from_millis(10)).unwrap();
    assert_eq!(reading.source, EnergySource::Modelled);
    assert!(
        reading.joules >= 0.0 && reading.cpu_seconds >= 0.0,
        "{reading:?}"
    );
}
